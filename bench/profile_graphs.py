"""Where one cuGraphLaunch's microseconds go: cProfile at each end (client and a sim server
in separate processes; sim unless --backend says otherwise).

    python -m bench.profile_graphs [--launches N] [--token] [--backend cuda] [--out DIR]

Runs `bench.graphs`' decoding step (a 4 KiB host-to-device memcpy node, 10 saxpy kernels and,
with --token, a 4-byte device-to-host memcpy node waited for each step) captured once and
launched N times, the client under cProfile, the server's connection threads under cProfile
(`bench.profile_calls`' server), and writes DIR/client.txt and DIR/server.txt: per launch,
the top functions by internal and by cumulative time. cProfile inflates the absolute times;
read the call counts and the shares.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.profile_calls import _report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_graphs")
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--token", action="store_true", help="copy 4 bytes back, wait each step")
    parser.add_argument("--backend", default="sim", choices=("sim", "cuda"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/profile-graphs"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    dump = str(args.out.resolve() / "server.prof")
    import cricket_client
    from bench.graphs import graph_loop_s
    from cricket_client import driver as cu
    from cricket_client import runtime as rt

    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready")
        server_args = ["--backend", args.backend, "--isolation", "thread", "--ready-file", ready,
                       "--log-level", "warning", "--listen", "127.0.0.1:0"]  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.profile_calls", "--serve", dump, *server_args]
        )
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(ready):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("cricket-server did not start")
                time.sleep(0.02)
            conn = cricket_client.connect(Path(ready).read_text().strip())
            try:
                graph_loop_s(cu, rt, 100, token=args.token)  # warm-up
                prof = cProfile.Profile()
                prof.enable()
                seconds = graph_loop_s(cu, rt, args.launches, token=args.token)
                prof.disable()
            finally:
                conn.close()
            deadline = time.monotonic() + 30
            while not any(p.name.startswith("server.prof.") for p in args.out.iterdir()):
                if time.monotonic() > deadline:
                    raise RuntimeError("the server wrote no profile")
                time.sleep(0.1)
            time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(10)
    n = args.launches
    text = _report(pstats.Stats(prof), "client", n)
    (args.out / "client.txt").write_text(f"wall {seconds / n * 1e6:.1f} us per launch\n" + text)
    for path in sorted(args.out.glob("server.prof.*")):
        text = _report(pstats.Stats(str(path)), f"server connection {path.suffix[1:]}", n)
        (args.out / "server.txt").write_text(text)
        path.unlink()
    print(f"wrote {args.out}/client.txt and server.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
