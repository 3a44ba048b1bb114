"""A `cuda.bindings.driver` program, unmodified, over a library's module and device facts:
cuLibraryGetModule (the same handle twice, a kernel of it launched, cuModuleUnload refused),
cuDeviceGetExecAffinitySupport and cuGreenCtxGetId of no green context. One line per result,
so that runs through the native library and through the Python-level module swap compare.

    python native_library_module_program.py CUBIN
"""

import ctypes
import sys

from cuda.bindings import driver as cuda


def check(result):
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cuda.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else values


check(cuda.cuInit(0))
dev = check(cuda.cuDeviceGet(0))
ctx = check(cuda.cuDevicePrimaryCtxRetain(dev))
check(cuda.cuCtxSetCurrent(ctx))
with open(sys.argv[1], "rb") as f:
    lib = check(cuda.cuLibraryLoadData(f.read(), None, None, 0, None, None, 0))
module = check(cuda.cuLibraryGetModule(lib))
print("same module", int(check(cuda.cuLibraryGetModule(lib))) == int(module))
add = check(cuda.cuModuleGetFunction(module, b"add_to_counter"))
check(cuda.cuLaunchKernel(add, 1, 1, 1, 8, 1, 1, 0, 0, ((3,), (ctypes.c_int,)), 0))
counter, size = check(cuda.cuModuleGetGlobal(module, b"counter"))
out = (ctypes.c_int * 1)()
check(cuda.cuMemcpyDtoH(out, counter, size))
print("counter", out[0])
print("unload", cuda.cuModuleUnload(module)[0].name)
kind = cuda.CUexecAffinityType.CU_EXEC_AFFINITY_TYPE_SM_COUNT
print("affinity support", check(cuda.cuDeviceGetExecAffinitySupport(kind, dev)))
print("green id of none", cuda.cuGreenCtxGetId(None)[0] != cuda.CUresult.CUDA_SUCCESS)
check(cuda.cuLibraryUnload(lib))
print("done")
