"""Remote driver calls against local cuda-python, in the same run (issue: remote CUDA driver).

The same workload functions run on `cuda.bindings.driver` (local, when a GPU answers) and on
`cricket_client.driver` (through a cricket-server subprocess on loopback TCP). Where no GPU
answers, the remote side runs on the sim backend and is set against the raw socket baseline.
Ratios are remote cost over local cost: lower is better.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path
from types import ModuleType

import numpy as np

from bench.common import Row, median_latency_us
from bench.raw_socket import echo_peer, round_trip_fn, stream_gbps
from bench.server_proc import cricket_server

CUBIN = Path(__file__).parents[1] / "tests" / "kernels" / "test_kernels.sm_90.cubin"
COPY_SIZES = {"1 MiB": 1 << 20, "64 MiB": 64 << 20, "1 GiB": 1 << 30}


def _ok(result):
    err = result[0]
    if int(err) != 0:
        raise RuntimeError(f"CUDA call failed: {err!r}")
    return result[1] if len(result) == 2 else result[1:]


class Workload:
    """One driver module (local or remote) with a context, an empty kernel and buffers."""

    def __init__(self, cu: ModuleType) -> None:
        self.cu = cu
        _ok(cu.cuInit(0))
        dev = _ok(cu.cuDeviceGet(0))
        self.ctx = _ok(cu.cuDevicePrimaryCtxRetain(dev))
        _ok(cu.cuCtxSetCurrent(self.ctx))
        self.module = _ok(cu.cuModuleLoadData(CUBIN.read_bytes()))
        self.empty = _ok(cu.cuModuleGetFunction(self.module, b"empty"))

    def small_call_us(self, n: int) -> dict:
        cu = self.cu
        return median_latency_us(lambda: cu.cuMemGetInfo(), n)

    def launch_rate(self, n: int) -> float:
        cu, f = self.cu, self.empty
        stream = cu.CUstream(0)
        _ok(cu.cuCtxSynchronize())
        t0 = time.perf_counter()
        for _ in range(n):
            cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, 0, 0)
        _ok(cu.cuCtxSynchronize())
        return n / (time.perf_counter() - t0)

    def copy_gbps(self, nbytes: int, repeats: int) -> tuple[float, float]:
        cu = self.cu
        host = np.random.default_rng(1).integers(0, 255, nbytes, dtype=np.uint8)
        back = np.empty_like(host)
        dptr = _ok(cu.cuMemAlloc(nbytes))
        try:
            h2d, d2h = [], []
            for _ in range(repeats):
                t0 = time.perf_counter()
                _ok(cu.cuMemcpyHtoD(dptr, host, nbytes))
                t1 = time.perf_counter()
                _ok(cu.cuMemcpyDtoH(back, dptr, nbytes))
                t2 = time.perf_counter()
                h2d.append(t1 - t0)
                d2h.append(t2 - t1)
            if not np.array_equal(host, back):
                raise RuntimeError("copy benchmark: data came back different")
            return nbytes / min(h2d) / 1e9, nbytes / min(d2h) / 1e9
        finally:
            _ok(cu.cuMemFree(dptr))

    def decoding_loop_s(self, steps: int, launches: int = 10, n: int = 1024) -> float:
        """Seconds for a decoding-like loop (P4): per step a small HtoD, `launches` small
        kernels, and a 4-byte DtoH the next step depends on."""
        cu = self.cu
        saxpy = _ok(cu.cuModuleGetFunction(self.module, b"saxpy"))
        x, y = _ok(cu.cuMemAlloc(4 * n)), _ok(cu.cuMemAlloc(4 * n))
        host = np.ones(n, dtype=np.float32)
        token = bytearray(4)
        args = ((2.0, x, y, n), (ctypes.c_float, None, None, ctypes.c_int))
        try:
            _ok(cu.cuMemcpyHtoD(y, host, host.nbytes))
            _ok(cu.cuCtxSynchronize())
            t0 = time.perf_counter()
            for _ in range(steps):
                _ok(cu.cuMemcpyHtoD(x, host, host.nbytes))
                for _ in range(launches):
                    cu.cuLaunchKernel(saxpy, (n + 255) // 256, 1, 1, 256, 1, 1, 0, 0, args, 0)
                _ok(cu.cuMemcpyDtoH(token, y, 4))
            seconds = time.perf_counter() - t0
            expected = 1.0 + 2.0 * launches * steps
            got = np.frombuffer(token, dtype=np.float32)[0]
            if abs(got - expected) > 1e-3 * expected:
                raise RuntimeError(f"decoding loop: y[0] is {got}, expected {expected}")
            return seconds
        finally:
            cu.cuMemFree(x)
            cu.cuMemFree(y)

    def close(self) -> None:
        self.cu.cuModuleUnload(self.module)


def _local_driver() -> ModuleType | None:
    try:
        from cricket_server.backends.cuda import gpu_available

        if not gpu_available():
            return None
        from cuda.bindings import driver

        return driver
    except ImportError:
        return None


def _measure(work: Workload, quick: bool) -> dict:
    out = {
        "small": work.small_call_us(2000 if quick else 10000),
        "launch": work.launch_rate(5000 if quick else 50000),
        "decode": work.decoding_loop_s(200 if quick else 2000),
    }
    for label, size in COPY_SIZES.items():
        if quick and size > (64 << 20):
            continue
        repeats = 3 if size >= (1 << 30) else 10
        out[label] = work.copy_gbps(size, repeats)
    return out


def run(quick: bool = False) -> list[Row]:
    local_cu = _local_driver()
    backend = "cuda" if local_cu else "sim"
    local = None
    if local_cu is not None:
        w = Workload(local_cu)
        local = _measure(w, quick)
        w.close()
    with echo_peer() as sock:
        raw_rtt = median_latency_us(round_trip_fn(sock), 5000)["median_us"]
        raw_stream = stream_gbps(sock, 1 << 30)
    import cricket_client
    from cricket_client import driver as remote_cu

    with cricket_server(backend) as address:
        conn = cricket_client.connect(address)
        w = Workload(remote_cu)
        remote = _measure(w, quick)
        w.close()
        conn.close()

    tag = f"[{backend}]"
    rows = [
        Row(f"driver {tag}: cuMemGetInfo remote", remote["small"]["median_us"], "us",
            "raw Python socket 100-byte round trip, TCP", raw_rtt,
            remote["small"]["median_us"] / raw_rtt, "P1 <= 1.3"),
    ]
    if local:
        rows.append(Row(f"driver {tag}: cuMemGetInfo remote vs local", remote["small"]["median_us"],
                        "us", "local cuda-python cuMemGetInfo", local["small"]["median_us"],
                        remote["small"]["median_us"] / local["small"]["median_us"]))
    rows.append(Row(f"driver {tag}: empty cuLaunchKernel rate remote", remote["launch"] / 1e3, "k/s",
                    "local cuda-python launch rate" if local else "",
                    local["launch"] / 1e3 if local else None,
                    (local["launch"] / remote["launch"]) if local else None,
                    "P2 slowdown <= 1.25 (>= 0.8x)"))
    steps = 200 if quick else 2000
    rows.append(Row(f"driver {tag}: decoding loop, {steps} steps x (HtoD 4 KiB, 10 launches, DtoH 4 B)",
                    remote["decode"], "s", "local cuda-python, same loop" if local else "",
                    local["decode"] if local else None,
                    remote["decode"] / local["decode"] if local else None, "P4 <= 1.5"))
    for label in COPY_SIZES:
        if label not in remote:
            continue
        for i, direction in enumerate(("HtoD", "DtoH")):
            r = remote[label][i]
            base = local[label][i] if local else raw_stream
            rows.append(Row(
                f"driver {tag}: {direction} {label} remote", r, "GB/s",
                "local cuda-python, pageable numpy" if local else "raw Python socket stream, TCP",
                base, base / r, "slowdown (lower is better)"))
    rows.append(Row("raw Python socket stream 1 GiB, TCP", raw_stream, "GB/s"))
    return rows
