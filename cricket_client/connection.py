"""One client session with cricket-server: HELLO, calls, GOODBYE.

`Connection(address)` opens an ONC RPC connection (`"host:port"` or `"unix:/path"`, default from
REMOTE_GPU_ADDRESS), says HELLO and keeps what the server answered (session id and token,
versions, the device address range). The `driver` module calls through it:

- `call(proc, *args) -> (err, *fields)`: a synchronizing call of a procedure whose result has
  a plan (a status or an err union of fixed-size value, rpc_spec/cricket.x): arguments packed
  and the reply unpacked with one struct each, the fields None on failure.
- `sync(proc, *args) -> (err, reply)`: a synchronizing call of any procedure.
- `post(proc, *args)`: a procedure marked `@pipelined` goes out without waiting
  (`cricket_client.pipeline`); after a synchronizing call's reply, the replies of earlier
  pipelined calls are collected, and the first failure among them is returned in place of
  that call's CUresult when it succeeded, as CUDA reports asynchronous errors.
- `sync_many`, `sync_into`, `sync_window`: bulk call styles (`cricket_client.bulk_calls`).

Every call method runs in the replay and reconnect wrapper (`cricket_client.resuming`): a call
that finds the connection lost resumes the session on a server holding it, within
`reconnect_deadline` seconds (`cricket_client.reconnect`; CRICKET_RECONNECT_DEADLINE, 0: off).
`call` does what the wrapper does inline while nothing is logged, gathered or pending: the
synchronous path of a small call.

The process-wide default connection is what `cricket_client.driver` uses; `active()` makes
another connection the one used by the current thread inside a `with` block.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import AuthError, ConnectionLost, ConnectTimeout, RpcTimeout
from cricket_xdr.stubs import Pending

from . import bulk_calls, call_stats, known_answers
from .datapath import DataPaths
from .errors import HelloRefused, NotConnectedError, error_name
from .known_answers import POINTER, KnownAnswers, answer, rule
from .launch_batch import KERNELS as KERNEL_BATCH
from .launch_templates import LaunchTemplates
from .mapped_host import SYNCHRONIZING, MappedHost, synchronize
from .pipeline import Pipeline, err_of
from .reconnect import enable_reconnect, resume_after_loss
from .replay import RECENT, ReplayLog
from .resuming import NOT_RUN, resuming
from .security import (
    Security,
    call_timeout_from_env,
    connect_timeout_from_env,
    explain_auth_error,
    open_rpc,
)

__all__ = [
    "Connection",
    "ServerInfo",
    "parse_address",
    "connect",
    "get_connection",
    "ADDRESS_ENV",
]

ADDRESS_ENV = "REMOTE_GPU_ADDRESS"
_GOODBYE_TIMEOUT = 10.0  # seconds; closing never hangs on a server that stopped answering

# procedure name -> (program, version, number, encode_args or None (no arguments),
# decode_reply, counted for replay, known-answer rule or None), for call()
_How = tuple[
    int, int, int, Callable[..., Any] | None, Callable[[Any], Any], bool,
    tuple[int, tuple[int, ...]] | None,
]  # fmt: skip
_HOW_TO_CALL: dict[str, _How] = {}
_RECENT_MASK = RECENT - 1


def parse_address(address: str) -> tuple[str, int] | str:
    """`"host:port"`, `"[v6addr]:port"` or `"unix:/path"` as RpcClient takes it."""
    if address.startswith("unix:"):
        return address
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"server address {address!r}: expected 'host:port' or 'unix:/path'")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class ServerInfo:
    """What the server said in HELLO."""

    protocol_version: int
    server_version: str
    backend: str
    driver_version: int
    runtime_version: int
    session_id: int
    session_token: bytes
    va_base: int
    va_size: int


def _no_args(proc: str, args: tuple[Any, ...]) -> bytes:
    if args:
        raise TypeError(f"{proc} takes no arguments ({len(args)} given)")
    return b""


class Connection:
    """A session on cricket-server; see the module docstring.

    `connect_timeout`: seconds for TCP connect, STARTTLS, token proof and HELLO together
    (default CRICKET_CONNECT_TIMEOUT, else 10), ConnectTimeout past it. `timeout`: seconds a
    call may wait for its reply (default CRICKET_CALL_TIMEOUT, else no limit), RpcTimeout
    past it. See cricket_client.security for what is detected without one.
    """

    stats: call_stats.CallStats | None = None  # CRICKET_CALL_STATS (set by __init__)
    mapped: MappedHost | None = None  # mapped host memory (cricket_client.mapped_host)

    def __init__(
        self,
        address: str | None = None,
        *,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        client_name: str | None = None,
        tls: ssl.SSLContext | bool | None = None,
        token: bytes | str | None = None,
        reconnect_deadline: float | None = None,
    ) -> None:
        from rpc_spec import cricket_rpc as proto

        address = address or os.environ.get(ADDRESS_ENV)
        if not address:
            raise NotConnectedError(
                f"no cricket-server address: pass one to cricket_client.connect() "
                f"or set {ADDRESS_ENV}=host:port"
            )
        self.address = address
        self.proto = proto
        if timeout is None:
            timeout = call_timeout_from_env()
        if connect_timeout is None:
            connect_timeout = connect_timeout_from_env()
        self.timeout = timeout
        self.security = Security.resolve(tls=tls, token=token)  # see cricket_client.security
        # counted calls and, once a checkpoint was taken, their log (cricket_client.replay)
        self.replay_log = ReplayLog()
        self._rpc = open_rpc(
            parse_address(address),
            self.security,
            program=(proto.CRICKET_PROG, proto.CRICKET_V1),
            timeout=timeout,
            connect_timeout=connect_timeout,
        )
        self.stats = call_stats.from_env(proto)  # CRICKET_CALL_STATS (cricket_client.call_stats)
        if self.stats is not None:
            self._rpc.counts = self.stats.rpc
        self._stub = proto.CRICKET_V1_Client(self._rpc)
        self.pipeline = Pipeline(self._rpc, proto)  # pipelined calls (cricket_client.pipeline)
        self._local_message: str | None = None
        self._param_info: dict[int, tuple[tuple[int, int], ...]] = {}
        self.launch_templates = LaunchTemplates()  # cricket_client.launch_templates
        self.known = KnownAnswers()  # answers that do not travel (cricket_client.known_answers)
        self.datapaths: DataPaths | None = None  # copy routing (cricket_client.datapath)
        self.closed = False
        # Reconnecting (cricket_client.reconnect): seconds to keep trying after a loss (None:
        # CRICKET_RECONNECT_DEADLINE at that time, else the default; 0: off), and where to
        # (None: REMOTE_GPU_ADDRESS, else the address used before).
        self.reconnect_deadline: float | None = None
        self.redirect_address: str | None = None
        if reconnect_deadline is not None:
            enable_reconnect(self, reconnect_deadline)
        name = client_name or f"{os.path.basename(sys.argv[0]) or 'python'}@{socket.gethostname()}"
        self.client_name = name[:1024]
        deadline = self._rpc.setup_deadline
        try:
            try:
                reply = self._stub.HELLO(
                    proto.hello_args(
                        protocol_version=proto.CRICKET_PROTOCOL_VERSION,
                        session_token=b"",
                        client_name=name[:1024],
                    ),
                    timeout=None if deadline is None else max(deadline - time.monotonic(), 0.001),
                )
            except RpcTimeout:
                raise ConnectTimeout(address, "HELLO", connect_timeout) from None
            if reply.err != 0:
                raise HelloRefused(f"{address}: HELLO refused with {error_name(reply.err)}")
        except AuthError as exc:  # the server requires a token or TLS
            self._rpc.close()
            raise explain_auth_error(exc, self.security) from None
        except BaseException:
            self._rpc.close()
            raise
        ok = reply.value
        replies_may_wait(self._rpc, ok.protocol_version, proto)
        self.info = ServerInfo(
            protocol_version=ok.protocol_version,
            server_version=ok.server_version,
            backend=ok.backend,
            driver_version=ok.driver_version,
            runtime_version=ok.runtime_version,
            session_id=ok.session_id,
            session_token=bytes(ok.session_token),
            va_base=ok.va_base,
            va_size=ok.va_size,
        )

    # -- calls -----------------------------------------------------------------------------

    def call(self, proc: str, *args: Any) -> tuple[Any, ...]:
        """A synchronizing call through the procedure's plan: (CUresult, *fields), the fields
        None on failure; pending asynchronous errors folded in as `sync` does.

        The synchronous path: while nothing is logged for replay, no launch is gathered and
        no pipelined reply is pending, the call is numbered, sent and answered here without
        the wrapper (`cricket_client.resuming`), which it follows on a lost connection."""
        if self.mapped is not None and proc in SYNCHRONIZING:  # mapped host memory comes back
            return synchronize(self, proc, args)
        return self._call_unmapped(proc, *args)

    def _call_unmapped(self, proc: str, *args: Any) -> tuple[Any, ...]:
        """`call` without the mapped host memory's reads (cricket_client.mapped_host)."""
        how = _HOW_TO_CALL.get(proc) or self._how_to_call(proc)
        if how[6] is not None:  # an answer that may be known, or a call that changes them
            return answer(self, proc, how[6], args, self._call_plain)  # type: ignore[no-any-return]
        return self._call_plain(proc, *args)

    def _call_plain(self, proc: str, *args: Any) -> tuple[Any, ...]:
        """`call` without the known answers."""
        how = _HOW_TO_CALL[proc]
        pipe = self.pipeline
        book = self.replay_log
        if (
            book.enabled
            or pipe.pending
            or pipe.launches.queued
            or pipe.deferred_error
            or pipe.deferred_exception is not None
        ):
            return self._call_resuming(proc, *args)
        seq = book.seq
        if how[5]:  # counted for replay, as the server counts it
            book.seq = seq + 1
            book.recent[(seq + 1) & _RECENT_MASK] = proc
        self._local_message = None
        rpc = self._rpc
        try:
            if how[3] is None:
                if args:
                    raise TypeError(f"{proc} takes no arguments ({len(args)} given)")
                return how[4](rpc.call(how[0], how[1], how[2]))  # type: ignore[no-any-return]
            return how[4](rpc.call(how[0], how[1], how[2], how[3](*args)))  # type: ignore[no-any-return]
        except ConnectionLost as lost:
            book.seq = seq
            if not resume_after_loss(self, lost, rpc):
                raise
            return self.call(proc, *args)
        except NOT_RUN:
            book.seq = seq  # the server did not count it either
            raise

    @resuming
    def _call_resuming(self, proc: str, *args: Any) -> tuple[Any, ...]:
        """`call` in the wrapper: launches to flush, calls to log, or replies to collect."""
        how = _HOW_TO_CALL.get(proc) or self._how_to_call(proc)
        self._local_message = None
        body = how[3](*args) if how[3] is not None else _no_args(proc, args)
        reply = how[4](self._rpc.call(how[0], how[1], how[2], body))
        pipe = self.pipeline
        if pipe.pending or pipe.deferred_error or pipe.deferred_exception is not None:
            deferred = pipe.collect(block=False)
            if reply[0] == 0 and deferred:
                return (deferred,) + (None,) * (len(reply) - 1)
        return reply  # type: ignore[no-any-return]

    def _how_to_call(self, proc: str) -> _How:
        server = self.proto.CRICKET_V1_Server
        procedure = server.PROCEDURES[int(getattr(self.proto, proc))]
        plan = procedure.plan
        if plan.decode_reply is None:
            raise ValueError(f"{proc} has no reply plan (its result is not fixed-size): use sync")
        encode = procedure.args_encoder() if procedure.arg_codecs else None
        how = _HOW_TO_CALL[proc] = (
            server.PROGRAM,
            server.VERSION,
            procedure.number,
            encode,
            plan.decode_reply,
            proc not in self.replay_log.uncounted,
            rule(proc),
        )
        return how

    def sync(self, proc: str, *args: Any) -> tuple[int, Any]:
        """A synchronizing call: (CUresult, reply), with pending asynchronous errors folded in."""
        found = rule(proc)
        if found is not None:  # an answer that may be known, or a call that changes them
            return answer(self, proc, found, args, self._sync)  # type: ignore[no-any-return]
        return self._sync(proc, *args)

    @resuming
    def _sync(self, proc: str, *args: Any) -> tuple[int, Any]:
        """`sync` without the known answers."""
        self._local_message = None
        reply = getattr(self._stub, proc)(*args)
        return self.pipeline.fold(err_of(reply)), reply

    @resuming
    def sync_many(self, proc: str, calls: list[tuple[Any, ...]]) -> tuple[int, list[Any]]:
        """The same synchronizing procedure with several argument tuples, pipelined; the first
        failure (or a pending asynchronous one) is the CUresult."""
        self._local_message = None
        return bulk_calls.many(self, proc, calls)

    @resuming
    def sync_into(self, proc: str, calls: list[tuple[tuple[Any, ...], memoryview]]) -> int:
        """A synchronizing procedure that returns `mem_result`, once per `(args, view)`, all
        pipelined; each result's data is received straight into its view (no copy). Returns
        the first failure (or a pending asynchronous one) as the CUresult."""
        self._local_message = None
        return bulk_calls.into_views(self, proc, calls)

    @resuming
    def sync_window(
        self,
        proc: str,
        calls: list[tuple[Any, ...]],
        *,
        window: int,
        before: Callable[[int], None] | None = None,
        after: Callable[[int], None] | None = None,
    ) -> int:
        """The same synchronizing procedure with several argument tuples, at most `window` in
        flight: `before(i)` runs just before call i is sent, `after(i)` once its reply says
        success (e.g. to fill and drain the slots of a shared-memory ring). Returns the first
        failure (or a pending asynchronous one) as the CUresult; no `after` runs past it."""
        self._local_message = None
        return bulk_calls.windowed(self, proc, calls, window, before, after)

    @resuming
    def post(self, proc: str, *args: Any) -> None:
        """Send a pipelined call without waiting for its reply."""
        self._local_message = None
        found = rule(proc)
        if found is not None and found[0] < 0:  # e.g. cuMemFreeAsync: pointer answers go
            self.known.forget(*found[1])
            if POINTER in found[1]:
                self.known.memory_ends(proc, args)
        self.pipeline.post(proc, args)

    @resuming
    def post_now(self, proc: str, *args: Any) -> Pending:
        """`post`, the call sent in a write of its own before this returns (not deferred);
        returns its reply to come (the pipeline collects it as any other)."""
        self._local_message = None
        return self.pipeline.post_now(proc, args)

    @resuming
    def post_now_encoded(self, proc: str, pieces: list[Any]) -> Pending:
        """`post_now` with the arguments already XDR-encoded in `pieces` (sent as they are,
        no copy: an early copy's record, cricket_client.early_copies)."""
        self._local_message = None
        return self.pipeline.post_encoded_now(proc, pieces)

    @resuming
    def post_encoded(self, proc: str, body: bytes) -> None:
        """`post` with the arguments already XDR-encoded in `body` (the launch hot path; the
        replay log, when it logs, keeps them decoded)."""
        self._local_message = None
        self.pipeline.post_encoded(proc, body)

    def post_launch(
        self, body: bytes, call: str = "CU_LAUNCH_KERNEL", batch: str = KERNEL_BATCH
    ) -> None:
        """A launch, its arguments XDR-encoded in `body` (launch_args of a cuLaunchKernel, or
        with `call` CU_GRAPH_LAUNCH and `batch` GRAPH_LAUNCH_BATCH the graph_launch_args of a
        cuGraphLaunch): sent at once when nothing is outstanding, else gathered with the
        launches after it into one `batch` call (cricket_client.launch_batch). Counted as one
        `call` for replay, as the server counts it; only while the replay log does not log."""
        if self.mapped is not None:  # the program's writes to mapped host memory go first
            self.mapped.push(self)
        self._local_message = None
        self.replay_log.count(call)
        if self.stats is not None:
            self.stats.gathered[call] += 1
        pending = self.pipeline.pending  # nothing outstanding: the last reply arrived
        self.pipeline.launches.add(
            body, at_once=not pending or pending[-1][1].done(), proc=batch
        )

    def drain(self) -> int:
        """Send gathered launches, wait for every pipelined reply; return the first unreported
        failure (0 if none)."""
        return self.pipeline.drain()

    @property
    def pending_count(self) -> int:
        return len(self.pipeline.pending)

    # -- state the driver module keeps per session -----------------------------------------

    def is_device_address(self, addr: int) -> bool:
        """Whether `addr` lies in the server's device address range (unified addressing)."""
        return self.info.va_base <= addr < self.info.va_base + self.info.va_size

    def param_layout(self, func: int) -> tuple[int, tuple[tuple[int, int], ...]]:
        """(CUresult, ((offset, size), ...)) of a function, fetched once and cached."""
        layout = self._param_info.get(func)
        if layout is not None:
            return 0, layout
        return self._fetch_param_layout(func)

    @resuming
    def _fetch_param_layout(self, func: int) -> tuple[int, tuple[tuple[int, int], ...]]:
        layout = self._param_info.get(func)
        if layout is not None:  # fetched meanwhile (another thread, or before a resume)
            return 0, layout
        self._local_message = None
        reply = self._stub.CU_FUNC_GET_PARAM_INFO(func)
        if reply.err:
            return int(reply.err), ()
        layout = tuple((int(p.offset), int(p.size)) for p in reply.value)
        self._param_info[func] = layout
        return 0, layout

    def set_local_error(self, message: str) -> None:
        """Remember why a call failed without reaching the server."""
        self._local_message = message

    @resuming
    def last_error_message(self) -> str:
        """Why the last failed call failed: a local reason, else the server's message."""
        if self._local_message is not None:
            return self._local_message
        return str(self._stub.GET_ERROR_MESSAGE())

    # -- reconnecting to a restored session (cricket_client.reconnect) ---------------------

    def adopt_transport(self, address: str, rpc: RpcClient, version: int = 1) -> None:
        """Continue the session over `rpc` (a resumed HELLO was answered on it). Pipelined
        calls still unanswered on the old connection are lost: the next synchronizing call
        raises CallsLost."""
        old, self._rpc = self._rpc, rpc
        replies_may_wait(rpc, version, self.proto)
        if self.stats is not None:
            rpc.counts = self.stats.rpc
        self.known.forget_all()  # the restored session may run on another server
        self._stub = self.proto.CRICKET_V1_Client(rpc)
        self.address = address
        self.pipeline.adopt(rpc)
        old.close()

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Say GOODBYE (the server frees the session's resources) and close the connection."""
        global _default
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            self.pipeline.launches.close()  # gathered launches run before GOODBYE, as at process exit
        if self.datapaths is not None:
            self.datapaths.close()
        try:
            # The server answers a connection's calls in order: GOODBYE comes after every
            # pipelined call sent before it. Errors of those are dropped, as at process exit.
            with contextlib.suppress(Exception):
                self._stub.GOODBYE(timeout=_GOODBYE_TIMEOUT)
        finally:
            self._rpc.close()
            with _default_lock:
                if _default is self:
                    _default = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def active(self) -> Iterator[Connection]:
        """Within the block, this thread's driver calls go to this connection."""
        previous = _thread.connection
        _thread.connection = self
        known_answers.context_answers_changed()  # another connection
        try:
            yield self
        finally:
            _thread.connection = previous
            known_answers.context_answers_changed()  # another connection

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"session {self.info.session_id}"
        return f"<cricket_client.Connection {self.address} backend={self.info.backend} {state}>"


_default: Connection | None = None
_default_lock = threading.Lock()
class _ThreadState(threading.local):
    """The connection `active()` made this thread's (None: the default one)."""

    connection: Connection | None = None  # a class default: reading it never raises


_thread = _ThreadState()


def connect(address: str | None = None, *, make_default: bool = True, **kwargs: Any) -> Connection:
    """Open a session; it becomes the default connection of `cricket_client.driver` unless
    `make_default` is False."""
    global _default
    conn = Connection(address, **kwargs)
    if make_default:
        with _default_lock:
            _default = conn
        known_answers.context_answers_changed()  # another connection
    return conn


def replies_may_wait(rpc: RpcClient, version: int, proto: Any) -> None:
    """A server speaking protocol version 2 may hold the replies of pipelined calls until a
    later call's reply: `rpc` asks for them (a NULL call) before it waits for one alone."""
    if version >= 2:
        server = proto.CRICKET_V1_Server
        held = frozenset(n for n, p in server.PROCEDURES.items() if p.facts.pipelined)
        rpc.replies_may_wait(server.PROGRAM, server.VERSION, held)


def get_connection() -> Connection:
    """This thread's active connection, else the default one (connected on first use)."""
    global _default
    conn = _thread.connection
    if conn is not None:
        return conn
    conn = _default
    if conn is not None and not conn.closed:
        return conn  # the common case, without the lock
    with _default_lock:
        if _default is None or _default.closed:
            _default = Connection()
            known_answers.context_answers_changed()  # another connection
        return _default


@atexit.register
def _close_default() -> None:
    if _default is not None:
        with contextlib.suppress(Exception):
            _default.close()
