"""Allocation cost of the VMM sub-allocator against plain cuMemAlloc/cuMemFree (GPU only).

The VMM side is what a client gets from the `cuda` backend: a `DeviceHeap` over the
backend's `VmmBacking` (allocations of at most half a chunk are sub-allocated, larger ones
get chunks of their own: cuMemCreate + cuMemMap + cuMemSetAccess, and cuMemUnmap +
cuMemRelease on free). The baseline is cuMemAlloc/cuMemFree in a context of its own.

One round allocates a batch of the same size, then frees the batch; the rate counts allocs
and frees together. The heap unmaps a chunk as soon as its last allocation is freed, so each
round of small allocations also maps and unmaps a chunk; the "chunk kept" rows hold one extra
allocation for the whole run and so show the sub-allocation alone.

Usage: python -m bench.alloc_vmm OUT.json [--seconds S]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from bench.common import Row, print_table, rate_per_s, write_report

KiB, MiB = 1 << 10, 1 << 20
SIZES = [(1 * KiB, "1 KiB"), (64 * KiB, "64 KiB"), (1 * MiB, "1 MiB"), (64 * MiB, "64 MiB")]


def _batch(size: int) -> int:
    return 256 if size <= 64 * KiB else 64 if size <= MiB else 16


def run(seconds: float = 1.0) -> list[Row]:
    from cricket_server.backends.cuda import CudaBackend
    from cricket_server.backends.cuda._driver import call, driver
    from cricket_server.backends.cuda.context import DeviceContext
    from cricket_server.memory import AddressArena, DeviceHeap

    backend = CudaBackend()
    session = backend.open_session()
    heap = DeviceHeap(AddressArena(*backend.address_space()), session.chunk_backing(0))
    plain_ctx = DeviceContext(0)
    rows: list[Row] = []
    try:
        for size, label in SIZES:
            n = _batch(size)

            def vmm_round(size: int = size, n: int = n) -> int:
                ptrs = [heap.alloc(size) for _ in range(n)]
                for p in ptrs:
                    heap.free(p)
                return 2 * n

            def plain_round(size: int = size, n: int = n) -> int:
                plain_ctx.make_current()
                ptrs = [call(driver.cuMemAlloc, size) for _ in range(n)]
                for p in ptrs:
                    call(driver.cuMemFree, p)
                return 2 * n

            plain = _measure(plain_round, seconds)
            vmm = _measure(vmm_round, seconds)
            rows.append(_row(f"alloc+free {label} VMM heap", vmm, plain, n))
            if size <= heap.chunk_size // 2:
                keep = heap.alloc(size)  # keeps the chunk mapped between rounds
                try:
                    kept = _measure(vmm_round, seconds)
                finally:
                    heap.free(keep)
                rows.append(_row(f"alloc+free {label} VMM heap, chunk kept", kept, plain, n))
    finally:
        heap.release_all()
        session.close()
        plain_ctx.destroy()
        backend.close()
    return rows


def _measure(round_fn: Callable[[], int], seconds: float) -> float:
    round_fn()  # warm up (first mapping, driver caches)
    return rate_per_s(round_fn, seconds)


def _row(name: str, vmm: float, plain: float, batch: int) -> Row:
    return Row(
        name=name,
        value=vmm,
        unit="op/s",
        baseline_name="cuMemAlloc + cuMemFree",
        baseline=plain,
        ratio=vmm / plain,
        extra={"batch": batch},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.alloc_vmm", description=__doc__)
    parser.add_argument("out", type=Path, help="where to write the JSON report")
    parser.add_argument("--seconds", type=float, default=1.0, help="measuring time per row")
    args = parser.parse_args(argv)
    rows = run(args.seconds)
    print_table(rows)
    write_report(rows, args.out)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
