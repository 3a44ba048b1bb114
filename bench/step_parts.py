"""Where a decoding step's time goes (P4), without a profiler: the step and its parts, timed.

    CRICKET_SPIN_US=0 python -m bench.step_parts [--steps N]

Against one cricket-server (sim, a subprocess, loopback TCP): the full step (4 KiB HtoD, 10
launches, 4-byte DtoH), the step without launches (the copies alone), the HtoD alone, the
DtoH alone, a NULL RPC call, and the raw Python socket round trip; plus the socket writes
the client makes per full step (sendmsg/send calls counted). Medians over rounds, us.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from bench.driver_remote import Workload
from bench.raw_socket import echo_peer, round_trip_fn
from bench.server_proc import cricket_server


def _per_step(fn: Any, steps: int, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(steps)
        times.append((time.perf_counter() - t0) / steps * 1e6)
    return statistics.median(times)


def _count_writes(conn: Any, fn: Any) -> int:
    """Socket writes (send/sendmsg/sendall) the client's RPC transport makes during `fn()`."""
    sock = conn._rpc._sock
    count = 0

    class Counting:
        def __getattr__(self, name: str) -> Any:
            attr = getattr(sock, name)
            if name in ("send", "sendmsg", "sendall"):
                def counted(*a: Any, **k: Any) -> Any:
                    nonlocal count
                    count += 1
                    return attr(*a, **k)
                return counted
            return attr

    conn._rpc._sock = Counting()
    try:
        fn()
    finally:
        conn._rpc._sock = sock
    return count


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.step_parts")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    steps = args.steps
    with echo_peer() as sock:
        once = round_trip_fn(sock)
        rtt = _per_step(lambda n: [once() for _ in range(n)], 2000)
    import cricket_client
    from cricket_client import driver as cu

    with cricket_server("sim") as address:
        conn = cricket_client.connect(address)
        w = Workload(cu)
        x = cu.cuMemAlloc(4096)[1]
        host = np.ones(1024, dtype=np.float32)
        token = bytearray(4)
        proto = conn.proto
        rows = {
            "raw socket round trip": rtt,
            "NULL RPC call": _per_step(
                lambda n: [conn._rpc.call(proto.CRICKET_PROG, proto.CRICKET_V1, 0, b"")
                           for _ in range(n)], 2000),
            "cuMemcpyHtoD 4 KiB": _per_step(
                lambda n: [cu.cuMemcpyHtoD(x, host, 4096) for _ in range(n)], 2000),
            "cuMemcpyDtoH 4 B": _per_step(
                lambda n: [cu.cuMemcpyDtoH(token, x, 4) for _ in range(n)], 2000),
            "step without launches (HtoD 4 KiB + DtoH 4 B)": _per_step(
                lambda n: w.decoding_loop_s(n, launches=0), steps * 4),
            "step, 1 launch": _per_step(lambda n: w.decoding_loop_s(n, launches=1), steps),
            "step, 10 launches (P4)": _per_step(w.decoding_loop_s, steps),
        }
        writes = _count_writes(conn, lambda: w.decoding_loop_s(100)) / 100
        phases = _phases(cu, w, steps)
        bound = _early_bound(cu, conn)
        cu.cuMemFree(x)
        w.close()
        conn.close()
    for name, us in rows.items():
        print(f"{name:48s} {us:9.1f} us  {us / rtt:7.2f} x raw round trip")
    print(f"{'client socket writes per P4 step':48s} {writes:9.2f}")
    print("inside a P4 step, us in each call (median): " + ", ".join(
        f"{name} {us:.1f}" for name, us in phases.items()))
    print("HtoD of n bytes + DtoH 4 B per step, us: early return allowed / forced synchronous")
    for n, (early, synchronous) in bound.items():
        print(f"  {n >> 10:4d} KiB  {early:8.1f}  {synchronous:8.1f}")


def _phases(cu: Any, w: Workload, steps: int) -> dict[str, float]:
    """Median us a P4 step spends in its HtoD, its 10 cuLaunchKernel calls and its DtoH (the
    DtoH holds the wait for the server)."""
    import ctypes

    saxpy = cu.cuModuleGetFunction(w.module, b"saxpy")[1]
    x, y = cu.cuMemAlloc(4096)[1], cu.cuMemAlloc(4096)[1]
    host = np.ones(1024, dtype=np.float32)
    token = bytearray(4)
    args = ((2.0, x, y, 1024), (ctypes.c_float, None, None, ctypes.c_int))
    spent: dict[str, list[float]] = {"HtoD": [], "10 launches": [], "DtoH": []}
    clock = time.perf_counter
    for _ in range(steps):
        t0 = clock()
        cu.cuMemcpyHtoD(x, host, 4096)
        t1 = clock()
        for _ in range(10):
            cu.cuLaunchKernel(saxpy, 4, 1, 1, 256, 1, 1, 0, 0, args, 0)
        t2 = clock()
        cu.cuMemcpyDtoH(token, y, 4)
        t3 = clock()
        for name, us in zip(spent, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            spent[name].append(us * 1e6)
    cu.cuMemFree(x)
    cu.cuMemFree(y)
    return {name: statistics.median(v) for name, v in spent.items()}


def _early_bound(cu: Any, conn: Any) -> dict[int, tuple[float, float]]:
    """Per size: us per (HtoD n, DtoH 4 B) step with early return allowed and forced off
    (where the bound of cricket_client.early_copies comes from)."""
    out: dict[int, tuple[float, float]] = {}
    try:
        from cricket_client import early_copies
    except ImportError:  # a client without early return
        return out
    token = bytearray(4)
    for n in (4 << 10, 16 << 10, 64 << 10):
        ptr = cu.cuMemAlloc(n)[1]
        data = bytes(n)

        def steps(k: int, ptr: Any = ptr, data: bytes = data, n: int = n) -> None:
            for _ in range(k):
                cu.cuMemcpyHtoD(ptr, data, n)
                cu.cuMemcpyDtoH(token, ptr, 4)

        early = _per_step(steps, 300)
        original = early_copies.EARLY_MAX
        early_copies.EARLY_MAX = 0
        try:
            synchronous = _per_step(steps, 300)
        finally:
            early_copies.EARLY_MAX = original
        out[n] = (early, synchronous)
        cu.cuMemFree(ptr)
    return out


if __name__ == "__main__":
    main()
