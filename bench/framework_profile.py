"""Where a framework loop's step goes in Python, at both ends: cProfile of the program's
thread and of the server's connection thread.

    CRICKET_SPIN_US=0 python -m bench.framework_profile LOOP [--steps N] [--out DIR]

Runs loop LOOP of `bench.framework_calls` (torch, cupy, torch-conv, ...) unmodified under
`cricket-run` against a fresh cricket-server (cuda, thread isolation, spinning off) whose
connection threads run under cProfile (`bench.profile_calls.profiled_server`); the program
profiles its own timed steps (the framework, the native library's entries, the Python
client: all on its thread). Writes DIR/client.txt and DIR/server.txt, the top functions by
own and by cumulative time. cProfile's own cost inflates the absolute times: read the
shares and the calls per step. Needs a GPU and the framework.
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from bench.framework_calls import LOOPS, ROOT
from bench.profile_calls import _report, profiled_server

WARMUP = 50

_PROGRAM = """
import cProfile, sys, time
{setup}
steps, dump = int(sys.argv[1]), sys.argv[2]
for _ in range({warmup}):
    {step}
profile = cProfile.Profile()
t0 = time.perf_counter()
profile.enable()
for _ in range(steps):
    {step}
profile.disable()
print("profiled", (time.perf_counter() - t0) / steps * 1e6)
profile.dump_stats(dump)
"""


def program_text(name: str) -> str:
    """The program of loop `name` that profiles its own steps into the file argv[2]."""
    setup, step = LOOPS[name]
    return textwrap.dedent(_PROGRAM).format(setup=setup, step=step, warmup=WARMUP)


def profile(name: str, steps: int, out: Path, backend: str = "cuda") -> float:
    """Write out/client.txt and out/server.txt for `steps` steps of loop `name` against a
    server on `backend`; the profiled step's wall time in us."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        program, client_dump = work / "loop.py", work / "client.prof"
        program.write_text(program_text(name))
        with profiled_server(backend, str(work / "server.prof")) as address:
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # remote only: no local GPU
            done = subprocess.run(
                [sys.executable, "-m", "cricket_client.run", "--server", address, "--",
                 sys.executable, str(program), str(steps), str(client_dump)],
                capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
            )  # fmt: skip
        if done.returncode != 0 or "profiled" not in done.stdout:
            raise RuntimeError(f"{name}: exit {done.returncode}: {done.stderr[-1500:]}")
        step_us = float(done.stdout.split("profiled")[-1].split()[0])
        head = f"{name}: {step_us:.1f} us a step, profiled\n"
        (out / "client.txt").write_text(
            head + _report(pstats.Stats(str(client_dump)), f"{name} client", steps)
        )
        dumps = sorted(work.glob("server.prof.*"), key=lambda p: -p.stat().st_size)
        (out / "server.txt").write_text(
            head + _report(pstats.Stats(str(dumps[0])), f"{name} server connection", steps)
        )
    return step_us


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.framework_profile")
    parser.add_argument("loop", choices=sorted(LOOPS))
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("bench/results/profile"))
    args = parser.parse_args(argv)
    os.environ.setdefault("CRICKET_SPIN_US", "0")
    step_us = profile(args.loop, args.steps, args.out)
    print(f"{args.loop}: {step_us:.1f} us a step profiled; wrote {args.out}/client.txt and "
          "server.txt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
