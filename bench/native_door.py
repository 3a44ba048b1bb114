"""The native door's cost: the same calls through the native libcuda.so.1 (from C, and from
cuda.bindings loading it) against cricket_client.driver called directly, on one server.

    python -m bench --only native

Rows: cuDeviceGetAttribute median through each path, the native path's overhead over the
Python client (cuda.bindings through the library against cricket_client.driver in one process,
over one connection, in alternating rounds: target at most 2 us on the GPU machine; the C
caller runs in a process of its own, so its difference also holds run-to-run noise), and
empty launches per second through
the native library, from C and from cuda.bindings, against the Python client (and against local
cuda-python where a GPU answers; target at least 0.5x local).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from bench.common import Row, median_latency_us
from bench.driver_remote import CUBIN, Workload
from bench.server_proc import cricket_server

HERE = Path(__file__).resolve().parent
CALLS = 5000
LAUNCHES = 20000

# In one process and over one connection (the library's calls and the Python client's share
# the default session), alternating rounds: the difference is the native path's own cost.
_BINDINGS = textwrap.dedent(
    """
    import json, statistics, sys, time
    from cuda.bindings import driver as cu
    from cricket_client import driver as py
    cu.cuInit(0)
    err, dev = cu.cuDeviceGet(0)
    attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    pattr, pdev = py.CUdevice_attribute(int(attr)), py.CUdevice(0)
    calls = {"bindings": lambda: cu.cuDeviceGetAttribute(attr, dev),
             "python": lambda: py.cuDeviceGetAttribute(pattr, pdev)}
    samples = {name: [] for name in calls}
    clock = time.perf_counter_ns
    for round in range(int(sys.argv[1]) // 100 + 2):
        for name, fn in calls.items():
            for _ in range(100):
                t0 = clock()
                fn()
                if round >= 2:
                    samples[name].append(clock() - t0)
    out = {name: statistics.median(s) / 1000 for name, s in samples.items()}
    sys.path.insert(0, sys.argv[2])
    from bench.driver_remote import Workload
    work = Workload(cu)  # empty launches from cuda.bindings through the library
    work.launch_rate(1000)
    out["launch_rate"] = statistics.median(work.launch_rate(int(sys.argv[3])) for _ in range(3))
    print(json.dumps(out))
    """
)


def _native_c(env: dict[str, str]) -> dict[str, float] | None:
    if shutil.which("gcc") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "native_calls")
        subprocess.run(["gcc", "-O2", "-o", binary, str(HERE / "native_calls.c"), "-ldl"], check=True)
        out = subprocess.run(
            [binary, str(CUBIN), str(CALLS), str(LAUNCHES)], env=env, capture_output=True,
            text=True, timeout=600, check=True,
        )  # fmt: skip
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _native_bindings(env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _BINDINGS, str(CALLS), str(HERE.parent), str(LAUNCHES)], env=env,
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _local_launch_rate() -> float | None:
    from cricket_server.backends.cuda import gpu_available

    if not gpu_available():
        return None
    from cuda.bindings import driver as local

    return Workload(local).launch_rate(LAUNCHES)


def run(backend: str = "auto") -> list[Row]:
    import cricket_client
    from cricket_client import driver as remote
    from cricket_client.native import native_environment

    rows: list[Row] = []
    with cricket_server(backend) as address:
        env = native_environment()
        env["REMOTE_GPU_ADDRESS"] = address
        env.pop("CUDA_VISIBLE_DEVICES", None)
        conn = cricket_client.connect(address)
        try:
            work = Workload(remote)
            dev = remote.CUdevice(0)
            attr = remote.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
            python = median_latency_us(lambda: remote.cuDeviceGetAttribute(attr, dev), CALLS)
            python_rate = work.launch_rate(LAUNCHES)
        finally:
            conn.close()
        base = python["median_us"]
        rows.append(Row("native: cuDeviceGetAttribute, Python client", base, "us"))
        both = _native_bindings(env)
        rows.append(Row(
            "native: cuDeviceGetAttribute, cuda.bindings", both["bindings"], "us",
            "Python client, same process", both["python"], both["bindings"] / both["python"],
            "overhead <= 2 us", extra={"overhead_us": both["bindings"] - both["python"]},
        ))  # fmt: skip
        rows.append(Row(
            "native: overhead over the Python client", both["bindings"] - both["python"], "us",
            target="<= 2 us",
        ))  # fmt: skip
        c = _native_c(env)
        if c is not None:
            rows.append(Row(
                "native: cuDeviceGetAttribute, C caller", c["attribute_median_us"], "us",
                "Python client", base, c["attribute_median_us"] / base,
                extra={"overhead_us": c["attribute_median_us"] - base},
            ))  # fmt: skip
        local = _local_launch_rate()
        if c is not None:
            rows.append(Row(
                "native: empty launches from C", c["launch_rate"], "1/s",
                "local" if local else "Python client", local or python_rate,
                c["launch_rate"] / (local or python_rate), ">= 0.5x local",
            ))  # fmt: skip
        rows.append(Row(
            "native: empty launches from cuda.bindings", both["launch_rate"], "1/s",
            "local" if local else "Python client", local or python_rate,
            both["launch_rate"] / (local or python_rate), ">= 0.5x local",
        ))  # fmt: skip
    return rows
