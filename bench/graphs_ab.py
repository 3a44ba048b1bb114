"""`bench.graphs`' decoding step, this working tree against an older revision in the same run.

    python -m bench.graphs_ab --old REV [--rounds 5] [--steps 2000]

The revision is exported (`git archive`) into a temporary folder; each round runs the loop
once on each tree (ABBA order, each in a fresh process with its own cricket-server started
from that tree), and where a GPU answers locally, the same loop on local cuda-python. Prints
the median seconds per variant, new/old, and each against local.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"token": True, "queued": False}
_CHILD = """
import json, sys
import cricket_client
from cricket_client import driver as cu, runtime as rt
from bench.graphs import graph_loop_s
from bench.server_proc import cricket_server
steps, backend = int(sys.argv[1]), sys.argv[2]
with cricket_server(backend) as address:
    conn = cricket_client.connect(address)
    try:
        graph_loop_s(cu, rt, 50, token=True)
        out = {k: graph_loop_s(cu, rt, steps, token=t) for k, t in KINDS.items()}
    finally:
        conn.close()
print(json.dumps(out))
""".replace("KINDS", repr(KINDS))


def _export(rev: str, into: Path) -> None:
    data = subprocess.run(
        ["git", "archive", "--format=tar", rev], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")


def _remote(tree: Path, steps: int, backend: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(steps), backend],
        cwd=tree, env=env, check=True, capture_output=True, text=True,
    )
    return {k: float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.graphs_ab")
    parser.add_argument("--old", required=True, help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args(argv)
    from bench.driver_remote import _local_driver

    local_cu = _local_driver()
    backend = "cuda" if local_cu is not None else "sim"
    times: dict[str, dict[str, list[float]]] = {
        v: {k: [] for k in KINDS} for v in ("old", "new", "local")
    }
    with tempfile.TemporaryDirectory(prefix="cricket-ab-") as tmp:
        old = Path(tmp)
        _export(args.old, old)
        trees = {"old": old, "new": ROOT}
        for r in range(args.rounds):
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            for variant in order:
                for k, s in _remote(trees[variant], args.steps, backend).items():
                    times[variant][k].append(s)
            if local_cu is not None:
                from cuda.bindings import runtime as local_rt

                from bench.graphs import graph_loop_s

                for k, t in KINDS.items():
                    times["local"][k].append(graph_loop_s(local_cu, local_rt, args.steps, token=t))
    print(f"graphs A/B [{backend}], {args.steps} launches, medians of {args.rounds} rounds "
          f"(old = {args.old}, new = working tree)")
    for k in KINDS:
        o, n = statistics.median(times["old"][k]), statistics.median(times["new"][k])
        line = f"  {k:7s} old {o * 1e6 / args.steps:8.1f} us/launch  new {n * 1e6 / args.steps:8.1f}"
        line += f" us/launch  new/old {n / o:.3f}"
        if times["local"][k]:
            loc = statistics.median(times["local"][k])
            line += f"  local {loc * 1e6 / args.steps:.1f} us  old/local {o / loc:.2f}"
            line += f"  new/local {n / loc:.2f} (target <= 1.2)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
