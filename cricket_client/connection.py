"""One client session with cricket-server: HELLO, pipelined calls, GOODBYE.

`Connection(address)` opens an ONC RPC connection (`"host:port"` or `"unix:/path"`, default from
REMOTE_GPU_ADDRESS), says HELLO and keeps what the server answered (session id and token,
versions, the device address range). The `driver` module calls through `sync()` and `post()`:

- `post(proc, *args)`: a procedure marked `@pipelined` in rpc_spec/cricket.x goes out without
  waiting; its reply is kept (D6).
- `call(proc, *args) -> (err, *fields)`: a synchronizing call of a procedure whose result has
  a plan (a status or an err union of fixed-size value, rpc_spec/cricket.x): arguments packed
  and the reply unpacked with one struct each, the fields None on failure; otherwise as `sync`.
- `sync(proc, *args) -> (err, reply)`: a synchronizing call. After its reply, the replies of
  earlier pipelined calls (already arrived, the server answers a connection's calls in order)
  are collected; the first failure among them is returned in place of this call's CUresult
  when this call itself succeeded, as CUDA reports asynchronous errors.

A call that finds the connection lost resumes the session on a server holding it, within
`reconnect_deadline` seconds (`cricket_client.reconnect`; CRICKET_RECONNECT_DEADLINE, 0: off).

The process-wide default connection is what `cricket_client.driver` uses; `active()` makes
another connection the one used by the current thread inside a `with` block.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import socket
import ssl
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import (
    AuthError,
    ConnectionLost,
    ConnectTimeout,
    GarbageArgs,
    ProcUnavail,
    ProgMismatch,
    ProgUnavail,
    RpcMismatch,
    RpcTimeout,
)
from cricket_xdr.stubs import Pending
from cricket_xdr.xdr import Encoder, XdrEncodeError, xdr_int

from .datapath import DataPaths
from .errors import HelloRefused, NotConnectedError, error_name
from .facts import pipelined
from .launch_batch import LaunchBatcher
from .reconnect import CallsLost, enable_reconnect, resume_after_loss
from .replay import ReplayLog, calls_of, renew_log
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
F = TypeVar("F", bound=Callable[..., Any])
_MAX_PENDING = 4096
_GOODBYE_TIMEOUT = 10.0  # seconds; closing never hangs on a server that stopped answering

_MEM_OK = struct.Struct(">iI")  # mem_result: err = 0, then the data's length
# procedure name -> (program, version, number, argument codecs, result decoder), for post()
_HOW_TO_SEND: dict[str, tuple[int, int, int, tuple[Any, ...], Callable[[Any], Any]]] = {}
# procedure name -> (program, version, number, encode_args, decode_reply), for call()
_HOW_TO_CALL: dict[str, tuple[int, int, int, Callable[..., Any], Callable[[Any], Any]]] = {}



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


def _err_of(reply: Any) -> int:
    return reply if isinstance(reply, int) else int(reply.err)


# A call that failed with one of these never reached CricketService._run, which counts calls:
# its arguments did not encode, or the server refused it before dispatching it.
_NOT_RUN = (
    XdrEncodeError,
    TypeError,
    ValueError,
    OverflowError,
    GarbageArgs,
    ProcUnavail,
    ProgUnavail,
    ProgMismatch,
    RpcMismatch,
    AuthError,
)


def _resuming(method: F) -> F:
    """Run a call method; when the connection is lost and reconnecting is on, resume the
    session on a server holding it (cricket_client.reconnect) and run it once more."""

    one_call = method.__name__ in ("call", "sync", "post", "post_encoded")

    @functools.wraps(method)
    def wrapper(self: Connection, *args: Any, **kwargs: Any) -> Any:
        self._launches.flush()  # gathered launches go first: the server keeps the order
        book = self.replay_log
        transport = self._rpc
        if one_call and not book.logging:
            # Fast path (one call, nothing logged): only its sequence number to keep.
            mark = book.count(args[0])
            try:
                return method(self, *args, **kwargs)
            except ConnectionLost as lost:
                book.rollback(mark)
                if not resume_after_loss(self, lost, transport):
                    raise
                return wrapper(self, *args, **kwargs)
            except _NOT_RUN:
                book.rollback(mark)  # the server did not count it either
                raise
        mark = book.begin(calls_of(method.__name__, self, args))
        try:
            result = method(self, *args, **kwargs)
        except ConnectionLost as lost:
            book.rollback(mark)
            if not resume_after_loss(self, lost, transport):
                raise
            return wrapper(self, *args, **kwargs)
        except _NOT_RUN:
            if one_call:
                book.rollback(mark)
            raise
        book.settle(mark, result)
        if book.full():
            renew_log(self)
        return result

    return wrapper  # type: ignore[return-value]


_INT = struct.Struct(">i")


def _decode_int(body: Any) -> int:
    """An XDR int result (a CUresult): the common reply of pipelined calls, decoded at once."""
    if len(body) == 4:
        return int(_INT.unpack(body)[0])
    return int(xdr_int.decode(body))  # names what is wrong with the body


def _no_args() -> bytes:
    return b""


def _encode_args(codecs: tuple[Any, ...], *args: Any) -> list[Any]:
    enc = Encoder()
    for codec, arg in zip(codecs, args, strict=True):
        codec.pack(enc, arg)
    return enc.buffers()


def _answered(pending: Any) -> bool:
    """A pipelined call whose reply arrived (not one that failed with the connection)."""
    if not pending.done():
        return False
    try:
        pending.result()
    except Exception:
        return False
    return True


class Connection:
    """A session on cricket-server; see the module docstring.

    `connect_timeout`: seconds for TCP connect, STARTTLS, token proof and HELLO together
    (default CRICKET_CONNECT_TIMEOUT, else 10), ConnectTimeout past it. `timeout`: seconds a
    call may wait for its reply (default CRICKET_CALL_TIMEOUT, else no limit), RpcTimeout
    past it. See cricket_client.security for what is detected without one.
    """

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
        self._stub = proto.CRICKET_V1_Client(self._rpc)
        self._lock = threading.Lock()
        self._pending: deque[tuple[str, Any]] = deque()
        self._deferred_error = 0
        self._deferred_exception: BaseException | None = None
        self._lost_procs: list[str] = []  # pipelined calls that failed with the connection
        self._local_message: str | None = None
        self._param_info: dict[int, tuple[tuple[int, int], ...]] = {}
        self.datapaths: DataPaths | None = None  # copy routing (cricket_client.datapath)
        self._launches = LaunchBatcher(self._send_launch_batch)
        self.closed = False
        if reconnect_deadline is not None:  # else CRICKET_RECONNECT_DEADLINE or the default
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

    @_resuming
    def call(self, proc: str, *args: Any) -> tuple[Any, ...]:
        """A synchronizing call through the procedure's plan: (CUresult, *fields), the fields
        None on failure; pending asynchronous errors folded in as `sync` does."""
        how = _HOW_TO_CALL.get(proc) or self._how_to_call(proc)
        self._local_message = None
        reply = how[4](self._rpc.call(how[0], how[1], how[2], how[3](*args)))
        if self._pending or self._deferred_error or self._deferred_exception is not None:
            deferred = self._collect(block=False)
            if reply[0] == 0 and deferred:
                return (deferred,) + (None,) * (len(reply) - 1)
        return reply  # type: ignore[no-any-return]

    def _how_to_call(
        self, proc: str
    ) -> tuple[int, int, int, Callable[..., Any], Callable[[Any], Any]]:
        server = self.proto.CRICKET_V1_Server
        procedure = server.PROCEDURES[int(getattr(self.proto, proc))]
        plan = procedure.plan
        if plan.decode_reply is None:
            raise ValueError(f"{proc} has no reply plan (its result is not fixed-size): use sync")
        encode = plan.encode_args
        if encode is None:
            codecs = procedure.arg_codecs
            encode = _no_args if not codecs else functools.partial(_encode_args, codecs)
        how = _HOW_TO_CALL[proc] = (
            server.PROGRAM,
            server.VERSION,
            procedure.number,
            encode,
            plan.decode_reply,
        )
        return how

    @_resuming
    def sync(self, proc: str, *args: Any) -> tuple[int, Any]:
        """A synchronizing call: (CUresult, reply), with pending asynchronous errors folded in."""
        self._local_message = None
        reply = getattr(self._stub, proc)(*args)
        err = _err_of(reply)
        deferred = self._collect(block=False)
        if err == 0 and deferred:
            err = deferred
        return err, reply

    @_resuming
    def sync_many(self, proc: str, calls: list[tuple[Any, ...]]) -> tuple[int, list[Any]]:
        """The same synchronizing procedure with several argument tuples, pipelined; the first
        failure (or a pending asynchronous one) is the CUresult."""
        self._local_message = None
        method = getattr(self._stub, proc + "_async")
        pendings = [method(*args) for args in calls]
        replies = [p.result() for p in pendings]
        err = next((e for e in map(_err_of, replies) if e), 0)
        deferred = self._collect(block=False)
        if err == 0 and deferred:
            err = deferred
        return err, replies

    @_resuming
    def sync_into(self, proc: str, calls: list[tuple[tuple[Any, ...], memoryview]]) -> int:
        """A synchronizing procedure that returns `mem_result`, once per `(args, view)`, all
        pipelined; each result's data is received straight into its view (no copy). Returns
        the first failure (or a pending asynchronous one) as the CUresult."""
        self._local_message = None
        server = self.proto.CRICKET_V1_Server
        number = int(getattr(self.proto, proc))
        codecs = server.PROCEDURES[number].arg_codecs
        call_async = self._rpc.call_async
        prog, vers = server.PROGRAM, server.VERSION
        pendings = []
        for args, view in calls:
            enc = Encoder()
            for codec, arg in zip(codecs, args, strict=True):
                codec.pack(enc, arg)
            into = (_MEM_OK.pack(0, len(view)), view)
            pendings.append((call_async(prog, vers, number, enc.buffers(), into=into), view))
        err = 0
        for pending, view in pendings:
            body = pending.result()
            if pending.placed:
                continue
            reply = self.proto.xdr_mem_result.decode(body)
            if reply.err:
                err = err or int(reply.err)
                continue
            data = reply.value
            view[: len(data)] = data
        deferred = self._collect(block=False)
        if err == 0 and deferred:
            err = deferred
        return err

    @_resuming
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
        self.replay_log.begin([(proc, tuple(args)) for args in calls])
        method = getattr(self._stub, proc + "_async")
        pendings: deque[tuple[int, Pending]] = deque()
        err = 0

        def settle() -> None:
            nonlocal err
            i, pending = pendings.popleft()
            code = _err_of(pending.result())
            err = err or code
            if not err and after is not None:
                after(i)

        for i, args in enumerate(calls):
            if len(pendings) >= window:
                settle()
            if err:
                break
            if before is not None:
                before(i)
            pendings.append((i, method(*args)))
        while pendings:
            settle()
        deferred = self._collect(block=False)
        return err or deferred

    @_resuming
    def post(self, proc: str, *args: Any) -> None:
        """Send a pipelined call without waiting for its reply."""
        if proc not in pipelined():
            raise ValueError(f"{proc} is not marked pipelined (@pipelined) in cricket.x")
        self._local_message = None
        self._keep(proc, self._send_deferrable(proc, args))

    @_resuming
    def post_encoded(self, proc: str, body: bytes) -> None:
        """`post` with the arguments already XDR-encoded in `body` (the launch hot path; the
        replay log, when it logs, keeps them decoded)."""
        if proc not in pipelined():
            raise ValueError(f"{proc} is not marked pipelined (@pipelined) in cricket.x")
        self._local_message = None
        prog, vers, number, _codecs, decode = self._how_to_send(proc)
        self._keep(proc, Pending(self._rpc.call_async(prog, vers, number, body, defer=True), decode))

    def post_launch(self, body: bytes) -> None:
        """A cuLaunchKernel, its launch_args XDR-encoded in `body`: sent at once when nothing
        is outstanding, else gathered with the launches after it into one
        CU_LAUNCH_KERNEL_BATCH call (cricket_client.launch_batch). Counted as one call for
        replay, as the server counts it; only while the replay log does not log."""
        self._local_message = None
        self.replay_log.count("CU_LAUNCH_KERNEL")
        pending = self._pending
        self._launches.add(body, at_once=not pending or pending[-1][1].done())

    def _send_launch_batch(self, count: int, body: bytes) -> None:
        prog, vers, number, _codecs, decode = self._how_to_send("CU_LAUNCH_KERNEL_BATCH")
        try:
            call = self._rpc.call_async(prog, vers, number, body)
        except ConnectionLost as lost:  # reported by the next synchronizing call
            with self._lock:
                self._lost_procs.append(f"CU_LAUNCH_KERNEL_BATCH ({count} launches)")
                if self._deferred_exception is None:
                    self._deferred_exception = lost
            return
        self._keep("CU_LAUNCH_KERNEL_BATCH", Pending(call, decode))

    def _keep(self, proc: str, pending: Pending) -> None:
        """Remember a pipelined call's reply to collect; collect some when too many wait."""
        with self._lock:
            self._pending.append((proc, pending))
            too_many = len(self._pending) > _MAX_PENDING
        if too_many:
            self._collect(block=True, keep=_MAX_PENDING // 2, take=False)

    def _send_deferrable(self, proc: str, args: tuple[Any, ...]) -> Pending:
        """Send a pipelined call; small ones may wait in the RPC client to share one write
        with the calls after them (sent at the latest with the next synchronizing call)."""
        prog, vers, number, codecs, decode = self._how_to_send(proc)
        if len(args) == 1 and len(codecs) == 1:  # the common case: one argument
            enc = Encoder()
            codecs[0].pack(enc, args[0])
            return Pending(
                self._rpc.call_async(prog, vers, number, enc.buffers(), defer=True), decode
            )
        enc = Encoder()
        for codec, arg in zip(codecs, args, strict=True):
            codec.pack(enc, arg)
        return Pending(self._rpc.call_async(prog, vers, number, enc.buffers(), defer=True), decode)

    def _how_to_send(self, proc: str) -> tuple[int, int, int, tuple[Any, ...], Callable[[Any], Any]]:
        how = _HOW_TO_SEND.get(proc)
        if how is None:
            server = self.proto.CRICKET_V1_Server
            procedure = server.PROCEDURES[int(getattr(self.proto, proc))]
            how = _HOW_TO_SEND[proc] = (
                server.PROGRAM,
                server.VERSION,
                procedure.number,
                procedure.arg_codecs,
                _decode_int if procedure.result_codec is xdr_int else procedure.result_codec.decode,
            )
        return how

    def _collect(self, *, block: bool, keep: int = 0, take: bool = True) -> int:
        """Take finished pipelined replies (all but `keep` of them when blocking). With `take`,
        return the first unreported failure and forget it (else keep it for later and return
        0). An RPC failure among them is raised."""
        if (
            not block
            and take
            and not self._pending
            and not self._deferred_error
            and self._deferred_exception is None
        ):
            return 0  # nothing to take: the common case after a synchronous call
        with self._lock:
            while len(self._pending) > keep:
                _proc, pending = self._pending[0]
                if not block and not pending.done():
                    break
                self._pending.popleft()
                try:
                    err = _err_of(pending.result())
                except Exception as exc:  # an RPC-level failure of a pipelined call
                    if isinstance(exc, ConnectionLost):
                        self._lost_procs.append(_proc)
                    if self._deferred_exception is None:
                        self._deferred_exception = exc
                    continue
                if err and not self._deferred_error:
                    self._deferred_error = err
            if not take:
                return 0
            failure = self._deferred_exception
            if failure is not None:
                self._deferred_exception = None
                raise failure
            err, self._deferred_error = self._deferred_error, 0
            return err

    def drain(self) -> int:
        """Send gathered launches, wait for every pipelined reply; return the first unreported
        failure (0 if none)."""
        self._launches.flush()
        return self._collect(block=True)

    @property
    def pending_count(self) -> int:
        return len(self._pending)

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

    @_resuming
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

    @_resuming
    def last_error_message(self) -> str:
        """Why the last failed call failed: a local reason, else the server's message."""
        if self._local_message is not None:
            return self._local_message
        return str(self._stub.GET_ERROR_MESSAGE())

    # -- reconnecting to a restored session (cricket_client.reconnect) ---------------------

    def adopt_transport(self, address: str, rpc: RpcClient) -> None:
        """Continue the session over `rpc` (a resumed HELLO was answered on it). Pipelined
        calls still unanswered on the old connection are lost: the next synchronizing call
        raises CallsLost."""
        old, self._rpc = self._rpc, rpc
        self._stub = self.proto.CRICKET_V1_Client(rpc)
        self.address = address
        with self._lock:
            lost, self._lost_procs = self._lost_procs, []
            for proc, pending in self._pending:
                if not _answered(pending):
                    lost.append(proc)
                elif (err := _err_of(pending.result())) and not self._deferred_error:
                    self._deferred_error = err
            self._pending.clear()
            earlier = self._deferred_exception
            if lost and (earlier is None or isinstance(earlier, ConnectionLost)):
                self._deferred_exception = CallsLost(
                    f"{len(lost)} pipelined call(s) were lost with the server and are not in "
                    f"the restored session: {', '.join(lost[:8])}"
                )
        old.close()

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Say GOODBYE (the server frees the session's resources) and close the connection."""
        global _default
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            self._launches.close()  # gathered launches run before GOODBYE, as at process exit
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
        try:
            yield self
        finally:
            _thread.connection = previous

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
    return conn


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
        return _default


@atexit.register
def _close_default() -> None:
    if _default is not None:
        with contextlib.suppress(Exception):
            _default.close()
