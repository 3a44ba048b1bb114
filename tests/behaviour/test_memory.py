"""Device memory: allocation, copies of every size and direction, memsets, queries."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from behaviour_helpers import SUCCESS, check

import cricket_client
from cricket_client import driver as cuda


@pytest.mark.parametrize("size", [0, 1, 3, 4097, 256 << 20])
def test_copy_round_trip(session: cricket_client.Connection, size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    ptr = check(cuda.cuMemAlloc(max(size, 1)))
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (SUCCESS,)
    other = check(cuda.cuMemAlloc(max(size, 1)))
    assert cuda.cuMemcpyDtoD(other, ptr, size) == (SUCCESS,)
    out = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, other, size) == (SUCCESS,)
    assert np.array_equal(out, data)
    check(cuda.cuMemFree(ptr))
    check(cuda.cuMemFree(other))


def test_copy_at_an_offset_inside_an_allocation(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(1024))
    check(cuda.cuMemsetD8(ptr, 0, 1024))
    check(cuda.cuMemcpyHtoD(cuda.CUdeviceptr(int(ptr) + 100), b"hello", 5))
    out = bytearray(1024)
    check(cuda.cuMemcpyDtoH(out, ptr, 1024))
    assert out[100:105] == b"hello" and out.count(0) == 1019


@pytest.mark.parametrize("make_host", [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)])
def test_host_buffer_kinds(session: cricket_client.Connection, make_host) -> None:
    data = bytes(range(200))
    ptr = check(cuda.cuMemAlloc(200))
    check(cuda.cuMemcpyHtoD(ptr, make_host(data), 200))
    out = ctypes.create_string_buffer(200)
    check(cuda.cuMemcpyDtoH(ctypes.addressof(out), ptr, 200))
    assert out.raw == data


def test_unified_memcpy(session: cricket_client.Connection) -> None:
    src = np.arange(1000, dtype=np.int32)
    a, b = check(cuda.cuMemAlloc(src.nbytes)), check(cuda.cuMemAlloc(src.nbytes))
    check(cuda.cuMemcpy(a, src.ctypes.data, src.nbytes))
    check(cuda.cuMemcpy(b, a, src.nbytes))
    out = np.zeros_like(src)
    check(cuda.cuMemcpyAsync(out.ctypes.data, b, src.nbytes, 0))
    check(cuda.cuStreamSynchronize(0))
    assert np.array_equal(out, src)


@pytest.mark.parametrize(
    ("name", "dtype", "value"),
    [("cuMemsetD8", np.uint8, 0xA5), ("cuMemsetD16", np.uint16, 0xBEEF), ("cuMemsetD32", np.uint32, 0xDEADBEEF)],
)
def test_memset_every_width(session: cricket_client.Connection, name: str, dtype, value: int) -> None:
    count = 4099
    itemsize = np.dtype(dtype).itemsize
    ptr = check(cuda.cuMemAlloc(count * itemsize))
    check(getattr(cuda, name)(ptr, value, count))
    out = np.zeros(count, dtype=dtype)
    check(cuda.cuMemcpyDtoH(out, ptr, out.nbytes))
    assert (out == value).all()
    stream = check(cuda.cuStreamCreate(0))
    check(getattr(cuda, name + "Async")(ptr, 0, count // 2, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(out, ptr, out.nbytes))
    assert (out[: count // 2] == 0).all() and (out[count // 2 :] == value).all()


def test_memory_queries(session: cricket_client.Connection) -> None:
    total = check(cuda.cuDeviceTotalMem(cuda.CUdevice(0)))
    free0, total0 = check(cuda.cuMemGetInfo())
    assert total0 == total and 0 < free0 <= total
    ptr = check(cuda.cuMemAlloc(1 << 20))
    inner = cuda.CUdeviceptr(int(ptr) + 12345)
    assert check(cuda.cuMemGetAddressRange(inner)) == (ptr, 1 << 20)
    attr = cuda.CUpointer_attribute
    assert check(cuda.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inner)) == ptr
    assert check(cuda.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_RANGE_SIZE, inner)) == 1 << 20
    mem_type, ordinal = check(cuda.cuPointerGetAttributes(
        2, [attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, attr.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL], inner))
    assert mem_type == cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE and ordinal == 0
    ctx = check(cuda.cuCtxGetCurrent())
    assert check(cuda.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_CONTEXT, ptr)) == ctx


def test_freeing_null_succeeds_and_a_stray_pointer_does_not(
    session: cricket_client.Connection,
) -> None:
    """free(NULL) semantics, as the local driver (cuBLAS initializes through cudaFree(0))."""
    assert cuda.cuMemFree(cuda.CUdeviceptr(0))[0] == SUCCESS
    assert cuda.cuMemFreeHost(0)[0] == SUCCESS
    ptr = check(cuda.cuMemAlloc(256))
    stray = cuda.CUdeviceptr(int(ptr) + 64)
    assert cuda.cuMemFree(stray)[0] == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuMemFree(ptr))
    assert cuda.cuMemFree(ptr)[0] == cuda.CUresult.CUDA_ERROR_INVALID_VALUE


def test_pitched_allocation(session: cricket_client.Connection) -> None:
    ptr, pitch = check(cuda.cuMemAllocPitch(100, 10, 4))
    assert pitch >= 100
    check(cuda.cuMemsetD8(ptr, 1, pitch * 10))
    check(cuda.cuMemFree(ptr))


def test_stream_ordered_allocation(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    ptr = check(cuda.cuMemAllocAsync(4096, stream))
    check(cuda.cuMemsetD32Async(ptr, 7, 1024, stream))
    out = np.zeros(1024, np.uint32)
    check(cuda.cuMemcpyDtoHAsync(out, ptr, 4096, stream))
    check(cuda.cuMemFreeAsync(ptr, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert (out == 7).all()
