"""A `cuda.bindings.driver` program, unmodified: device queries, memory, copies, a module from
a cubin, launches with kernelParams, streams and events. It prints one line per result, so that
runs through the native libcuda.so.1 and through the Python-level module swap compare equal.

    python native_driver_program.py CUBIN
"""

import ctypes
import sys

import numpy as np
from cuda.bindings import driver as cuda


def check(result):
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cuda.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else values


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        cubin = f.read()
    check(cuda.cuInit(0))
    print("devices", check(cuda.cuDeviceGetCount()))
    dev = check(cuda.cuDeviceGet(0))
    print("name", check(cuda.cuDeviceGetName(64, dev)).split(b"\0")[0].decode())
    attr = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    print("max threads per block", check(cuda.cuDeviceGetAttribute(attr, dev)))
    print("total memory > 0", check(cuda.cuDeviceTotalMem(dev)) > 0)
    ctx = check(cuda.cuDevicePrimaryCtxRetain(dev))
    check(cuda.cuCtxSetCurrent(ctx))
    print("context device", int(check(cuda.cuCtxGetDevice())))

    n = 1000
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2.5, dtype=np.float32)
    nbytes = a.nbytes
    da, db, dc = (check(cuda.cuMemAlloc(nbytes)) for _ in range(3))
    check(cuda.cuMemcpyHtoD(da, a, nbytes))
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuMemcpyHtoDAsync(db, b, nbytes, stream))
    check(cuda.cuMemsetD32(dc, 0, n))

    module = check(cuda.cuModuleLoadData(cubin))
    add = check(cuda.cuModuleGetFunction(module, b"vector_add"))
    print("params", [check(cuda.cuFuncGetParamInfo(add, i)) for i in range(4)])
    start, end = check(cuda.cuEventCreate(0)), check(cuda.cuEventCreate(0))
    check(cuda.cuEventRecord(start, stream))
    args = ((da, db, dc, n), (None, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(add, (n + 127) // 128, 1, 1, 128, 1, 1, 0, stream, args, 0))
    check(cuda.cuEventRecord(end, stream))
    check(cuda.cuStreamSynchronize(stream))
    print("elapsed >= 0", check(cuda.cuEventElapsedTime(start, end)) >= 0)
    c = np.zeros(n, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(c, dc, nbytes))
    print("vector_add ok", bool((c == a + b).all()), float(c[:3].sum()))

    # saxpy through a raw void*[] of argument addresses
    saxpy = check(cuda.cuModuleGetFunction(module, b"saxpy"))
    alpha, count = ctypes.c_float(2.0), ctypes.c_int(n)
    x, y = ctypes.c_uint64(int(da)), ctypes.c_uint64(int(dc))
    pointers = (ctypes.c_void_p * 4)(*(ctypes.addressof(v) for v in (alpha, x, y, count)))
    check(cuda.cuLaunchKernel(saxpy, (n + 127) // 128, 1, 1, 128, 1, 1, 0, 0,
                              ctypes.addressof(pointers), 0))
    check(cuda.cuCtxSynchronize())
    check(cuda.cuMemcpyDtoH(c, dc, nbytes))
    print("saxpy ok", bool((c == 2 * a + a + b).all()))

    check(cuda.cuMemcpyDtoD(db, da, nbytes))
    check(cuda.cuMemcpyDtoH(c, db, nbytes))
    print("dtod ok", bool((c == a).all()))
    free, total = check(cuda.cuMemGetInfo())
    print("free <= total", free <= total)
    for event in (start, end):
        check(cuda.cuEventDestroy(event))
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuModuleUnload(module))
    for p in (da, db, dc):
        check(cuda.cuMemFree(p))
    check(cuda.cuDevicePrimaryCtxRelease(dev))
    print("done")


if __name__ == "__main__":
    main()
