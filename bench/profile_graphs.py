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
import sys
from pathlib import Path

from bench.profile_calls import profiled_server, write_reports


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

    with profiled_server(args.backend, dump) as address:
        conn = cricket_client.connect(address)
        try:
            graph_loop_s(cu, rt, 100, token=args.token)  # warm-up
            prof = cProfile.Profile()
            prof.enable()
            seconds = graph_loop_s(cu, rt, args.launches, token=args.token)
            prof.disable()
        finally:
            conn.close()
    n = args.launches
    write_reports(args.out, prof, n, f"wall {seconds / n * 1e6:.1f} us per launch")
    print(f"wrote {args.out}/client.txt and server.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
