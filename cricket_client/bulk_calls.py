"""Bulk call styles of a `Connection`: one synchronizing procedure with many argument tuples,
all in flight together (`Connection.sync_many`, `sync_into`, `sync_window` wrap these in the
replay and reconnect wrapper, `cricket_client.resuming`).

Each returns the first failure among its calls, or else the first unreported failure of the
pipelined calls before them, as the CUresult.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cricket_xdr.rpc.record import DIRECT_READ_MIN
from cricket_xdr.stubs import Pending

from .pipeline import err_of

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["many", "into_views", "windowed"]

_MEM_OK = struct.Struct(">iI")  # mem_result: err = 0, then the data's length


def many(conn: Connection, proc: str, calls: list[tuple[Any, ...]]) -> tuple[int, list[Any]]:
    """`proc` once per argument tuple, pipelined: (CUresult, replies)."""
    method = getattr(conn._stub, proc + "_async")
    pendings = [method(*args) for args in calls]
    replies = [p.result() for p in pendings]
    err = next((e for e in map(err_of, replies) if e), 0)
    return conn.pipeline.fold(err), replies


# procedure name -> (program, version, number, encode(*args) -> body), for into_views
_HOW_INTO: dict[str, tuple[int, int, int, Callable[..., Any]]] = {}


def _how_into(proto: Any, proc: str) -> tuple[int, int, int, Callable[..., Any]]:
    how = _HOW_INTO.get(proc)
    if how is not None:
        return how
    server = proto.CRICKET_V1_Server
    procedure = server.PROCEDURES[int(getattr(proto, proc))]
    how = _HOW_INTO[proc] = (
        server.PROGRAM, server.VERSION, procedure.number, procedure.args_encoder()
    )  # fmt: skip
    return how


def into_views(conn: Connection, proc: str, calls: list[tuple[tuple[Any, ...], memoryview]]) -> int:
    """A procedure that returns `mem_result`, once per `(args, view)`, all pipelined; each
    result's data is received straight into its view (no copy)."""
    proto = conn.proto
    prog, vers, number, encoded = _how_into(proto, proc)
    rpc = conn._rpc
    if len(calls) == 1 and len(calls[0][1]) < DIRECT_READ_MIN:
        # One small result: the direct synchronous call; its data is copied once, from the
        # reply into the view (a result this small is not received into place anyway).
        args, view = calls[0]
        return conn.pipeline.fold(_settle(proto, rpc.call(prog, vers, number, encoded(*args)), view))
    pendings = []
    for args, view in calls:
        into = (_MEM_OK.pack(0, len(view)), view)
        pendings.append((rpc.call_async(prog, vers, number, encoded(*args), into=into), view))
    err = 0
    for pending, view in pendings:
        body = pending.result()
        if not pending.placed:
            err = err or _settle(proto, body, view)
    return conn.pipeline.fold(err)


def _settle(proto: Any, body: Any, view: memoryview) -> int:
    """A `mem_result` body not received into place: its data into `view`; its CUresult."""
    n = len(view)
    if len(body) == _MEM_OK.size + n + (-n & 3) and body[: _MEM_OK.size] == _MEM_OK.pack(0, n):
        view[:] = memoryview(body)[_MEM_OK.size : _MEM_OK.size + n]  # success, all of it
        return 0
    reply = proto.xdr_mem_result.decode(body)
    if reply.err:
        return int(reply.err)
    data = reply.value
    view[: len(data)] = data
    return 0


def windowed(
    conn: Connection,
    proc: str,
    calls: list[tuple[Any, ...]],
    window: int,
    before: Callable[[int], None] | None,
    after: Callable[[int], None] | None,
) -> int:
    """`proc` once per argument tuple, at most `window` in flight: `before(i)` runs just
    before call i is sent, `after(i)` once its reply says success; no `after` runs past the
    first failure."""
    conn.replay_log.begin([(proc, tuple(args)) for args in calls])
    method = getattr(conn._stub, proc + "_async")
    pendings: deque[tuple[int, Pending]] = deque()
    err = 0

    def settle() -> None:
        nonlocal err
        i, pending = pendings.popleft()
        code = err_of(pending.result())
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
    deferred = conn.pipeline.collect(block=False)
    return err or deferred
