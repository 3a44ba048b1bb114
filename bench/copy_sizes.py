"""Small and middle-sized copies against the local baseline of the same run (issue targets:
64 KiB at least 0.5x local pageable, 1 MiB at least 0.8x).

For 4 KiB, 64 KiB, 1 MiB and 16 MiB, HtoD and DtoH: cricket_client through a cricket-server
subprocess (the path the client picks, `auto`, and each path forced: inline RPC, shared
memory, parallel TCP), against local cuda-python from pageable numpy memory where a GPU
answers, else (sim) a numpy copy of the same size as the local stand-in; and a raw Python
socket moving the same bytes (one stream, an acknowledgement back) as the network floor.

`python -m bench.copy_sizes [--paths auto,rpc,shm,tcp] [--sizes 4K,64K,1M,16M] [--sustained]`
prints the table; `run()` gives the `make bench` rows (auto path, ratio to the local
baseline). A copy is timed alone (best of many); with `--sustained` an HtoD is timed as
`BATCH` copies in a row and a cuCtxSynchronize, per copy, so that a copy that returns before
the device has its bytes (local pageable copies from staging, remote early copies) pays for
the work it left behind. `python -m bench.copy_ab OLD_TREE` compares two trees.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from types import ModuleType

import numpy as np

from bench.common import Row, print_table
from bench.copies import _context, _label, _local_driver, _ok, remote_session
from bench.raw_socket import echo_peer, stream_gbps
from bench.server_proc import cricket_server

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20]
PATHS = ("auto", "rpc", "shm", "tcp")
TARGETS = {64 << 10: 0.5, 1 << 20: 0.8}
BUDGET_S = 0.25  # time spent per size, direction and path (at least MIN_REPEATS copies)
MIN_REPEATS = 5
BATCH = 16  # HtoD copies per synchronize with --sustained
Timing = dict[str, dict[int, float]]  # direction -> size -> best seconds per copy


def _best(fn: Callable[..., object], *args: object) -> float:
    """Best time of one call `fn(*args)` over about BUDGET_S seconds (a CUDA call's failure
    raises)."""

    def once() -> None:
        result = fn(*args)
        if isinstance(result, tuple):
            _ok(result)

    once()  # warm-up: paths set up, buffers allocated
    best = float("inf")
    done = 0
    end = time.perf_counter() + BUDGET_S
    while done < MIN_REPEATS or time.perf_counter() < end:
        t0 = time.perf_counter()
        once()
        best = min(best, time.perf_counter() - t0)
        done += 1
        if done >= 20000:
            break
    return best


def _batch(cu: ModuleType, dptr: object, host: np.ndarray, size: int) -> None:
    for _ in range(BATCH):
        _ok(cu.cuMemcpyHtoD(dptr, host, size))
    _ok(cu.cuCtxSynchronize())


def _copies(cu: ModuleType, sizes: list[int], sustained: bool = False) -> Timing:
    """Best seconds per HtoD and DtoH of each size on the current context of `cu`."""
    out: Timing = {"HtoD": {}, "DtoH": {}}
    for size in sizes:
        host = np.random.default_rng(size).integers(0, 255, size, dtype=np.uint8)
        back = np.empty_like(host)
        dptr = _ok(cu.cuMemAlloc(size))
        if sustained:
            out["HtoD"][size] = _best(_batch, cu, dptr, host, size) / BATCH
        else:
            out["HtoD"][size] = _best(cu.cuMemcpyHtoD, dptr, host, size)
        out["DtoH"][size] = _best(cu.cuMemcpyDtoH, back, dptr, size)
        if not np.array_equal(host, back):
            raise RuntimeError(f"copy sizes: {_label(size)} came back different")
        _ok(cu.cuMemFree(dptr))
    return out


def _memcpy(sizes: list[int]) -> Timing:
    """A numpy copy of each size (the local stand-in where no GPU answers)."""
    out: Timing = {"HtoD": {}, "DtoH": {}}
    for size in sizes:
        a = np.ones(size, dtype=np.uint8)
        b = np.empty_like(a)
        t = _best(np.copyto, b, a)
        out["HtoD"][size] = out["DtoH"][size] = t
    return out


def measure(
    sizes: list[int] = SIZES, paths: tuple[str, ...] = PATHS, sustained: bool = False
) -> tuple[str, str, dict[str, Timing]]:
    """(backend, local baseline's name, label -> timings); labels: 'local', 'raw socket',
    'remote <path>'."""
    from cricket_client import driver as remote

    local = _local_driver()
    out: dict[str, Timing] = {}
    if local is not None:
        _context(local)
        out["local"] = _copies(local, sizes, sustained)
        base_name = "local cuda-python, pageable numpy"
    else:
        out["local"] = _memcpy(sizes)
        base_name = "numpy copy of the size (no GPU: sim)"
    backend = "cuda" if local is not None else "sim"
    with echo_peer() as sock:
        raw = {s: _best(stream_gbps, sock, s) for s in sizes}
    out["raw socket"] = {"HtoD": raw, "DtoH": raw}
    with cricket_server(backend) as address:
        for path in paths:
            with remote_session(address, path):
                out[f"remote {path}"] = _copies(remote, sizes, sustained)
    return backend, base_name, out


def gbps(size: int, seconds: float) -> float:
    return size / seconds / 1e9


def rows(backend: str, base_name: str, timings: dict[str, Timing]) -> list[Row]:
    """One row per size and direction: the path the client picks against the local baseline."""
    out: list[Row] = []
    local = timings["local"]
    for label in [k for k in timings if k.startswith("remote ")]:
        path = label.split(" ", 1)[1]
        if path != "auto":
            continue
        for direction in ("HtoD", "DtoH"):
            for size, seconds in timings[label][direction].items():
                base = gbps(size, local[direction][size])
                value = gbps(size, seconds)
                goal = TARGETS.get(size)
                out.append(
                    Row(
                        f"copy sizes [{backend}]: {direction} {_label(size)}",
                        value,
                        "GB/s",
                        base_name,
                        base,
                        value / base,
                        f">= {goal} x local" if goal else "",
                    )
                )
    return out


def table(timings: dict[str, Timing]) -> str:
    """Markdown: GB/s of every label, and the ratio to 'local', per size and direction."""
    sizes = sorted(next(iter(timings.values()))["HtoD"])
    lines = ["| what | " + " | ".join(f"{d} {_label(s)}" for d in ("HtoD", "DtoH") for s in sizes)
             + " |", "|---" * (1 + 2 * len(sizes)) + "|"]
    local = timings["local"]
    for label, by in timings.items():
        cells = []
        for d in ("HtoD", "DtoH"):
            for s in sizes:
                t = by[d].get(s)
                if t is None:
                    cells.append("-")
                    continue
                cell = f"{gbps(s, t):.2f} GB/s ({t * 1e6:.0f} us)"
                if label != "local":
                    cell += f" {local[d][s] / t:.2f}x"
                cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(quick: bool = False) -> list[Row]:
    backend, base_name, timings = measure(paths=("auto",))
    return rows(backend, base_name, timings)


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("IB")
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.copy_sizes")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--sizes", default="4K,64K,1M,16M")
    parser.add_argument("--sustained", action="store_true", help="HtoD: copies in a row, then sync")
    args = parser.parse_args(argv)
    sizes = [_size(s) for s in args.sizes.split(",")]
    backend, base_name, timings = measure(sizes, tuple(args.paths.split(",")), args.sustained)
    print(f"backend {backend}; local baseline: {base_name}; ratio = remote / local speed\n")
    print(table(timings))
    print()
    print_table(rows(backend, base_name, timings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
