"""Where a framework loop's step goes: wall, the client's CPU and the server's CPU per step.

    CRICKET_SPIN_US=0 python -m bench.framework_split [--steps N] [--only torch ...]

Each loop of `bench.framework_calls` (CuPy, PyTorch, numba-cuda, cuda.core: a small kernel
and a small read per step) runs unmodified locally and under `cricket-run` against a fresh
cricket-server (thread isolation, spinning off, the GPU hidden from the program), and
measures itself: after a warm-up, the step's wall time, the program's CPU (every thread of
its process: the framework, the native library, the Python client) and the server's CPU
(every thread of the server and its workers, `bench.step_split.process_tree_cpu_ns`, read
while the connection lives; it
includes the driver's spinning while the GPU runs). A server thread's CPU leaves /proc with
its connection, and a whole program's CPU is dominated by its imports: hence the reading
inside the timed loop. Needs a GPU and the frameworks (a missing one is reported).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from bench.framework_calls import LOOPS, ROOT
from bench.server_proc import cricket_server_process

WARMUP = 50

_PROGRAM = """
import os, sys, time
sys.path.insert(0, {root!r})
from bench.step_split import process_tree_cpu_ns
def server_ns(pid):
    return process_tree_cpu_ns(pid) if pid else 0
server = int(os.environ.get("CRICKET_BENCH_SERVER_PID", "0"))
{setup}
steps = int(sys.argv[1])
for _ in range({warmup}):
    {step}
s0, c0, t0 = server_ns(server), time.process_time(), time.perf_counter()
for _ in range(steps):
    {step}
t1, c1, s1 = time.perf_counter(), time.process_time(), server_ns(server)
print("split", (t1 - t0) / steps * 1e6, (c1 - c0) / steps * 1e6, (s1 - s0) / steps / 1e3)
"""


def program_text(name: str) -> str:
    """The program of loop `name` that times itself (see the module docstring)."""
    setup, step = LOOPS[name]
    return textwrap.dedent(_PROGRAM).format(root=str(ROOT), setup=setup, step=step, warmup=WARMUP)


def split_of(args: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall, client CPU, server CPU) in us per step, as the program printed them."""
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if done.returncode != 0 or "split" not in done.stdout:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr[-1500:]}")
    wall, client, server = done.stdout.split("split")[-1].split()[:3]
    return float(wall), float(client), float(server)


def run(steps: int, only: list[str] | None = None) -> list[str]:
    """A line per loop and side (local, remote)."""
    lines = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        cricket_server_process("cuda", isolation="thread", spin_us=0) as (address, pid),
    ):
        for name in only or sorted(LOOPS):
            program = Path(tmp) / f"loop_{name.replace('-', '_').replace('.', '_')}.py"
            program.write_text(program_text(name))
            local_args = [sys.executable, str(program), str(steps)]
            remote_args = [sys.executable, "-m", "cricket_client.run", "--server", address,
                           "--", *local_args]  # fmt: skip
            remote_env = {**os.environ, "CUDA_VISIBLE_DEVICES": "",
                          "CRICKET_BENCH_SERVER_PID": str(pid)}  # fmt: skip
            for side, args, env in (("local", local_args, dict(os.environ)),
                                    ("remote", remote_args, remote_env)):  # fmt: skip
                try:
                    wall, client, server = split_of(args, env)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    lines.append(f"{name} {side}: not measured: {str(exc)[-300:]}")
                    continue
                lines.append(f"{name} {side}: wall {wall:.1f} us a step, client CPU {client:.1f}"
                             + (f", server CPU {server:.1f}" if side == "remote" else ""))  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.framework_split")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--only", choices=sorted(LOOPS), action="append")
    args = parser.parse_args(argv)
    os.environ.setdefault("CRICKET_SPIN_US", "0")
    for line in run(args.steps, args.only):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
