"""Pipelined calls of one connection (D6): sent without waiting, their replies collected later.

A procedure marked `@pipelined` in rpc_spec/cricket.x goes out at once (small ones may share
one write with the calls after them) and its reply is kept. The next synchronizing call
collects the replies that have arrived (the server answers a connection's calls in order);
the first failure among them is reported in place of that call's CUresult when the call
itself succeeded, as CUDA reports asynchronous errors (`Pipeline.fold`). Launches are
gathered into CU_LAUNCH_KERNEL_BATCH calls (`cricket_client.launch_batch`).

When the session moves to another connection (`adopt`), the calls still unanswered are lost:
the next synchronizing call raises CallsLost naming them.
"""

from __future__ import annotations

import struct
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import ConnectionLost
from cricket_xdr.stubs import Pending
from cricket_xdr.xdr import xdr_int

from . import known_answers
from .facts import pipelined
from .launch_batch import LaunchBatcher
from .reconnect import CallsLost

__all__ = ["Pipeline", "MAX_PENDING", "err_of"]

MAX_PENDING = 4096  # replies kept at most; past it the oldest half is collected
_INT = struct.Struct(">i")
# procedure -> (program, version, number, encode(*args) -> body, decode(reply body))
_HOW_TO_SEND: dict[str, tuple[int, int, int, Callable[..., Any], Callable[[Any], Any]]] = {}


def err_of(reply: Any) -> int:
    """The CUresult of a reply: a status, or a result union's `err`."""
    return reply if isinstance(reply, int) else int(reply.err)


def _decode_int(body: Any) -> int:
    """An XDR int result (a CUresult): the common reply of pipelined calls, decoded at once."""
    if len(body) == 4:
        return int(_INT.unpack(body)[0])
    return int(xdr_int.decode(body))  # names what is wrong with the body


def _answered(pending: Any) -> bool:
    """A pipelined call whose reply arrived (not one that failed with the connection)."""
    if not pending.done():
        return False
    try:
        pending.result()
    except Exception:
        return False
    return True


