"""A decoding-style loop captured once in a CUDA graph and launched many times, remote against
local cuda-python in the same run (issue 13: within 1.2x of the same graph launched locally).

The step is the decoding loop of `bench.driver_remote` as a graph: a 4 KiB host-to-device copy
of the step's input (a host memory node, so every launch sends the input's current bytes),
10 small saxpy kernels, and a 4-byte device-to-host copy of the token (so each launch returns
it, as the next step of a decoder depends on it). Captured once with cuStreamBeginCapture,
instantiated once, launched `steps` times (2,000; 200 with --quick), and the same graph on
local cuda-python in the same run (local and remote in turn, medians of 3). Where no GPU answers the remote side runs on sim
and there is no local baseline.

Two variants: "queued" (launches back to back, one wait at the end) is the must-show (within
1.2x of local); "token" (the 4-byte copy back and a wait at every step, as a decoder that
needs its token) is information: each step is a round trip over the network, which a local
launch never pays, so it cannot come near 1.2x of local on a small graph.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from pathlib import Path
from types import ModuleType

import numpy as np

from bench.common import Row
from bench.server_proc import cricket_server

CUBIN = Path(__file__).parents[1] / "tests" / "kernels" / "test_kernels.sm_90.cubin"
STEPS = 2000
REPEATS = 3  # medians of local and remote runs in turn (one run each with --quick)
LAUNCHES = 10
N = 1024


def _ok(result):
    err = result[0]
    if int(err) != 0:
        raise RuntimeError(f"CUDA call failed: {err!r}")
    return result[1] if len(result) == 2 else result[1:]


def graph_loop_s(
    cu: ModuleType,
    rt: ModuleType,
    steps: int,
    launches: int = LAUNCHES,
    n: int = N,
    token: bool = True,
) -> float:
    """Seconds for `steps` launches of the captured step (capture and instantiate excluded).
    With `token` each step copies 4 bytes back and waits for them (a decoder's next step needs
    its token); without, the launches are queued back to back and waited for once."""
    _ok(cu.cuInit(0))
    ctx = _ok(cu.cuDevicePrimaryCtxRetain(_ok(cu.cuDeviceGet(0))))
    _ok(cu.cuCtxSetCurrent(ctx))
    module = _ok(cu.cuModuleLoadData(CUBIN.read_bytes()))
    saxpy = _ok(cu.cuModuleGetFunction(module, b"saxpy"))
    x, y = _ok(cu.cuMemAlloc(4 * n)), _ok(cu.cuMemAlloc(4 * n))
    # host memory of graph nodes: page-locked (cudaMallocHost), as graphs want it
    host_addr, out_addr = _ok(rt.cudaMallocHost(4 * n)), _ok(rt.cudaMallocHost(4))
    host = np.ctypeslib.as_array((ctypes.c_float * n).from_address(host_addr))
    out = np.ctypeslib.as_array((ctypes.c_float * 1).from_address(out_addr))
    host[:] = 1
    out[:] = 0
    args = ((2.0, x, y, n), (ctypes.c_float, None, None, ctypes.c_int))
    stream = _ok(cu.cuStreamCreate(0))
    try:
        _ok(cu.cuMemcpyHtoD(y, host, host.nbytes))
        mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
        _ok(cu.cuStreamBeginCapture(stream, mode))
        _ok(cu.cuMemcpyHtoDAsync(x, host.ctypes.data, host.nbytes, stream))
        for _ in range(launches):
            _ok(cu.cuLaunchKernel(saxpy, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
        if token:
            _ok(cu.cuMemcpyDtoHAsync(out.ctypes.data, y, 4, stream))
        graph = _ok(cu.cuStreamEndCapture(stream))
        exec_ = _ok(cu.cuGraphInstantiate(graph, 0))
        _ok(cu.cuStreamSynchronize(stream))
        t0 = time.perf_counter()
        for _ in range(steps):
            _ok(cu.cuGraphLaunch(exec_, stream))
            if token:
                _ok(cu.cuStreamSynchronize(stream))  # the token is read before the next step
        _ok(cu.cuStreamSynchronize(stream))
        seconds = time.perf_counter() - t0
        if not token:
            _ok(cu.cuMemcpyDtoH(out.ctypes.data, y, 4))
        expected = 1.0 + 2.0 * launches * steps
        if abs(float(out[0]) - expected) > 1e-3 * expected:
            raise RuntimeError(f"graph loop: y[0] is {out[0]}, expected {expected}")
        _ok(cu.cuGraphExecDestroy(exec_))
        _ok(cu.cuGraphDestroy(graph))
        return seconds
    finally:
        cu.cuStreamDestroy(stream)
        cu.cuMemFree(x)
        cu.cuMemFree(y)
        cu.cuModuleUnload(module)
        del host, out
        rt.cudaFreeHost(host_addr)
        rt.cudaFreeHost(out_addr)


def run(quick: bool = False) -> list[Row]:
    from bench.driver_remote import _local_driver

    steps = 200 if quick else STEPS
    local_cu = _local_driver()
    backend = "cuda" if local_cu else "sim"
    kinds = {"token": True, "queued": False}
    import cricket_client
    from cricket_client import driver as remote_cu
    from cricket_client import runtime as remote_rt

    runs: dict[str, dict[str, list[float]]] = {"local": {}, "remote": {}}
    with cricket_server(backend) as address:
        conn = cricket_client.connect(address)
        try:
            for _ in range(1 if quick else REPEATS):  # local and remote in turn
                for k, t in kinds.items():
                    if local_cu is not None:
                        from cuda.bindings import runtime as local_rt

                        runs["local"].setdefault(k, []).append(
                            graph_loop_s(local_cu, local_rt, steps, token=t)
                        )
                    runs["remote"].setdefault(k, []).append(
                        graph_loop_s(remote_cu, remote_rt, steps, token=t)
                    )
        finally:
            conn.close()
    remote = {k: statistics.median(v) for k, v in runs["remote"].items()}
    local = {k: statistics.median(v) for k, v in runs["local"].items()} or None
    what = {
        "token": f"HtoD 4 KiB, {LAUNCHES} kernels, DtoH 4 B, waited for each step",
        "queued": f"HtoD 4 KiB, {LAUNCHES} kernels, launches queued, one wait",
    }
    target = {"token": "information (a round trip per step)", "queued": "<= 1.2"}
    return [
        Row(
            f"graphs [{backend}]: decoding step captured once, {steps} launches ({what[k]})",
            remote[k], "s", "local cuda-python, same graph" if local is not None else "",
            local[k] if local else None, remote[k] / local[k] if local else None, target[k],
        )
        for k in kinds
    ]
