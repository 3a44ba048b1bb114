"""Kernels built by nvcc and by NVRTC, launched with every argument form cuda-python accepts."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import KERNELS, SUCCESS, check, nvrtc_cubin

import cricket_client
from cricket_client import driver as cuda

N = 100_003  # not a multiple of the block size
BLOCK = 256
GRID = (N + BLOCK - 1) // BLOCK

VECTOR_ADD_SRC = """
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
SAXPY_SRC = """
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def to_device(host: np.ndarray) -> Any:
    ptr = check(cuda.cuMemAlloc(host.nbytes))
    check(cuda.cuMemcpyHtoD(ptr, host, host.nbytes))
    return ptr


def from_device(ptr: Any, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    check(cuda.cuMemcpyDtoH(out, ptr, out.nbytes))
    return out


def run_vector_add(func: Any) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(N, dtype=np.float32)
    b = rng.standard_normal(N, dtype=np.float32)
    da, db = to_device(a), to_device(b)
    dc = check(cuda.cuMemAlloc(a.nbytes))
    args = ((da, db, dc, N), (None, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(func, GRID, 1, 1, BLOCK, 1, 1, 0, 0, args, 0))
    check(cuda.cuCtxSynchronize())
    c = from_device(dc, a)
    assert np.array_equal(c, a + b)


def run_saxpy(func: Any) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(N, dtype=np.float32)
    y = rng.standard_normal(N, dtype=np.float32)
    dx, dy = to_device(x), to_device(y)
    args = ((2.5, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(func, GRID, 1, 1, BLOCK, 1, 1, 0, 0, args, 0))
    out = from_device(dy, y)
    expected = np.float32(2.5) * x + y
    assert np.allclose(out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("image", ["test_kernels.sm_90.cubin", "test_kernels.fatbin", "test_kernels.ptx"])
def test_nvcc_vector_add_and_saxpy(session: cricket_client.Connection, image: str) -> None:
    mod = check(cuda.cuModuleLoadData((KERNELS / image).read_bytes()))
    run_vector_add(check(cuda.cuModuleGetFunction(mod, b"vector_add")))
    run_saxpy(check(cuda.cuModuleGetFunction(mod, b"saxpy")))
    check(cuda.cuModuleUnload(mod))


def test_fatbinary_entry_point(session: cricket_client.Connection) -> None:
    mod = check(cuda.cuModuleLoadFatBinary((KERNELS / "test_kernels.fatbin").read_bytes()))
    run_vector_add(check(cuda.cuModuleGetFunction(mod, b"vector_add")))


def test_nvrtc_vector_add_and_saxpy(session: cricket_client.Connection) -> None:
    mod = check(cuda.cuModuleLoadData(nvrtc_cubin(VECTOR_ADD_SRC, "vector_add.cu")))
    run_vector_add(check(cuda.cuModuleGetFunction(mod, b"vector_add")))
    mod = check(cuda.cuModuleLoadData(nvrtc_cubin(SAXPY_SRC, "saxpy.cu")))
    run_saxpy(check(cuda.cuModuleGetFunction(mod, b"saxpy")))


def test_module_image_given_as_an_address(session: cricket_client.Connection) -> None:
    ptx = np.frombuffer((KERNELS / "test_kernels.ptx").read_bytes() + b"\0", dtype=np.uint8)
    mod = check(cuda.cuModuleLoadData(ptx.ctypes.data))  # read up to its NUL, as the driver does
    run_vector_add(check(cuda.cuModuleGetFunction(mod, b"vector_add")))


def test_load_data_ex_fills_info_log(session: cricket_client.Connection) -> None:
    info = bytearray(4096)
    opts = [cuda.CUjit_option.CU_JIT_INFO_LOG_BUFFER, cuda.CUjit_option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
    mod = check(cuda.cuModuleLoadDataEx((KERNELS / "test_kernels.ptx").read_bytes(), 2, opts, [info, len(info)]))
    assert int(mod) != 0
    assert b"\0" in info  # the log (possibly empty) is NUL-terminated inside the buffer


def test_linked_list_of_device_pointers(session: cricket_client.Connection, kernels: Any) -> None:
    values = [5, -3, 11, 42, 7, 1000]
    node_ptrs = [check(cuda.cuMemAlloc(16)) for _ in values]
    for i, (ptr, value) in enumerate(zip(node_ptrs, values, strict=True)):
        nxt = int(node_ptrs[i + 1]) if i + 1 < len(values) else 0
        check(cuda.cuMemcpyHtoD(ptr, struct.pack("<Qi4x", nxt, value), 16))
    out = check(cuda.cuMemAlloc(4))
    func = check(cuda.cuModuleGetFunction(kernels, b"list_sum"))
    check(cuda.cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, 0, ((node_ptrs[0], out), (None, None)), 0))
    result = bytearray(4)
    check(cuda.cuMemcpyDtoH(result, out, 4))
    assert struct.unpack("<i", result)[0] == sum(values)


def test_module_globals_written_and_read(session: cricket_client.Connection, kernels: Any) -> None:
    counter, size = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
    bias, bias_size = check(cuda.cuModuleGetGlobal(kernels, b"bias"))
    assert size == bias_size == 4
    word = bytearray(4)
    check(cuda.cuMemcpyDtoH(word, bias, 4))
    assert struct.unpack("<i", word)[0] == 7
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    check(cuda.cuLaunchKernel(add, 2, 1, 1, 32, 1, 1, 0, 0, ((3,), (ctypes.c_int,)), 0))
    check(cuda.cuMemcpyDtoH(word, counter, 4))
    assert struct.unpack("<i", word)[0] == 2 * 32 * 3
    check(cuda.cuMemcpyHtoD(bias, struct.pack("<i", 100), 4))
    out = check(cuda.cuMemAlloc(16 * 4))
    read = check(cuda.cuModuleGetFunction(kernels, b"read_globals"))
    check(cuda.cuLaunchKernel(read, 1, 1, 1, 16, 1, 1, 0, 0, ((out, 16), (None, ctypes.c_int)), 0))
    assert list(from_device(out, np.zeros(16, np.int32))) == [192 + 100] * 16


def _vector_add_setup(kernels: Any) -> tuple[Any, np.ndarray, np.ndarray, Any, Any, Any]:
    func = check(cuda.cuModuleGetFunction(kernels, b"vector_add"))
    a = np.arange(N, dtype=np.float32)
    b = np.full(N, 0.5, dtype=np.float32)
    return func, a, b, to_device(a), to_device(b), check(cuda.cuMemAlloc(a.nbytes))


def _params_tuple_none(da: Any, db: Any, dc: Any) -> Any:
    return ((da, db, dc, N), (None, None, None, ctypes.c_int))


def _params_tuple_ctypes(da: Any, db: Any, dc: Any) -> Any:
    return ((int(da), int(db), int(dc), N), (ctypes.c_void_p,) * 3 + (ctypes.c_int,))


@pytest.mark.parametrize("form", ["tuple-none", "tuple-ctypes", "address", "numpy", "extra"])
def test_every_launch_argument_form(session: cricket_client.Connection, kernels: Any, form: str) -> None:
    func, a, b, da, db, dc = _vector_add_setup(kernels)
    keep: list[Any] = []
    params: Any = 0
    extra: Any = 0
    if form == "tuple-none":
        params = _params_tuple_none(da, db, dc)
    elif form == "tuple-ctypes":
        params = _params_tuple_ctypes(da, db, dc)
    elif form in ("address", "numpy"):
        cells = [ctypes.c_uint64(int(da)), ctypes.c_uint64(int(db)), ctypes.c_uint64(int(dc)), ctypes.c_int(N)]
        keep = cells
        addrs = [ctypes.addressof(c) for c in cells]
        if form == "address":
            array = (ctypes.c_void_p * 4)(*addrs)
            keep.append(array)
            params = ctypes.addressof(array)
        else:
            params = np.array(addrs, dtype=np.uint64)
    else:
        packed = ctypes.create_string_buffer(struct.pack("<QQQi4x", int(da), int(db), int(dc), N), 32)
        size = ctypes.c_size_t(28)
        array = (ctypes.c_void_p * 5)(
            cuda.CU_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(packed),
            cuda.CU_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size), cuda.CU_LAUNCH_PARAM_END,
        )
        keep = [packed, size, array]
        extra = ctypes.addressof(array)
    check(cuda.cuLaunchKernel(func, GRID, 1, 1, BLOCK, 1, 1, 0, 0, params, extra))
    assert np.array_equal(from_device(dc, a), a + b)
    del keep


def test_cooperative_launch(session: cricket_client.Connection, kernels: Any) -> None:
    func, a, b, da, db, dc = _vector_add_setup(kernels)
    grid = min(GRID, check(cuda.cuDeviceGetAttribute(
        cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cuda.CUdevice(0))))
    n = grid * BLOCK
    args = ((da, db, dc, n), (None, None, None, ctypes.c_int))
    check(cuda.cuLaunchCooperativeKernel(func, grid, 1, 1, BLOCK, 1, 1, 0, 0, args))
    assert np.array_equal(from_device(dc, a)[:n], (a + b)[:n])


def test_library_kernel(session: cricket_client.Connection) -> None:
    lib = check(cuda.cuLibraryLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes(), None, None, 0, None, None, 0))
    kernel = check(cuda.cuLibraryGetKernel(lib, b"vector_add"))
    run_vector_add(check(cuda.cuKernelGetFunction(kernel)))
    run_vector_add(kernel)
    check(cuda.cuLibraryUnload(lib))


def test_function_queries(session: cricket_client.Connection, kernels: Any) -> None:
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    layout = [check(cuda.cuFuncGetParamInfo(saxpy, i)) for i in range(4)]
    assert layout == [(0, 4), (8, 8), (16, 8), (24, 4)]
    assert cuda.cuFuncGetParamInfo(saxpy, 4) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None, None)
    attr = cuda.CUfunction_attribute
    max_threads = check(cuda.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, saxpy))
    assert max_threads >= BLOCK
    check(cuda.cuFuncSetCacheConfig(saxpy, cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_L1))
    check(cuda.cuFuncSetAttribute(saxpy, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024))
    assert check(cuda.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, saxpy)) == 1024
    blocks = check(cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(saxpy, BLOCK, 0))
    assert blocks >= 1
    assert check(cuda.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(saxpy, BLOCK, 0, 0)) == blocks
    min_grid, block = check(cuda.cuOccupancyMaxPotentialBlockSize(saxpy, None, 0, 0))
    assert min_grid >= 1 and 32 <= block <= max_threads
    assert cuda.cuOccupancyMaxPotentialBlockSize(saxpy, lambda n: 0, 0, 0)[0] == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED
    assert cuda.cuModuleUnload(kernels)[0] == SUCCESS
