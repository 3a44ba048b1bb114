"""Where a small synchronous call's microseconds go: cProfile at each end.

    python -m bench.profile_calls [--calls N] [--out DIR]   (CRICKET_PROFILE_NULL=1: NULL calls)
    python -m bench.profile_calls --step [--calls N] [--out DIR]   (N decoding steps)

Starts cricket-server (sim, thread isolation) in a subprocess whose connection threads run
under cProfile, makes N calls each of cuCtxGetDevice, cuMemGetInfo and cuDeviceGetAttribute
from this process under cProfile, and writes DIR/client.txt and DIR/server.txt (the top
functions by internal and by cumulative time; cProfile's own overhead inflates the absolute
times, the call counts and the shares are what to read).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.server_proc import cricket_server_process


def _report(stats: pstats.Stats, title: str, calls: int) -> str:
    out = io.StringIO()
    total_tt, total_calls = stats.total_tt, stats.total_calls  # type: ignore[attr-defined]
    python = sum(nc for (file, _, _), (_, nc, *_) in stats.stats.items() if file != "~")  # type: ignore[attr-defined]
    out.write(f"{title}: {calls} calls; per call: {total_tt / calls * 1e6:.1f} us profiled, "
              f"{python / calls:.1f} Python functions, {total_calls / calls:.1f} function "
              "calls with builtins\n")
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(30)
    return out.getvalue()


def _serve_profiled(out: str) -> None:
    """The server's main, with every connection thread profiled into `out`.<id>; it returns
    once every such profile is written whole (a connection's thread writes its profile after
    the server has forgotten the connection, so its shutdown does not wait for that)."""
    from cricket_xdr.rpc import server

    original = server._Connection.serve
    profiling: list[threading.Thread] = []

    def serve(self: server._Connection) -> None:
        profiling.append(threading.current_thread())
        prof = cProfile.Profile()
        prof.enable()
        try:
            original(self)
        finally:
            prof.disable()
            prof.dump_stats(f"{out}.{self.info.id}")

    server._Connection.serve = serve  # type: ignore[method-assign]
    from cricket_server.cli import main

    try:
        main(prog_name="cricket-server")
    finally:
        for thread in profiling:
            thread.join()


@contextmanager
def profiled_server(backend: str, dump: str) -> Iterator[str]:
    """`cricket_server_process` (thread isolation) whose connection threads run under
    cProfile, each writing `dump`.<id>; yields the address. Every profile is written whole
    once the context has exited (the server stopped)."""
    runner = ("-m", "bench.profile_calls", "--serve", dump)
    with cricket_server_process(backend, isolation="thread", runner=runner) as (address, _pid):
        yield address


def write_reports(out: Path, client: cProfile.Profile, n: int, head: str) -> None:
    """out/client.txt and out/server.txt: each end's report for `n` calls."""
    (out / "client.txt").write_text(f"{head}\n" + _report(pstats.Stats(client), "client", n))
    for path in sorted(out.glob("server.prof.*")):
        text = _report(pstats.Stats(str(path)), f"server connection {path.suffix[1:]}", n)
        (out / "server.txt").write_text(text)
        path.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_calls")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--out", type=Path, default=Path("bench/results/profile"))
    parser.add_argument(
        "--step", action="store_true",
        help="profile N steps of the driver bench's decoding loop (P4) instead",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    dump = str(args.out.resolve() / "server.prof")
    import cricket_client
    from cricket_client import driver as cu

    with profiled_server("sim", dump) as address:
        measure = _client_steps if args.step else _client_calls
        n, wall, prof = measure(address, args.calls, cricket_client, cu)
    write_reports(args.out, prof, n, f"wall {wall / n * 1e6:.1f} us per call")
    print(f"wrote {args.out}/client.txt and server.txt")
    return 0


def _client_calls(
    address: str, calls: int, cricket_client: Any, cu: Any
) -> tuple[int, float, cProfile.Profile]:
    """(calls made, seconds, profile) of `calls` of each measured call, after a warm-up."""
    conn = cricket_client.connect(address)
    try:
        assert cu.cuInit(0)[0] == 0
        _err, dev = cu.cuDeviceGet(0)
        _err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
        cu.cuCtxSetCurrent(ctx)
        attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        fns: tuple[Any, ...] = (
            cu.cuCtxGetDevice, cu.cuMemGetInfo, lambda: cu.cuDeviceGetAttribute(attr, dev)
        )
        if os.environ.get("CRICKET_PROFILE_NULL"):  # the floor: NULL, three times as many
            rpc, proto = conn._rpc, conn.proto
            fns = (lambda: rpc.call(proto.CRICKET_PROG, proto.CRICKET_V1, 0, b""),) * 3
        for fn in fns:
            for _ in range(200):
                fn()
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        for fn in fns:
            for _ in range(calls):
                fn()
        prof.disable()
        wall = time.perf_counter() - t0
    finally:
        conn.close()
    return calls * len(fns), wall, prof


def _client_steps(
    address: str, steps: int, cricket_client: Any, cu: Any
) -> tuple[int, float, cProfile.Profile]:
    """(steps made, seconds, profile) of `steps` decoding steps (bench.driver_remote), after a
    warm-up; a "call" in the reports is one step."""
    from bench.driver_remote import Workload

    conn = cricket_client.connect(address)
    try:
        work = Workload(cu)
        work.decoding_loop_s(200)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        work.decoding_loop_s(steps)
        prof.disable()
        wall = time.perf_counter() - t0
        work.close()
    finally:
        conn.close()
    return steps, wall, prof


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        dump_to = sys.argv[2]
        sys.argv = ["cricket-server", *sys.argv[3:]]
        _serve_profiled(dump_to)
    else:
        sys.exit(main())
