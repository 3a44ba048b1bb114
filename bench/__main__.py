"""`make bench`: run every benchmark, print one table, write bench/results/<host>.json
(after each benchmark, so that a run cut short keeps the rows it measured).

Usage: python -m bench [--only xdr,rpc,driver,isolation,copies,copysizes,alloc,graphs,step,native,
launchcpu,frameworks] [--out PATH]

`copies` also draws bench/results/<host>-copies.png (bandwidth against size per data path);
`step` draws bench/results/<host>-step.png (a decoding step split into client CPU, server CPU
and the rest).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import Row, print_table, write_report

DEFAULT = "xdr,rpc,driver,isolation,copies,copysizes,alloc,graphs,step"


def _sections(args: argparse.Namespace, out: Path) -> list[tuple[str, Callable[[], list[Row]]]]:
    """(name, run) of each benchmark in the order `make bench` runs them."""
    quick = args.quick

    def xdr() -> list[Row]:
        from bench import xdr_codec

        return xdr_codec.run()

    def rpc() -> list[Row]:
        from bench import rpc_null

        return rpc_null.run()

    def driver() -> list[Row]:
        from bench import driver_remote

        return driver_remote.run(quick=quick)

    def isolation() -> list[Row]:
        from bench import isolation

        return isolation.run(iterations=1000 if quick else 3000)

    def copies() -> list[Row]:
        from bench import copies

        return copies.run(quick=quick, plot_path=out.with_name(out.stem + "-copies.png"))

    def copysizes() -> list[Row]:
        from bench import copy_sizes

        return copy_sizes.run(quick=quick)

    def graphs() -> list[Row]:
        from bench import graphs

        return graphs.run(quick=quick)

    def step() -> list[Row]:
        from bench import step_split

        return step_split.run(quick=quick, plot_path=out.with_name(out.stem + "-step.png"))

    def launchcpu() -> list[Row]:
        from bench import launch_cpu

        return launch_cpu.run(quick=quick)

    def native() -> list[Row]:
        from bench import native_door

        return native_door.run()

    def load() -> list[Row]:
        from bench import load

        return load.run()

    def frameworks() -> list[Row]:
        from cricket_server.backends.cuda import gpu_available

        if not gpu_available():
            print("frameworks: skipped (numba-cuda and cuda.core compile for a GPU)")
            return []
        from bench import framework_calls

        return framework_calls.run(steps=40 if quick else framework_calls.STEPS)[0]

    def alloc() -> list[Row]:
        from cricket_server.backends.cuda import gpu_available

        if not gpu_available():
            print("alloc: skipped (the VMM allocator needs a GPU)")
            return []
        from bench import alloc_vmm

        return alloc_vmm.run(0.5)

    return [
        ("xdr", xdr), ("rpc", rpc), ("driver", driver), ("isolation", isolation),
        ("copies", copies), ("copysizes", copysizes), ("graphs", graphs), ("step", step),
        ("launchcpu", launchcpu), ("native", native), ("load", load),
        ("frameworks", frameworks), ("alloc", alloc),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument(
        "--only",
        default=DEFAULT,
        help="comma-separated: xdr, rpc, driver, isolation, copies, copysizes, alloc, "
        "graphs, step (also: load, native, launchcpu, frameworks)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 1 GiB copies")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    out = args.out or Path("bench/results") / f"{platform.node() or 'host'}.json"
    sections = _sections(args, out)
    unknown = wanted - {name for name, _ in sections}
    if unknown:
        parser.error(f"--only: unknown benchmark(s) {', '.join(sorted(unknown))}")
    rows: list[Row] = []
    for name, run in sections:
        if name not in wanted:
            continue
        start = time.monotonic()
        rows += run()
        write_report(rows, out)  # the rows so far: a run cut short keeps what it measured
        print(
            f"bench: {name} done in {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True
        )
    print_table(rows)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
