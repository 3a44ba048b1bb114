"""The client's CPU for one early 4 KiB cuMemcpyHtoD (the decoding step's first call), split.

    CRICKET_SPIN_US=0 python -m bench.copy_call_cpu [--backend sim|cuda] [--calls N]

Against a fresh cricket-server, the client thread's CPU (time.thread_time: system calls
included, waiting not) per copy in four conditions: back to back (the server busy with the
last one), with an idle pause after each (the server's thread asleep when the copy's write
arrives, as in a decoding step, where the client also just woke from its read), and both
again with the socket write left out (the call's Python alone). What a copy costs beyond
its Python is the write; what an idle pause adds is the price of waking both ends, which a
local CUDA loop (its driver spins) never pays. A control runs a compact loop of plain Python
(a few cache lines of code and data, about as long as the copy's Python) the same two ways:
if it slows down after the pause as much as the copy does, the processor itself is slow to
come back (its clock, its idle state); if it does not, the copy's own footprint (the many
functions and objects its path touches, evicted while the thread slept) is what costs. A
fused copy does the call's essential work (the early-return checks, the copy of the bytes,
the record's framing, a replay entry) in one function without the write: how much of the
cold cost a hot path of fewer Python layers would keep.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from bench.driver_remote import _ok
from bench.server_proc import cricket_server_process

PAUSE_S = 0.0003  # longer than any spin: the server's thread sleeps in its read
SIZE = 4096
MAX_UNSENT = 2000  # calls of a run without writes (below the pipeline's MAX_PENDING)


@contextmanager
def _no_writes(conn: Any) -> Iterator[None]:
    """The RPC client's socket writes left out (the call's Python alone); the calls never
    sent are forgotten afterwards, so that nobody waits for their replies."""
    from cricket_xdr.rpc import client

    original = client.RpcClient._send_now
    client.RpcClient._send_now = lambda self, pieces: []  # type: ignore[method-assign]
    try:
        yield
    finally:
        client.RpcClient._send_now = original  # type: ignore[method-assign]
        conn.pipeline.pending.clear()
        conn._rpc._pending.clear()


def cpu_us(
    fn: Callable[[], object],
    calls: int,
    pause_s: float,
    between: Callable[[int], object] | None = None,
) -> float:
    """CPU per `fn()`, back to back or after an idle pause of `pause_s`; `between(i)` runs
    untimed after call i."""
    spent = 0.0
    for i in range(calls):
        start = time.thread_time()
        fn()
        spent += time.thread_time() - start
        if between is not None:
            between(i)
        if pause_s:
            time.sleep(pause_s)
    return spent * 1e6 / calls


def copy_cpu_us(
    cu: Any, dst: Any, host: np.ndarray, calls: int, pause_s: float, writes: bool
) -> float:
    """Client CPU per cuMemcpyHtoD; with writes, a DtoH every 20 copies collects the replies."""
    token = bytearray(4)

    def collect(i: int) -> None:
        if i % 20 == 19:
            cu.cuMemcpyDtoH(token, dst, 4)

    def copy() -> None:
        cu.cuMemcpyHtoD(dst, host, SIZE)

    return cpu_us(copy, calls, pause_s, collect if writes else None)


def fused_early_htod(conn: Any, dst: int, host: np.ndarray) -> Callable[[], None]:
    """The early 4 KiB HtoD's essential work in one function, its write left out: the
    checks that it may return early, the copy of its bytes, its record's framing (the RPC
    connection's `send_call`, the xid forgotten again) and a replay entry."""
    from cricket_client.early_copies import _HEAD, _PROC, _TAILS

    proto = conn.proto
    server = proto.CRICKET_V1_Server
    prog, vers, number = server.PROGRAM, server.VERSION, int(getattr(proto, _PROC))
    allocations, pipe, framing = conn.known.allocations, conn.pipeline, conn._rpc._conn
    kept: list[tuple[int, bytes]] = []

    def copy() -> None:
        view = memoryview(host).cast("B")  # type: ignore[arg-type]
        n = view.nbytes
        if not allocations.holds(dst, n) or pipe.deferred_error or pipe.deferred_exception:
            raise RuntimeError("the copy may not return early")
        data = bytes(view)
        xid, _pieces = framing.send_call(prog, vers, number, [_HEAD.pack(dst, n), data, _TAILS[n & 3]])
        framing.forget(xid)
        kept.append((dst, data))
        if len(kept) > 64:
            kept.clear()

    return copy


def _compact(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i & 7
    return total


def compact_cpu_us(calls: int, pause_s: float, n: int = 300) -> float:
    """CPU per run of `_compact(n)`, back to back or after an idle pause of `pause_s`."""
    return cpu_us(lambda: _compact(n), calls, pause_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.copy_call_cpu")
    parser.add_argument("--backend", default="sim", choices=("sim", "cuda"))
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args(argv)
    os.environ.setdefault("CRICKET_SPIN_US", "0")
    import cricket_client
    from cricket_client import driver as cu

    with cricket_server_process(args.backend, spin_us=0) as (address, _pid):
        conn = cricket_client.connect(address)
        _ok(cu.cuInit(0))
        ctx = _ok(cu.cuDevicePrimaryCtxRetain(_ok(cu.cuDeviceGet(0))))
        _ok(cu.cuCtxSetCurrent(ctx))
        dst = _ok(cu.cuMemAlloc(SIZE))
        host = np.ones(SIZE // 4, dtype=np.float32)
        copy_cpu_us(cu, dst, host, 200, 0.0, True)  # warm-up
        for label, pause, writes in (
            ("back to back", 0.0, True),
            ("after an idle pause", PAUSE_S, True),
            ("back to back, no write", 0.0, False),
            ("after an idle pause, no write", PAUSE_S, False),
        ):
            if writes:
                us = copy_cpu_us(cu, dst, host, args.calls, pause, True)
            else:
                with _no_writes(conn):  # fewer calls than the pipeline keeps replies for
                    us = copy_cpu_us(cu, dst, host, min(args.calls, MAX_UNSENT), pause, False)
            print(f"4 KiB cuMemcpyHtoD [{args.backend}], {label}: {us:.1f} us client CPU")
        fused = fused_early_htod(conn, int(dst), host)
        cpu_us(fused, 200, 0.0)
        for label, pause in (("back to back", 0.0), ("after an idle pause", PAUSE_S)):
            us = cpu_us(fused, args.calls, pause)
            print(f"a fused early HtoD, no write [{args.backend}], {label}: {us:.1f} us CPU")
        cu.cuMemFree(dst)
        conn.close()
    for label, pause in (("back to back", 0.0), ("after an idle pause", PAUSE_S)):
        us = compact_cpu_us(args.calls, pause)
        print(f"control: a compact Python loop, {label}: {us:.1f} us CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
