"""Device resources and green contexts with cuda-python's driver API.

The device's SMs are split into groups; a green context is made on one group, a kernel
(compiled with NVRTC) runs on a stream of the green context, and an event recorded over the
green context's work tells when it is done. Everything printed is exact (no timings).
"""

from __future__ import annotations

import ctypes

import numpy as np
from common import check, compile_cubin, device_arch, load_kernel
from cuda.bindings import driver

SOURCE = """
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
N = 1 << 16
MIN_SMS = 16
SM = driver.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM


def main() -> int:
    check(driver.cuInit(0))
    dev = check(driver.cuDeviceGet(0))
    primary = check(driver.cuDevicePrimaryCtxRetain(dev))
    check(driver.cuCtxSetCurrent(primary))
    sms = check(driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev
    ))
    resource = check(driver.cuDeviceGetDevResource(dev, SM))
    print(f"SM resource of the device: all {sms} SMs: {resource.sm.smCount == sms}")
    _none, count, _rest = check(driver.cuDevSmResourceSplitByCount(0, resource, 0, MIN_SMS))
    print(f"groups of at least {MIN_SMS} SMs it splits into: more than one: {count > 1}")
    groups, made, rest = check(driver.cuDevSmResourceSplitByCount(2, resource, 0, MIN_SMS))
    total = sum(g.sm.smCount for g in groups) + rest.sm.smCount
    print(f"split into {made} groups of at least {MIN_SMS} SMs: "
          f"{all(g.sm.smCount >= MIN_SMS for g in groups)}; with the rest, every SM: {total == sms}")

    desc = check(driver.cuDevResourceGenerateDesc([groups[0]], 1))
    flags = driver.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM
    green = check(driver.cuGreenCtxCreate(desc, dev, flags))
    own = check(driver.cuGreenCtxGetDevResource(green, SM))
    print(f"green context on the first group: its SMs {own.sm.smCount == groups[0].sm.smCount}")
    green_ctx = check(driver.cuCtxFromGreenCtx(green))
    check(driver.cuCtxSetCurrent(green_ctx))
    stream = check(driver.cuGreenCtxStreamCreate(
        green, driver.CUstream_flags.CU_STREAM_NON_BLOCKING, 0
    ))
    owner = check(driver.cuStreamGetGreenCtx(stream))
    print(f"its stream belongs to it: {int(owner) == int(green)}")

    module, saxpy = load_kernel(compile_cubin(SOURCE, "saxpy.cu", device_arch()), "saxpy")
    x = np.arange(N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)
    dx = check(driver.cuMemAlloc(x.nbytes))
    dy = check(driver.cuMemAlloc(y.nbytes))
    check(driver.cuMemcpyHtoD(dx, x, x.nbytes))
    check(driver.cuMemcpyHtoD(dy, y, y.nbytes))
    args = ((2.0, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))
    check(driver.cuLaunchKernel(saxpy, N // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
    done = check(driver.cuEventCreate(0))
    check(driver.cuGreenCtxRecordEvent(green, done))
    check(driver.cuEventSynchronize(done))
    out = np.zeros_like(y)
    check(driver.cuMemcpyDtoH(out, dy, out.nbytes))
    print(f"saxpy on the green context's stream: {bool(np.array_equal(out, 2.0 * x + 1.0))}")

    check(driver.cuEventDestroy(done))
    check(driver.cuMemFree(dx))
    check(driver.cuMemFree(dy))
    check(driver.cuModuleUnload(module))
    check(driver.cuStreamDestroy(stream))
    check(driver.cuCtxSetCurrent(primary))
    check(driver.cuGreenCtxDestroy(green))
    check(driver.cuDevicePrimaryCtxRelease(dev))
    print("Test PASSED")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
