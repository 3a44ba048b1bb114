"""Copies of this tree against another's, in the same minutes (A/B).

`python -m bench.copy_ab OLD_TREE [--rounds 3] [--paths auto] [--sizes 4K,64K,1M]
[--sustained]` runs `python -m bench.copy_sizes` alternately in OLD_TREE (a checkout or
`git archive` of the commit to compare with: its client and server; for `--sustained` copy
this tree's bench/copy_sizes.py into it) and in this tree, each in a process of
its own with its own cricket-server, and prints per path, direction and size the median time
of each, new against old, and the median ratio to local of each (local is measured in every
run, so each ratio has its own same-minute baseline).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
_CELL = re.compile(r"([0-9.]+) GB/s \(([0-9]+) us\)(?: ([0-9.]+)x)?")
_SIZE = re.compile(r"(HtoD|DtoH) ([0-9]+) (KiB|MiB|B)")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}
Cells = dict[tuple[str, str, int], tuple[float, float | None]]  # (label, dir, size) -> (us, x)


def parse(table: str) -> Cells:
    """The markdown table `bench.copy_sizes` prints: (label, direction, size) -> (us, ratio to
    local or None)."""
    lines = [ln for ln in table.splitlines() if ln.startswith("| ")]
    heads = [h.strip() for h in lines[0].strip("|").split("|")][1:]
    columns = []
    for head in heads:
        m = _SIZE.fullmatch(head)
        if m is None:
            raise ValueError(f"copy_ab: column {head!r} is not 'HtoD/DtoH <size>'")
        columns.append((m[1], int(m[2]) * _UNITS[m[3]]))
    out: Cells = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        label = cells[0]
        for (direction, size), cell in zip(columns, cells[1:], strict=True):
            m = _CELL.match(cell)
            if m is None:
                continue
            gbps = float(m[1])
            us = size / (gbps * 1e9) * 1e6 if gbps > 0 else float(m[2])
            out[(label, direction, size)] = (us, float(m[3]) if m[3] else None)
    return out


def run_once(tree: Path, paths: str, sizes: str, extra: list[str]) -> Cells:
    done = subprocess.run(
        [sys.executable, "-m", "bench.copy_sizes", "--paths", paths, "--sizes", sizes, *extra],
        cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"copy_ab: bench.copy_sizes in {tree} failed:\n{done.stderr[-3000:]}")
    return parse(done.stdout)


def _label(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.copy_ab")
    parser.add_argument("old", type=Path, help="the tree to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--paths", default="auto")
    parser.add_argument("--sizes", default="4K,64K,1M")
    parser.add_argument("--sustained", action="store_true")
    args = parser.parse_args(argv)
    extra = ["--sustained"] if args.sustained else []
    runs: dict[str, list[Cells]] = {"old": [], "new": []}
    for i in range(args.rounds):
        order = [("old", args.old), ("new", HERE)] if i % 2 == 0 else [("new", HERE), ("old", args.old)]
        for name, tree in order:
            runs[name].append(run_once(tree, args.paths, args.sizes, extra))
    keys = [k for k in runs["new"][0] if k[0].startswith("remote ")]
    how = "sustained HtoD" if args.sustained else "one copy timed alone"
    print(f"{args.rounds} rounds, alternating, {how}; medians; old = {args.old}, new = {HERE}\n")
    print("| path | copy | old us | new us | new speed / old | old x local | new x local |")
    print("|---|---|---|---|---|---|---|")
    for key in keys:
        label, direction, size = key

        def med(name: str, i: int, key: tuple[str, str, int] = key) -> float | None:
            values = [r[key][i] for r in runs[name] if key in r and r[key][i] is not None]
            return statistics.median(values) if values else None  # type: ignore[type-var]

        old_us, new_us = med("old", 0), med("new", 0)
        old_x, new_x = med("old", 1), med("new", 1)
        speed = f"{old_us / new_us:.2f}x" if old_us and new_us else "-"
        print(
            f"| {label[7:]} | {direction} {_label(size)} | {old_us or 0:.1f} | {new_us or 0:.1f} "
            f"| {speed} | {old_x or 0:.2f} | {new_x or 0:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
