"""Client CPU of launches: packed by their template against the general path, in one run.

    python -m bench --only launchcpu [--quick]

Against one cricket-server (the GPU's when there is one, else sim; spinning off), the
decoding step of `bench.driver_remote` (4 KiB HtoD, 10 saxpy launches with
`((2.0, x, y, n), (c_float, None, None, c_int))`, 4-byte DtoH) and runs of empty launches are
timed with this thread's CPU clock (time.thread_time: system calls included, waiting not),
rounds alternating between launch templates on (cricket_client.launch_templates) and off
(every launch packed by the general path, as before templates). Medians over rounds, us;
the ratio is templates / general path.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from typing import Any

import numpy as np

from bench.common import Row
from bench.driver_remote import Workload, _local_driver
from bench.server_proc import cricket_server_process
from cricket_client.launch_templates import LaunchTemplates


class _Off(LaunchTemplates):
    """No templates: every launch takes the general path."""

    __slots__ = ()

    def body(self, *args: Any, **kwargs: Any) -> None:
        return None


def _step_parts(cu: Any, w: Workload, steps: int) -> dict[str, float]:
    """Median thread CPU (us) of a step's HtoD, its 10 launches, its DtoH, the whole step."""
    saxpy = cu.cuModuleGetFunction(w.module, b"saxpy")[1]
    x, y = cu.cuMemAlloc(4096)[1], cu.cuMemAlloc(4096)[1]
    host = np.ones(1024, dtype=np.float32)
    token = bytearray(4)
    args = ((2.0, x, y, 1024), (ctypes.c_float, None, None, ctypes.c_int))
    clock = time.thread_time_ns
    spent: dict[str, list[float]] = {"HtoD": [], "10 launches": [], "DtoH": [], "step": []}
    try:
        for _ in range(steps):
            t0 = clock()
            cu.cuMemcpyHtoD(x, host, 4096)
            t1 = clock()
            for _ in range(10):
                cu.cuLaunchKernel(saxpy, 4, 1, 1, 256, 1, 1, 0, 0, args, 0)
            t2 = clock()
            cu.cuMemcpyDtoH(token, y, 4)
            t3 = clock()
            spent["HtoD"].append((t1 - t0) / 1e3)
            spent["10 launches"].append((t2 - t1) / 1e3)
            spent["DtoH"].append((t3 - t2) / 1e3)
            spent["step"].append((t3 - t0) / 1e3)
    finally:
        cu.cuMemFree(x)
        cu.cuMemFree(y)
    return {k: statistics.median(v) for k, v in spent.items()}


def _empty_launch_us(cu: Any, w: Workload, n: int) -> float:
    """Thread CPU (us) per empty launch over `n` of them (then one synchronize, not counted)."""
    stream = cu.CUstream(0)
    clock = time.thread_time_ns
    t0 = clock()
    for _ in range(n):
        cu.cuLaunchKernel(w.empty, 1, 1, 1, 1, 1, 1, 0, stream, 0, 0)
    spent = (clock() - t0) / 1e3 / n
    cu.cuCtxSynchronize()
    return spent


def run(quick: bool = False) -> list[Row]:
    backend = "cuda" if _local_driver() is not None else "sim"
    rounds, steps, empties = (5, 100, 2000) if quick else (11, 300, 10000)
    import cricket_client
    from cricket_client import driver as cu

    on: dict[str, list[float]] = {}
    off: dict[str, list[float]] = {}
    with cricket_server_process(backend, spin_us=0) as (address, _pid):
        conn = cricket_client.connect(address)
        w = Workload(cu)
        templates = conn.launch_templates
        _step_parts(cu, w, 20)  # warm-up: templates made, layouts fetched
        for _ in range(rounds):
            for use, into in ((templates, on), (_Off(), off)):
                conn.launch_templates = use
                parts = _step_parts(cu, w, steps)
                parts["empty launch"] = _empty_launch_us(cu, w, empties)
                for k, v in parts.items():
                    into.setdefault(k, []).append(v)
        conn.launch_templates = templates
        w.close()
        conn.close()
    rows = []
    for name in on:
        new, old = statistics.median(on[name]), statistics.median(off[name])
        what = {"empty launch": "per empty launch", "step": "whole P4 step"}.get(
            name, f"{name} of a P4 step"
        )
        rows.append(Row(f"launch cpu [{backend}]: client thread CPU, {what}, templates", new,
                        "us", "the general path (no templates), same run", old, new / old))
    return rows
