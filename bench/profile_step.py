"""Where the decoding step's wall time goes at both ends, by stack sampling (no cProfile).

    python -m bench.profile_step [--backend cuda] [--steps N] [--launches N] [--out DIR]

Starts cricket-server (the GPU's `cuda` when asked, else sim; thread isolation, so that the
session runs in the sampled process) under `bench.stack_sampler`,
runs here the P4 decoding loop (`bench.driver_remote`: 4 KiB HtoD, 10 saxpy launches, 4-byte
DtoH per step) for N steps and then `bench.graphs`' step captured once and launched N times
queued, each part with this process sampled too, and writes DIR/client-step.txt,
DIR/client-graph.txt and DIR/server.txt (the server's threads over both parts; the two
parts' wall times are at the top of each client file). Spinning is off on both ends unless
CRICKET_SPIN_US says otherwise.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench.server_proc import cricket_server_process
from bench.stack_sampler import Sampler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_step")
    parser.add_argument("--backend", default="sim", choices=("sim", "cuda"))
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--launches", type=int, default=2000, help="graph launches")
    parser.add_argument("--interval-us", type=float, default=1000.0)
    parser.add_argument("--out", type=Path, default=Path("bench/results/profile-step"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CRICKET_SPIN_US", "0")
    spin = float(os.environ["CRICKET_SPIN_US"])
    import cricket_client
    from bench.driver_remote import Workload
    from bench.graphs import graph_loop_s
    from cricket_client import driver as cu
    from cricket_client import runtime as rt

    server_file = (args.out / "server.txt").resolve()
    # thread isolation: the session runs in the sampled process (a worker process would not)
    sampled = ("-m", "bench.stack_sampler", "--out", str(server_file), "-m", "cricket_server")
    with cricket_server_process(
        args.backend, isolation="thread", spin_us=spin, runner=sampled
    ) as (address, _pid):
        cricket_client.connect(address)
        work = Workload(cu)
        work.decoding_loop_s(100)  # warm-up
        sampler = Sampler(args.interval_us / 1e6).start()
        seconds = work.decoding_loop_s(args.steps)
        sampler.stop()
        (args.out / "client-step.txt").write_text(
            f"P4 loop: {args.steps} steps, {seconds / args.steps * 1e6:.1f} us per step\n"
            + sampler.report()
        )
        work.close()
        graph_loop_s(cu, rt, 100, token=False)  # warm-up
        sampler = Sampler(args.interval_us / 1e6).start()
        seconds = graph_loop_s(cu, rt, args.launches, token=False)
        sampler.stop()
        (args.out / "client-graph.txt").write_text(
            f"graph loop: {args.launches} queued launches, "
            f"{seconds / args.launches * 1e6:.1f} us per launch\n" + sampler.report()
        )
        time.sleep(1.5)  # the server's report is rewritten every second
    print(f"wrote {args.out}/client-step.txt, client-graph.txt, server.txt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
