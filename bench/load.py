"""Load: many concurrent clients doing mixed calls, every result checked; p50/p99 per call.

    python -m bench.load [--clients 32] [--calls 10000] [--backend sim]
    python -m bench --only load

Each client is a thread with a connection (a session) of its own. Its calls are drawn at
random from alloc, HtoD, DtoH, memset, launch (fill_u32), synchronize and free; a host-side
copy of every allocation says what a DtoH must read back. Latency is the time the call takes
in the caller (for pipelined calls, memset and launch, the time to send them).
"""

from __future__ import annotations

import argparse
import ctypes
import random
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import cricket_client
from bench.common import Row, print_table
from cricket_client import driver as cuda

CUBIN = Path(__file__).resolve().parents[1] / "tests" / "kernels" / "test_kernels.sm_90.cubin"
SIZES = (256, 4096, 65536)  # bytes of an allocation (multiples of 4)
MAX_LIVE = 16  # allocations a client holds at once
OK = cuda.CUresult.CUDA_SUCCESS


@dataclass
class LoadResult:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    calls: int = 0
    wrong: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def percentiles(self) -> dict[str, tuple[float, float]]:
        """call -> (p50, p99) in microseconds."""
        out = {}
        for name, values in sorted(self.latencies.items()):
            q = statistics.quantiles(values, n=100) if len(values) > 1 else values * 99
            out[name] = (q[49] * 1e6, q[98] * 1e6)
        return out


def _client(address: str, calls: int, seed: int, result: LoadResult, lock: threading.Lock) -> None:
    rng = random.Random(seed)
    lat: dict[str, list[float]] = defaultdict(list)
    wrong: list[str] = []
    conn = cricket_client.connect(address, make_default=False, timeout=120)
    clock = time.perf_counter

    def timed(name: str, fn, *args):  # type: ignore[no-untyped-def]
        t = clock()
        out = fn(*args)
        lat[name].append(clock() - t)
        if out[0] != OK:
            wrong.append(f"{name}: {out[0]!r}: {cricket_client.last_error_message()}")
        return out

    with conn.active():
        assert cuda.cuInit(0)[0] == OK
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        cuda.cuCtxSetCurrent(ctx)
        _, mod = cuda.cuModuleLoadData(CUBIN.read_bytes())
        _, fill = cuda.cuModuleGetFunction(mod, b"fill_u32")
        live: dict[int, np.ndarray] = {}  # ptr -> what the device holds
        done = 0
        while done < calls:
            op = rng.randrange(7)
            if op == 0 or not live:
                if len(live) >= MAX_LIVE:
                    continue
                size = rng.choice(SIZES)
                _, ptr = timed("alloc", cuda.cuMemAlloc, size)
                live[int(ptr)] = np.zeros(size // 4, dtype=np.uint32)
                timed("memset", cuda.cuMemsetD32Async, ptr, 0, size // 4, 0)
                done += 2
                continue
            ptr = rng.choice(list(live))
            shadow = live[ptr]
            if op == 1:
                data = np.full(shadow.size, rng.getrandbits(32), dtype=np.uint32)
                data[: min(8, data.size)] = np.arange(min(8, data.size), dtype=np.uint32)
                timed("htod", cuda.cuMemcpyHtoD, ptr, data, data.nbytes)
                shadow[:] = data
            elif op == 2:
                out = np.empty_like(shadow)
                timed("dtoh", cuda.cuMemcpyDtoH, out, ptr, out.nbytes)
                if not np.array_equal(out, shadow):
                    wrong.append(f"dtoh of {ptr:#x}: {np.count_nonzero(out != shadow)} words differ")
            elif op == 3:
                value = rng.getrandbits(32)
                timed("memset", cuda.cuMemsetD32Async, ptr, value, shadow.size, 0)
                shadow[:] = value
            elif op == 4:
                value, n = rng.getrandbits(32), shadow.size
                args = ((ptr, value, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
                timed("launch", cuda.cuLaunchKernel, fill, (n + 255) // 256, 1, 1, 256, 1, 1,
                      0, 0, args, 0)  # fmt: skip
                shadow[:] = value
            elif op == 5:
                timed("sync", cuda.cuCtxSynchronize)
            else:
                timed("free", cuda.cuMemFree, ptr)
                del live[ptr]
            done += 1
    conn.close()
    with lock:
        for name, values in lat.items():
            result.latencies[name].extend(values)
        result.calls += done
        result.wrong.extend(wrong)


def load(address: str, clients: int, calls: int, seed: int = 0) -> LoadResult:
    """`clients` concurrent sessions doing about `calls` checked calls each."""
    result, lock = LoadResult(), threading.Lock()
    threads = [
        threading.Thread(target=_client, args=(address, calls, seed + i, result, lock))
        for i in range(clients)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.seconds = time.perf_counter() - start
    return result


def report(result: LoadResult) -> str:
    lines = [f"{result.calls} calls in {result.seconds:.1f} s ({result.calls / result.seconds:.0f}"
             f"/s), {len(result.wrong)} wrong", f"{'call':<8} {'count':>8} {'p50 us':>9} "
             f"{'p99 us':>9}"]  # fmt: skip
    for name, (p50, p99) in result.percentiles().items():
        lines.append(f"{name:<8} {len(result.latencies[name]):>8} {p50:>9.1f} {p99:>9.1f}")
    return "\n".join(lines)


def run(clients: int = 32, calls: int = 10_000, backend: str = "sim") -> list[Row]:
    from bench.server_proc import cricket_server

    with cricket_server(backend) as address:
        result = load(address, clients, calls)
    print(report(result))
    if result.wrong:
        raise SystemExit(f"load: {len(result.wrong)} wrong results, first: {result.wrong[0]}")
    extra = {"clients": clients, "calls_each": calls, "seconds": result.seconds}
    return [
        Row(f"load {name} p50", p50, "us", "p99", p99, p99 / p50 if p50 else None, extra=extra)
        for name, (p50, p99) in result.percentiles().items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.load")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--backend", default="sim")
    args = parser.parse_args()
    print_table(run(args.clients, args.calls, args.backend))


if __name__ == "__main__":
    main()
