"""A library's module in the current context (cuLibraryGetModule), remote, on both backends:
its functions launch, its globals are the library's, it is one handle per context, it is the
library's (cuModuleUnload answers CUDA_ERROR_NOT_PERMITTED, as CUDA documents) and it ends
with the library; unified functions the sample library does not have are not found."""

from __future__ import annotations

import ctypes

import numpy as np
from behaviour_helpers import KERNELS, check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

ERR = cuda.CUresult
CUBIN = KERNELS / "test_kernels.sm_90.cubin"


def load_library() -> cuda.CUlibrary:
    return check(cuda.cuLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))


def test_the_librarys_module_runs_its_kernels_and_holds_its_globals(
    session: cricket_client.Connection,
) -> None:
    lib = load_library()
    try:
        module = check(cuda.cuLibraryGetModule(lib))
        assert int(check(cuda.cuLibraryGetModule(lib))) == int(module)  # one per context
        add = check(cuda.cuModuleGetFunction(module, b"add_to_counter"))
        check(cuda.cuLaunchKernel(add, 2, 1, 1, 4, 1, 1, 0, 0, ((5,), (ctypes.c_int,)), 0))
        check(cuda.cuCtxSynchronize())
        counter, size = check(cuda.cuModuleGetGlobal(module, b"counter"))
        assert (counter, size) == check(cuda.cuLibraryGetGlobal(lib, b"counter"))
        out = np.zeros(1, np.int32)
        check(cuda.cuMemcpyDtoH(out, counter, size))
        assert out[0] == 40
        count = check(cuda.cuModuleGetFunctionCount(module))
        assert count == check(cuda.cuLibraryGetKernelCount(lib))
        assert int(check(cuda.cuFuncGetModule(add))) == int(module)
    finally:
        check(cuda.cuLibraryUnload(lib))


def test_it_is_the_librarys_to_unload(session: cricket_client.Connection) -> None:
    lib = load_library()
    module = check(cuda.cuLibraryGetModule(lib))
    assert cuda.cuModuleUnload(module) == (ERR.CUDA_ERROR_NOT_PERMITTED,)
    assert "cuLibraryUnload" in cricket_client.last_error_message()
    check(cuda.cuModuleGetFunction(module, b"empty"))  # still there
    check(cuda.cuLibraryUnload(lib))
    err, fn = cuda.cuModuleGetFunction(module, b"empty")
    assert err == ERR.CUDA_ERROR_INVALID_HANDLE and fn is None
    assert cuda.cuLibraryGetModule(lib)[0] == ERR.CUDA_ERROR_INVALID_HANDLE


def test_a_library_option_without_a_values_array_loads(
    session: cricket_client.Connection,
) -> None:
    """The CUDA 13 runtime passes CU_LIBRARY_BINARY_IS_PRESERVED with no values array."""
    preserved = cuda.CUlibraryOption.CU_LIBRARY_BINARY_IS_PRESERVED
    image = CUBIN.read_bytes()
    lib = check(cuda.cuLibraryLoadData(image, None, None, 0, [preserved], None, 1))
    kernel = check(cuda.cuLibraryGetKernel(lib, b"empty"))
    check(cuda.cuKernelGetFunction(kernel))
    check(cuda.cuLibraryUnload(lib))


def test_another_context_has_its_own_module(session: cricket_client.Connection) -> None:
    lib = load_library()
    try:
        first = check(cuda.cuLibraryGetModule(lib))
        ctx = check(cuda.cuCtxCreate(None, 0, check(cuda.cuDeviceGet(0))))
        try:
            second = check(cuda.cuLibraryGetModule(lib))
            assert int(second) != int(first)
            check(cuda.cuModuleGetFunction(second, b"empty"))
        finally:
            check(cuda.cuCtxDestroy(ctx))
        assert cuda.cuModuleGetFunction(second, b"empty")[0] == ERR.CUDA_ERROR_INVALID_HANDLE
        check(cuda.cuModuleGetFunction(first, b"empty"))
    finally:
        check(cuda.cuLibraryUnload(lib))


def test_without_a_current_context_it_is_refused(session: cricket_client.Connection) -> None:
    lib = load_library()
    ctx = check(cuda.cuCtxGetCurrent())
    check(cuda.cuCtxSetCurrent(None))
    try:
        assert cuda.cuLibraryGetModule(lib)[0] == ERR.CUDA_ERROR_INVALID_CONTEXT
    finally:
        check(cuda.cuCtxSetCurrent(ctx))
        check(cuda.cuLibraryUnload(lib))


def test_a_symbol_that_is_no_unified_function_is_refused(
    session: cricket_client.Connection,
) -> None:
    lib = load_library()
    try:
        # a kernel is no unified function: the driver answers INVALID_VALUE (H200, driver 580)
        err, fptr = cuda.cuLibraryGetUnifiedFunction(lib, b"saxpy")
        assert err == ERR.CUDA_ERROR_INVALID_VALUE and fptr is None
        err, fptr = cuda.cuLibraryGetUnifiedFunction(lib, b"no_such_symbol")
        assert err in (ERR.CUDA_ERROR_INVALID_VALUE, ERR.CUDA_ERROR_NOT_FOUND) and fptr is None
        rt_lib = cudart.cudaLibrary_t(int(lib))
        err, fptr = cudart.cudaLibraryGetUnifiedFunction(rt_lib, b"saxpy")
        assert err != cudart.cudaError_t.cudaSuccess and fptr is None
    finally:
        check(cuda.cuLibraryUnload(lib))
