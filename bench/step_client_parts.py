"""The client's share of each part of the decoding step: wall and CPU time per part.

    python -m bench.step_client_parts [--backend cuda|sim] [--steps N] [--profile]

Runs the P4 step (`bench.driver_remote`: a 4 KiB HtoD, 10 saxpy launches, a 4-byte DtoH)
with local cuda-python where a GPU answers, then twice against a fresh cricket-server, and
prints per part the wall time and this thread's CPU time (time.thread_time: system calls
included, waiting not) in us per step. `--profile` adds a cProfile of the remote steps (its
own cost inflates every part about threefold; read it for proportions only). Spinning is
off unless CRICKET_SPIN_US says otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import io
import os
import pstats
import time
from types import ModuleType

import numpy as np

from bench.driver_remote import Workload, _local_driver, _ok
from bench.server_proc import cricket_server_process

WARMUP = 100


def step_parts(cu: ModuleType, steps: int, profile: bool = False) -> str:
    """Lines of us per step of each part (and the profile) over `steps` steps of `cu`."""
    work = Workload(cu)
    saxpy = _ok(cu.cuModuleGetFunction(work.module, b"saxpy"))
    n = 1024
    x, y = _ok(cu.cuMemAlloc(4 * n)), _ok(cu.cuMemAlloc(4 * n))
    host = np.ones(n, dtype=np.float32)
    token = bytearray(4)
    args = ((2.0, x, y, n), (ctypes.c_float, None, None, ctypes.c_int))
    wall, cpu = [0.0] * 3, [0.0] * 3
    profiler = cProfile.Profile() if profile else None
    for i in range(steps + WARMUP):
        if i == WARMUP and profiler is not None:
            profiler.enable()
        marks = [(time.perf_counter(), time.thread_time())]
        _ok(cu.cuMemcpyHtoD(x, host, host.nbytes))
        marks.append((time.perf_counter(), time.thread_time()))
        for _ in range(10):
            cu.cuLaunchKernel(saxpy, n // 256, 1, 1, 256, 1, 1, 0, 0, args, 0)
        marks.append((time.perf_counter(), time.thread_time()))
        _ok(cu.cuMemcpyDtoH(token, y, 4))
        marks.append((time.perf_counter(), time.thread_time()))
        if i >= WARMUP:
            for k in range(3):
                wall[k] += marks[k + 1][0] - marks[k][0]
                cpu[k] += marks[k + 1][1] - marks[k][1]
    if profiler is not None:
        profiler.disable()
    cu.cuMemFree(x)
    cu.cuMemFree(y)
    work.close()
    per = steps / 1e6
    lines = [
        f"  {what} us: htod {t[0] / per:.1f} launches {t[1] / per:.1f} dtoh {t[2] / per:.1f} "
        f"step {sum(t) / per:.1f}"
        for what, t in (("wall", wall), ("cpu ", cpu))
    ]
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(35)
        lines.append(out.getvalue())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_client_parts")
    parser.add_argument("--backend", default="cuda", choices=("cuda", "sim"))
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("CRICKET_SPIN_US", "0")
    local = _local_driver() if args.backend == "cuda" else None
    if local is not None:
        print("local cuda-python\n" + step_parts(local, args.steps))
    import cricket_client
    from cricket_client import driver as remote

    with cricket_server_process(args.backend, spin_us=0) as (address, _pid):
        cricket_client.connect(address)
        for run in ("remote", "remote again"):
            print(f"{run} [{args.backend}]\n" + step_parts(remote, args.steps))
        if args.profile:
            print(f"remote [{args.backend}], profiled\n" + step_parts(remote, args.steps, True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
