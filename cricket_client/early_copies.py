"""Synchronous host-to-device copies that return early, as CUDA lets them.

CUDA returns from a cuMemcpyHtoD of pageable memory once the source is staged; the copy to
the device may still be under way. Here a cuMemcpyHtoD returns once its bytes are staged
where the server takes them from, without waiting for the server:

- through shared memory (the path `datapath.select.choose` picks for its size, the server
  on this host), up to one ring slot (`SHM_PIECE`): the bytes are copied into a free slot
  and DATA_SHM_HTOD goes on the legacy stream (`DataPaths.htod_early`);
- else inline, up to `INLINE_EARLY_MAX` (one record): the record is written to the socket
  before the call returns (the caller's buffer is free again), as CU_MEMCPY_HTOD_ASYNC on
  the legacy stream (stream 0).

The server runs either exactly as the synchronous copy (the same session call and backend
copy, ordered after the context's earlier work; cricket_server.session_memcalls,
cricket_server.datapath.procedures), and its reply is collected with the next synchronizing
call like any pipelined call's (D6).

Only a copy the client can prove would succeed returns early; any other stays synchronous,
so INVALID_VALUE and the like are answered by the call itself, exactly as locally:

- at most `EARLY_MAX` bytes (one shared-memory slot; inline at most `INLINE_EARLY_MAX`),
  and more than none;
- the destination range lies wholly inside an allocation this client made (cuMemAlloc,
  cudaMalloc) and still holds, made while the current context was the one current now (no
  context was created, destroyed, set, pushed or popped since: the allocation is in it);
- no sticky error (ILLEGAL_ADDRESS, LAUNCH_FAILED, ...) was reported on the connection, no
  failure of earlier pipelined calls waits to be reported (the copy reports it, as a
  synchronous call does), no stream capture of this client is under way, and the connection
  shows no sign of loss (nothing in flight and nothing to read: a server that went away is
  noticed here, and the copy takes the synchronous path, which resumes the session);
- the connection is plain TCP: there the server knows how many bytes reached its socket, and
  an operator checkpoint first waits until every call among them ran
  (`consistent_cut`, `ConnectionInfo.drain_received`), so a checkpoint taken after the copy
  returned holds it (over TLS or a Unix socket it cannot tell: copies stay synchronous).

The bytes are taken at the call (the caller may reuse its buffer). A failure after all (a
sticky error of earlier work) is reported by the next synchronizing call. The copies stay in
the replay log's ring of early copies (`ReplayLog.keep_early`: inline ones up to `KEEP_MAX`
bytes as a copy, shared-memory ones as a view of their slot until it is reused), so a resume
from a checkpoint taken while one was still on the network (not yet in the server's socket)
sends it again (`replay`); one no longer kept is reported lost (CallsLost), never skipped.
"""

from __future__ import annotations

import bisect
import struct
from typing import TYPE_CHECKING, Any

from .datapath.paths import SHM_PIECE
from .datapath.select import Path

if TYPE_CHECKING:
    from .connection import Connection
    from .datapath import DataPaths

__all__ = [
    "EARLY_MAX",
    "INLINE_EARLY_MAX",
    "KEEP_MAX",
    "STICKY",
    "Allocations",
    "returns_early",
    "copy_early",
    "post_early",
]

# errors after which a context is unusable (CUDA: "sticky"); once one was reported, no copy
# can be proven to succeed
STICKY = frozenset({214, 700, 702, 710, 714, 715, 716, 717, 718, 719})
EARLY_MAX = SHM_PIECE  # bytes; one shared-memory slot
INLINE_EARLY_MAX = 4 << 20  # bytes; one record (cricket_client.driver.COPY_CHUNK)
KEEP_MAX = 64 << 10  # inline early copies up to this size are kept for a resume (a copy)
_PROC = "CU_MEMCPY_HTOD_ASYNC"
_LEGACY_STREAM = 0
_HEAD = struct.Struct(">QI")  # CU_MEMCPY_HTOD_ASYNC's cu_ptr, then its mem_data's length
_TAILS = tuple(bytes(-k & 3) + bytes(8) for k in range(4))  # mem_data's padding, stream 0


class Allocations:
    """The device allocations a connection's client made and still holds, with the context
    epoch each was made in (the epoch moves on whenever the current context may change)."""

    def __init__(self) -> None:
        self.epoch = 0
        self.broken = False  # a sticky error was reported
        self._starts: list[int] = []  # sorted
        self._spans: dict[int, tuple[int, int]] = {}  # start -> (size, epoch)

    def made(self, ptr: int, size: int) -> None:
        if ptr not in self._spans:
            bisect.insort(self._starts, ptr)
        self._spans[ptr] = (size, self.epoch)

    def freed(self, ptr: int) -> None:
        if self._spans.pop(ptr, None) is not None:
            del self._starts[bisect.bisect_left(self._starts, ptr)]

    def forget_containing(self, addr: int) -> None:
        """The allocation holding `addr` takes no early copy any more (SYNC_MEMOPS set)."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            start = self._starts[i]
            span = self._spans.get(start)
            if span is not None and addr < start + span[0]:
                self.freed(start)

    def forget(self) -> None:
        """A call that may end or remap memory it does not name: nothing is proven any more."""
        self._starts.clear()
        self._spans.clear()

    def context_may_change(self) -> None:
        self.epoch += 1

    def holds(self, dst: int, n: int) -> bool:
        """Whether [dst, dst + n) lies inside one allocation made in the current context."""
        i = bisect.bisect_right(self._starts, dst) - 1
        if i < 0:
            return False
        start = self._starts[i]
        span = self._spans.get(start)
        return (
            span is not None
            and dst + n <= start + span[0]
            and span[1] == self.epoch
            and not self.broken
        )


def returns_early(conn: Connection, dst: int, n: int, capturing: bool) -> bool:
    """Whether a cuMemcpyHtoD of `n` bytes to `dst` may return before the server ran it;
    `capturing`: a capture this client began is under way (driver_graphs.capturing_any)."""
    if not 0 < n <= EARLY_MAX:
        return False
    pipe = conn.pipeline
    return (
        conn.known.allocations.holds(dst, n)
        and not pipe.deferred_error
        and pipe.deferred_exception is None
        and not capturing
        and conn._rpc.plain_tcp
        and conn._rpc.looks_alive()
    )


def copy_early(conn: Connection, paths: DataPaths, dst: int, data: Any) -> bool:
    """Stage and send a copy `returns_early` allowed, through the path `paths` picks for its
    size; False: it must wait for its reply after all (a forced path, data channels, more
    than an inline record), and nothing was sent."""
    path = paths.htod_early(dst, data)
    if path is Path.SHM:
        return True
    if path is Path.RPC and len(data) <= INLINE_EARLY_MAX:
        paths.last_path = Path.RPC
        post_early(conn, dst, data)
        return True
    return False


def post_early(conn: Connection, dst: int, data: Any) -> None:
    """Send the copy inline without waiting for its reply; its record is written before
    this returns, so the caller's buffer is free again."""
    kept = len(data) <= KEEP_MAX
    if kept:
        data = bytes(data)  # kept for a resume; larger ones go by reference: one copy
    n = len(data)
    # encoded here, one struct each side of the bytes (the hot path of a loop's copies)
    conn.post_now_encoded(_PROC, [_HEAD.pack(dst, n), data, _TAILS[n & 3]])
    if kept:
        conn.replay_log.keep_early(_PROC, (dst, data, _LEGACY_STREAM))
