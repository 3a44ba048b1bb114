"""Modules and libraries from files, what a module or library holds, kernel attributes and
parameters, loading states (driver and runtime forms)."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any

import numpy as np
from behaviour_helpers import KERNELS, check, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

CUBIN = KERNELS / "test_kernels.sm_90.cubin"
# every kernel of tests/kernels/test_kernels.cu, as a user reads them from the source
KERNEL_NAMES = set(re.findall(r'extern "C" __global__ void (\w+)', (KERNELS / "test_kernels.cu").read_text()))
ATTR = cuda.CUfunction_attribute


def _name(func: Any) -> str:
    return bytes(check(cuda.cuFuncGetName(func))).decode()


def test_module_load_reads_the_clients_file(session: cricket_client.Connection) -> None:
    mod = check(cuda.cuModuleLoad(str(CUBIN)))
    counter, size = check(cuda.cuModuleGetGlobal(mod, b"counter"))
    assert size == 4
    check(cuda.cuModuleUnload(mod))
    mod = check(cuda.cuModuleLoad(str(CUBIN).encode()))  # char *: bytes as cuda-python takes
    check(cuda.cuModuleUnload(mod))


def test_module_load_of_a_missing_file_is_file_not_found(
    session: cricket_client.Connection, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such.cubin"
    err, mod = cuda.cuModuleLoad(str(missing))
    assert (err, mod) == (cuda.CUresult.CUDA_ERROR_FILE_NOT_FOUND, None)
    assert "no-such.cubin" in cricket_client.last_error_message()
    err, lib = cuda.cuLibraryLoadFromFile(str(missing), None, None, 0, None, None, 0)
    assert (err, lib) == (cuda.CUresult.CUDA_ERROR_FILE_NOT_FOUND, None)


def test_module_functions_are_listed(session: cricket_client.Connection) -> None:
    mod = check(cuda.cuModuleLoad(str(CUBIN)))
    count = check(cuda.cuModuleGetFunctionCount(mod))
    assert count == len(KERNEL_NAMES)
    functions = check(cuda.cuModuleEnumerateFunctions(count, mod))
    assert {_name(f) for f in functions} == KERNEL_NAMES
    for f in functions:
        assert int(check(cuda.cuFuncGetModule(f))) == int(mod)
        by_name = check(cuda.cuModuleGetFunction(mod, _name(f).encode()))
        assert int(by_name) == int(f)
    check(cuda.cuFuncLoad(functions[0]))
    assert check(cuda.cuFuncIsLoaded(functions[0])) == cuda.CUfunctionLoadingState.CU_FUNCTION_LOADING_STATE_LOADED
    assert check(cuda.cuModuleGetLoadingMode()) in set(cuda.CUmoduleLoadingMode)
    check(cuda.cuModuleUnload(mod))
    err, n = cuda.cuModuleGetFunctionCount(mod)
    assert (err, n) == (cuda.CUresult.CUDA_ERROR_INVALID_HANDLE, None)


def test_library_from_file_kernels_and_globals(session: cricket_client.Connection) -> None:
    lib = check(cuda.cuLibraryLoadFromFile(str(CUBIN), None, None, 0, None, None, 0))
    count = check(cuda.cuLibraryGetKernelCount(lib))
    assert count == len(KERNEL_NAMES)
    kernels = check(cuda.cuLibraryEnumerateKernels(count, lib))
    assert {bytes(check(cuda.cuKernelGetName(k))).decode() for k in kernels} == KERNEL_NAMES
    for k in kernels:
        assert int(check(cuda.cuKernelGetLibrary(k))) == int(lib)
    # a library's global: its initial value, written and read back like any device memory
    bias, size = check(cuda.cuLibraryGetGlobal(lib, b"bias"))
    assert size == 4
    out = np.zeros(1, np.int32)
    check(cuda.cuMemcpyDtoH(out, bias, 4))
    assert out[0] == 7
    check(cuda.cuMemcpyHtoD(bias, np.array([42], np.int32), 4))
    check(cuda.cuMemcpyDtoH(out, bias, 4))
    assert out[0] == 42
    err, _ptr, _size = cuda.cuLibraryGetGlobal(lib, b"no_such_global")
    assert err == cuda.CUresult.CUDA_ERROR_NOT_FOUND
    check(cuda.cuLibraryUnload(lib))


def test_kernel_parameters_and_attributes(session: cricket_client.Connection) -> None:
    lib = check(cuda.cuLibraryLoadFromFile(str(CUBIN), None, None, 0, None, None, 0))
    saxpy = check(cuda.cuLibraryGetKernel(lib, b"saxpy"))
    assert check(cuda.cuKernelGetParamCount(saxpy)) == 4
    assert [check(cuda.cuKernelGetParamInfo(saxpy, i)) for i in range(4)] == [(0, 4), (8, 8), (16, 8), (24, 4)]
    assert cuda.cuKernelGetParamInfo(saxpy, 4)[0] == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    func = check(cuda.cuKernelGetFunction(saxpy))
    assert check(cuda.cuFuncGetParamCount(func)) == 4
    dev = check(cuda.cuDeviceGet(0))
    smem = ATTR.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    before = check(cuda.cuKernelGetAttribute(smem, saxpy, dev))
    assert before == check(cuda.cuFuncGetAttribute(smem, func))
    check(cuda.cuKernelSetAttribute(smem, 2048, saxpy, dev))
    # the answer a client may have kept is not the one asked for again
    assert check(cuda.cuKernelGetAttribute(smem, saxpy, dev)) == 2048
    assert check(cuda.cuFuncGetAttribute(smem, func)) == 2048
    check(cuda.cuKernelSetCacheConfig(saxpy, cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED, dev))
    check(cuda.cuLibraryUnload(lib))


def test_module_function_params(session: cricket_client.Connection, kernels: Any) -> None:
    empty = check(cuda.cuModuleGetFunction(kernels, b"empty"))
    assert check(cuda.cuFuncGetParamCount(empty)) == 0
    fill = check(cuda.cuModuleGetFunction(kernels, b"fill_u32"))
    assert check(cuda.cuFuncGetParamCount(fill)) == 3


def test_runtime_library_calls(rt: cricket_client.Connection) -> None:
    lib = ok(cudart.cudaLibraryLoadFromFile(str(CUBIN), None, None, 0, None, None, 0))
    count = ok(cudart.cudaLibraryGetKernelCount(lib))
    assert count == len(KERNEL_NAMES)
    kernels = ok(cudart.cudaLibraryEnumerateKernels(count, lib))
    assert all(isinstance(k, cudart.cudaKernel_t) for k in kernels)
    saxpy = ok(cudart.cudaLibraryGetKernel(lib, b"saxpy"))
    assert ok(cudart.cudaFuncGetParamCount(saxpy)) == 4
    smem = cudart.cudaFuncAttribute.cudaFuncAttributeMaxDynamicSharedMemorySize
    ok(cudart.cudaKernelSetAttributeForDevice(saxpy, smem, 4096, 0))
    attrs = ok(cudart.cudaFuncGetAttributes(saxpy))
    assert attrs.maxDynamicSharedSizeBytes == 4096
    ptr, size = ok(cudart.cudaLibraryGetGlobal(lib, b"bias"))
    assert size == 4
    out = (ctypes.c_int * 1)()
    ok(cudart.cudaMemcpy(ctypes.addressof(out), ptr, 4, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost))
    assert out[0] == 7
    ok(cudart.cudaLibraryUnload(lib))
    err, missing = cudart.cudaLibraryLoadFromFile("/no/such/file.cubin", None, None, 0, None, None, 0)
    assert (err, missing) == (cudart.cudaError_t.cudaErrorFileNotFound, None)
    assert cudart.cudaGetLastError() == (cudart.cudaError_t.cudaErrorFileNotFound,)
    assert cudart.cudaGetLastError() == (cudart.cudaError_t.cudaSuccess,)
