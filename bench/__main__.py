"""`make bench`: run every benchmark, print one table, write bench/results/<host>.json.

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
from pathlib import Path

from bench.common import Row, print_table, write_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--only", default="xdr,rpc,driver,isolation,copies,copysizes,alloc,graphs,step",
                        help="comma-separated: xdr, rpc, driver, isolation, copies, copysizes, alloc, "
                        "graphs, step (also: load, native, launchcpu, frameworks)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 1 GiB copies")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    rows: list[Row] = []
    if "xdr" in wanted:
        from bench import xdr_codec

        rows += xdr_codec.run()
    if "rpc" in wanted:
        from bench import rpc_null

        rows += rpc_null.run()
    if "driver" in wanted:
        from bench import driver_remote

        rows += driver_remote.run(quick=args.quick)
    if "isolation" in wanted:
        from bench import isolation

        rows += isolation.run(iterations=1000 if args.quick else 3000)
    out = args.out or Path("bench/results") / f"{platform.node() or 'host'}.json"
    if "copies" in wanted:
        from bench import copies

        rows += copies.run(quick=args.quick, plot_path=out.with_name(out.stem + "-copies.png"))
    if "copysizes" in wanted:
        from bench import copy_sizes

        rows += copy_sizes.run(quick=args.quick)
    if "graphs" in wanted:
        from bench import graphs

        rows += graphs.run(quick=args.quick)

    if "step" in wanted:
        from bench import step_split

        rows += step_split.run(quick=args.quick, plot_path=out.with_name(out.stem + "-step.png"))
    if "launchcpu" in wanted:
        from bench import launch_cpu

        rows += launch_cpu.run(quick=args.quick)
    if "native" in wanted:
        from bench import native_door

        rows += native_door.run()
    if "load" in wanted:
        from bench import load

        rows += load.run()
    if "frameworks" in wanted:
        from cricket_server.backends.cuda import gpu_available

        if gpu_available():
            from bench import framework_calls

            rows += framework_calls.run(steps=40 if args.quick else framework_calls.STEPS)[0]
        else:
            print("frameworks: skipped (numba-cuda and cuda.core compile for a GPU)")
    if "alloc" in wanted:
        from cricket_server.backends.cuda import gpu_available

        if gpu_available():
            from bench import alloc_vmm

            rows += alloc_vmm.run(0.5)
        else:
            print("alloc: skipped (the VMM allocator needs a GPU)")
    print_table(rows)
    write_report(rows, out)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
