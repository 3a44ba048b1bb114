"""`bench.graphs`' decoding step, this working tree against an older revision in the same run.

    python -m bench.graphs_ab --old REV [--rounds 5] [--steps 2000]

The revision is exported (`git archive`) into a temporary folder; each round runs the loop
once on each tree (ABBA order, each in a fresh process with its own cricket-server started
from that tree), and where a GPU answers locally, the same loop on local cuda-python. Prints
the median microseconds per launch of each variant (wall, and the CPU of the client process
and of the server's process tree over the loop), new/old, and the wall against local.
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
import json, os, sys
import cricket_client
from cricket_client import driver as cu, runtime as rt
from bench.graphs import graph_loop_s
from bench.server_proc import cricket_server_process
from bench.step_split import process_tree_cpu_ns
steps, backend = int(sys.argv[1]), sys.argv[2]
me = os.getpid()
out = {}
with cricket_server_process(backend) as (address, server):
    conn = cricket_client.connect(address)
    try:
        graph_loop_s(cu, rt, 50, token=True)
        for k, t in KINDS.items():
            cpu = []
            for n in (1, steps + 1):  # the loop's CPU: less that of setting it up
                c, s = process_tree_cpu_ns(me), process_tree_cpu_ns(server)
                wall = graph_loop_s(cu, rt, n, token=t)
                cpu.append((process_tree_cpu_ns(me) - c, process_tree_cpu_ns(server) - s))
            out[k] = wall
            out[k + " client cpu"] = (cpu[1][0] - cpu[0][0]) / 1e9
            out[k + " server cpu"] = (cpu[1][1] - cpu[0][1]) / 1e9
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
        cwd=tree, env=env, capture_output=True, text=True,
    )
    if done.returncode:
        raise RuntimeError(f"the graph loop failed on {tree}:\n{done.stderr[-4000:]}")
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
    what = [*KINDS] + [f"{k} {end} cpu" for k in KINDS for end in ("client", "server")]
    times: dict[str, dict[str, list[float]]] = {
        v: {k: [] for k in what} for v in ("old", "new", "local")
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
    for k in what:
        o, n = statistics.median(times["old"][k]), statistics.median(times["new"][k])
        line = f"  {k:18s} old {o * 1e6 / args.steps:8.1f} us/launch  new "
        line += f"{n * 1e6 / args.steps:8.1f} us/launch  new/old {n / o:.3f}"
        if times["local"][k]:
            loc = statistics.median(times["local"][k])
            line += f"  local {loc * 1e6 / args.steps:.1f} us  old/local {o / loc:.2f}"
            line += f"  new/local {n / loc:.2f} (target <= 1.2)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