class Pipeline:
    """The pipelined calls of one connection, over its transport `rpc` (replaced by `adopt`).

    Its state is read without the lock on the synchronous path (`Connection.call`): a call
    finds nothing to collect when `pending` is empty and neither `deferred_error` nor
    `deferred_exception` is set, and no launch is gathered (`launches.queued`)."""

    def __init__(self, rpc: RpcClient, proto: Any) -> None:
        self.rpc = rpc
        self._proto = proto
        self._lock = threading.Lock()
        self.pending: deque[tuple[str, Pending]] = deque()
        self.deferred_error = 0  # the first failure not reported yet
        self.deferred_exception: BaseException | None = None  # an RPC failure, raised next
        self.lost_procs: list[str] = []  # pipelined calls that failed with the connection
        self.launches = LaunchBatcher(
            self._send_launch_batch, send_with_next=self._send_launch_batch_with_next
        )

    # -- sending ---------------------------------------------------------------------------

    def post(self, proc: str, args: tuple[Any, ...]) -> None:
        """Send a pipelined call without waiting for its reply."""
        if proc not in pipelined():
            raise ValueError(f"{proc} is not marked pipelined (@pipelined) in cricket.x")
        self._keep(proc, self._send_deferrable(proc, args))

    def post_encoded(self, proc: str, body: bytes) -> None:
        """`post` with the arguments already XDR-encoded in `body`."""
        if proc not in pipelined():
            raise ValueError(f"{proc} is not marked pipelined (@pipelined) in cricket.x")
        prog, vers, number, _encode, decode = self._how_to_send(proc)
        self._keep(proc, Pending(self.rpc.call_async(prog, vers, number, body, defer=True), decode))

    def _send_launch_batch_with_next(self, proc: str, count: int, body: bytes) -> None:
        """A batch the caller's next call takes along: held in the RPC client to leave in one
        write with that call (one wake-up of the server for both). A caller that then sends
        nothing must `rpc.flush()`."""
        self._send_launch_batch(proc, count, body, defer=True)

    def _send_launch_batch(
        self, proc: str, count: int, body: bytes, *, defer: bool = False
    ) -> None:
        prog, vers, number, _encode, decode = self._how_to_send(proc)
        try:
            # `defer`: held whatever its size, to leave in the next call's write
            call = self.rpc.call_async(prog, vers, number, body, hold=defer)
        except ConnectionLost as lost:  # reported by the next synchronizing call
            with self._lock:
                self.lost_procs.append(f"{proc} ({count} launches)")
                if self.deferred_exception is None:
                    self.deferred_exception = lost
                    known_answers.context_answers_changed()  # a failure waits to be reported
            return
        self._keep(proc, Pending(call, decode))

    def post_now(self, proc: str, args: tuple[Any, ...], *, answered_at_once: bool = False) -> Pending:
        """Send a pipelined call in a write of its own now (not deferred: its bytes are on
        their way when this returns), its reply kept like `post`'s; returns it.
        `answered_at_once`: a procedure not marked pipelined, whose reply the server sends as
        soon as it ran (not held for the calls after it: the caller may wait for it, e.g. to
        reuse a shared-memory slot the call read)."""
        if not answered_at_once and proc not in pipelined():
            raise ValueError(f"{proc} is not marked pipelined (@pipelined) in cricket.x")
        prog, vers, number, encode, decode = self._how_to_send(proc)
        pending = Pending(self.rpc.call_async(prog, vers, number, encode(*args)), decode)
        self._keep(proc, pending)
        return pending

    def post_encoded_now(self, proc: str, pieces: list[Any]) -> Pending:
        """`post_now` with the arguments already XDR-encoded in `pieces` (buffers sent as
        they are, no copy)."""
        prog, vers, number, _encode, decode = self._how_to_send(proc)
        pending = Pending(self.rpc.call_async(prog, vers, number, pieces), decode)
        self._keep(proc, pending)
        return pending

    def _keep(self, proc: str, pending: Pending) -> None:
        """Remember a pipelined call's reply to collect; collect some when too many wait."""
        with self._lock:
            self.pending.append((proc, pending))
            too_many = len(self.pending) > MAX_PENDING
        if too_many:
            self.collect(block=True, keep=MAX_PENDING // 2, take=False)

    def _send_deferrable(self, proc: str, args: tuple[Any, ...]) -> Pending:
        """Send a pipelined call; small ones may wait in the RPC client to share one write
        with the calls after them (sent at the latest with the next synchronizing call)."""
        prog, vers, number, encode, decode = self._how_to_send(proc)
        return Pending(self.rpc.call_async(prog, vers, number, encode(*args), defer=True), decode)

    def _how_to_send(self, proc: str) -> tuple[int, int, int, Callable[..., Any], Callable[[Any], Any]]:
        how = _HOW_TO_SEND.get(proc)
        if how is None:
            server = self._proto.CRICKET_V1_Server
            procedure = server.PROCEDURES[int(getattr(self._proto, proc))]
            how = _HOW_TO_SEND[proc] = (
                server.PROGRAM,
                server.VERSION,
                procedure.number,
                procedure.args_encoder(),
                _decode_int if procedure.result_codec is xdr_int else procedure.result_codec.decode,
            )
        return how

    # -- collecting ------------------------------------------------------------------------

    def fold(self, err: int) -> int:
        """A synchronizing call answered `err`: the first unreported failure of the pipelined
        calls before it in its place when it succeeded (an RPC failure among them raised)."""
        deferred = self.collect(block=False)
        return deferred if err == 0 and deferred else err

    def collect(self, *, block: bool, keep: int = 0, take: bool = True) -> int:
        """Take finished pipelined replies (all but `keep` of them when blocking). With `take`,
        return the first unreported failure and forget it (else keep it for later and return
        0). An RPC failure among them is raised."""
        if (
            not block
            and take
            and not self.pending
            and not self.deferred_error
            and self.deferred_exception is None
        ):
            return 0  # nothing to take: the common case after a synchronous call
        with self._lock:
            while len(self.pending) > keep:
                proc, pending = self.pending[0]
                if not block and not pending.done():
                    break
                self.pending.popleft()
                try:
                    err = err_of(pending.result())
                except Exception as exc:  # an RPC-level failure of a pipelined call
                    if isinstance(exc, ConnectionLost):
                        self.lost_procs.append(proc)
                    if self.deferred_exception is None:
                        self.deferred_exception = exc
                        known_answers.context_answers_changed()  # a failure waits to be reported
                    continue
                if err and not self.deferred_error:
                    self.deferred_error = err
                    known_answers.context_answers_changed()  # a failure waits to be reported
            if not take:
                return 0
            failure = self.deferred_exception
            if failure is not None:
                self.deferred_exception = None
                raise failure
            err, self.deferred_error = self.deferred_error, 0
            return err

    def drain(self) -> int:
        """Send gathered launches, wait for every pipelined reply; return the first unreported
        failure (0 if none)."""
        self.launches.flush()
        return self.collect(block=True)

    # -- moving to another connection ------------------------------------------------------

    def adopt(self, rpc: RpcClient) -> None:
        """Go on over `rpc`: replies that arrived are collected; calls still unanswered on the
        old transport are lost, and the next synchronizing call raises CallsLost for them."""
        self.rpc = rpc
        with self._lock:
            lost, self.lost_procs = self.lost_procs, []
            for proc, pending in self.pending:
                if not _answered(pending):
                    lost.append(proc)
                elif (err := err_of(pending.result())) and not self.deferred_error:
                    self.deferred_error = err
                    known_answers.context_answers_changed()  # a failure waits to be reported
            self.pending.clear()
            earlier = self.deferred_exception
            if lost and (earlier is None or isinstance(earlier, ConnectionLost)):
                self.deferred_exception = CallsLost(
                    f"{len(lost)} pipelined call(s) were lost with the server and are not in "
                    f"the restored session: {', '.join(lost[:8])}"
                )
                known_answers.context_answers_changed()  # a failure waits to be reported

    def forget_calls_lost(self) -> None:
        """A replay sent the lost calls again (or raised CallsLost naming them all)."""
        if isinstance(self.deferred_exception, CallsLost):
            self.deferred_exception = None

