"""CPU time of every thread of client and server per decoding step and per graph launch.

    python -m bench.thread_cpu [--steps N] [--launches N]

Against a cricket-server subprocess (the GPU's `cuda` when one answers, else sim; thread
isolation, so the session's threads are the server process's), runs the P4 decoding loop
(`bench.driver_remote`) and `bench.graphs`' step captured once and launched N times queued,
and reads each thread's time on a CPU (`bench.step_split.thread_cpu_ns`: /proc schedstat,
kernel time included, waiting not) before and after each part. Prints wall time and each thread's
CPU per step and per launch: what the two ends cost, without a profiler's distortion.
Spinning is off on both ends unless CRICKET_SPIN_US says otherwise.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections import Counter
from collections.abc import Callable

from bench.driver_remote import _local_driver
from bench.server_proc import cricket_server_process
from bench.step_split import thread_cpu_ns


def named_thread_cpu_ns(pid: int) -> Counter[str]:
    """CPU nanoseconds so far of each thread of `pid`, by thread: its Python name in this
    process, else "main" or its thread id (Python does not name the threads it starts)."""
    names = {t.native_id: t.name for t in threading.enumerate()} if pid == os.getpid() else {}
    spent: Counter[str] = Counter()
    for tid, ns in thread_cpu_ns(pid).items():
        spent[names.get(tid) or ("main" if tid == pid else f"thread {tid}")] += ns
    return spent


def _part(
    title: str, per: str, count: int, run: Callable[[], float], server_pid: int
) -> list[str]:
    me = os.getpid()
    client0, server0 = named_thread_cpu_ns(me), named_thread_cpu_ns(server_pid)
    seconds = run()
    client1, server1 = named_thread_cpu_ns(me), named_thread_cpu_ns(server_pid)
    lines = [f"{title}: wall {seconds / count * 1e6:.1f} us per {per}"]
    for side, before, after in (("client", client0, client1), ("server", server0, server1)):
        spent = {name: (after[name] - before.get(name, 0)) / count / 1e3 for name in after}
        total = sum(spent.values())
        for name, us in sorted(spent.items(), key=lambda kv: -kv[1])[:6]:
            if us >= 0.05:
                lines.append(f"  {side} {name}: {us:.1f} us CPU per {per}")
        lines.append(f"  {side} all threads: {total:.1f} us CPU per {per}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.thread_cpu")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--launches", type=int, default=5000)
    args = parser.parse_args(argv)
    os.environ.setdefault("CRICKET_SPIN_US", "0")
    spin = float(os.environ["CRICKET_SPIN_US"])
    backend = "cuda" if _local_driver() is not None else "sim"
    import cricket_client
    from bench.driver_remote import Workload
    from bench.graphs import graph_loop_s
    from cricket_client import driver as cu
    from cricket_client import runtime as rt

    lines = [f"backend {backend}, spin {spin:g} us, thread isolation"]
    with cricket_server_process(backend, isolation="thread", spin_us=spin) as (address, pid):
        conn = cricket_client.connect(address)
        work = Workload(cu)
        work.decoding_loop_s(100)  # warm-up
        lines += _part(
            "P4 decoding loop", "step", args.steps,
            lambda: work.decoding_loop_s(args.steps), pid,
        )  # fmt: skip
        work.close()
        graph_loop_s(cu, rt, 100, token=False)  # warm-up
        lines += _part(
            "graph loop, launches queued", "launch", args.launches,
            lambda: graph_loop_s(cu, rt, args.launches, token=False), pid,
        )  # fmt: skip
        conn.close()
        time.sleep(0.1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
