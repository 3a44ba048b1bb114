"""A cuda-python loop that waits for one reply per step: 20 steps of a 4 KiB HtoD, 3 saxpy
launches and a 4-byte DtoH, then the same device attribute asked 5 times. Prints y[0]."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
from cuda.bindings import driver as cu

CUBIN = Path(__file__).resolve().parents[1] / "kernels" / "test_kernels.sm_90.cubin"
STEPS, LAUNCHES, N = 20, 3, 1024


def ok(result: tuple) -> object:
    if int(result[0]) != 0:
        raise SystemExit(f"CUDA call failed: {result[0]!r}")
    return result[1] if len(result) == 2 else None


ok(cu.cuInit(0))
ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
ok(cu.cuCtxSetCurrent(ctx))
saxpy = ok(cu.cuModuleGetFunction(ok(cu.cuModuleLoadData(CUBIN.read_bytes())), b"saxpy"))
x, y = ok(cu.cuMemAlloc(4 * N)), ok(cu.cuMemAlloc(4 * N))
ones = np.ones(N, dtype=np.float32)
ok(cu.cuMemsetD32(y, 0x3F800000, N))  # y = 1.0
args = ((2.0, x, y, N), (ctypes.c_float, None, None, ctypes.c_int))
token = np.zeros(1, dtype=np.float32)
for _ in range(STEPS):
    ok(cu.cuMemcpyHtoD(x, ones, ones.nbytes))
    for _ in range(LAUNCHES):
        ok(cu.cuLaunchKernel(saxpy, N // 256, 1, 1, 256, 1, 1, 0, 0, args, 0))
    ok(cu.cuMemcpyDtoH(token, y, 4))
attribute = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
for _ in range(5):
    ok(cu.cuDeviceGetAttribute(attribute, ok(cu.cuDeviceGet(0))))
print(f"y[0] = {token[0]:.1f}")
