"""`make bench`: run every benchmark, print one table, write bench/results/<host>.json.

Usage: python -m bench [--only xdr,rpc,alloc] [--out PATH]
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

from bench.common import Row, print_table, write_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--only", default="xdr,rpc", help="comma-separated: xdr, rpc")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    rows: list[Row] = []
    if "xdr" in wanted:
        from bench import xdr_codec

        rows += xdr_codec.run()
    if "rpc" in wanted:
        from bench import rpc_null

        rows += rpc_null.run()
    print_table(rows)
    out = args.out or Path("bench/results") / f"{platform.node() or 'host'}.json"
    write_report(rows, out)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
