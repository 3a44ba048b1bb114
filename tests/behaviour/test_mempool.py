"""Stream-ordered allocation and memory pools through the remote driver and runtime: the default
and current pool, created pools, attributes that tell the truth, frees in stream order, and
another session's pool being unknown."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from behaviour_helpers import SUCCESS, check, foreign_handle_message

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

E = cuda.CUresult


A = cuda.CUmemPool_attribute


def _pool_props(max_size: int = 0) -> cuda.CUmemPoolProps:
    props = cuda.CUmemPoolProps()
    props.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.handleTypes = cuda.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
    props.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = 0
    props.maxSize = max_size
    return props


def _attr(pool: Any, attr: A) -> int:
    return int(check(cuda.cuMemPoolGetAttribute(pool, attr)))


def _stream() -> Any:
    return check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))


def test_default_pool_is_the_current_pool_until_set(session: cricket_client.Connection) -> None:
    default = check(cuda.cuDeviceGetDefaultMemPool(0))
    assert check(cuda.cuDeviceGetMemPool(0)) == default
    assert check(cuda.cuDeviceGetDefaultMemPool(0)) == default  # the same pool each time
    mine = check(cuda.cuMemPoolCreate(_pool_props()))
    check(cuda.cuDeviceSetMemPool(0, mine))
    assert check(cuda.cuDeviceGetMemPool(0)) == mine
    stream = _stream()
    ptr = check(cuda.cuMemAllocAsync(1000, stream))  # from the current pool
    check(cuda.cuStreamSynchronize(stream))
    assert _attr(mine, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 1000
    assert _attr(default, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0
    check(cuda.cuMemFreeAsync(ptr, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemPoolDestroy(mine))  # the device goes back to its default pool
    assert check(cuda.cuDeviceGetMemPool(0)) == default
    assert cuda.cuMemPoolDestroy(default) == (E.CUDA_ERROR_INVALID_VALUE,)


def test_async_alloc_copy_free_in_stream_order(session: cricket_client.Connection) -> None:
    stream = _stream()
    data = np.arange(4096, dtype=np.uint32)
    ptr = check(cuda.cuMemAllocAsync(data.nbytes, stream))
    other = check(cuda.cuMemAllocAsync(data.nbytes, stream))
    check(cuda.cuMemcpyHtoDAsync(ptr, data, data.nbytes, stream))
    check(cuda.cuMemcpyDtoDAsync(other, ptr, data.nbytes, stream))
    check(cuda.cuMemFreeAsync(ptr, stream))
    out = np.zeros_like(data)
    check(cuda.cuMemcpyDtoHAsync(out, other, data.nbytes, stream))
    check(cuda.cuMemFreeAsync(other, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.array_equal(out, data)
    assert cuda.cuMemFree(ptr) == (E.CUDA_ERROR_INVALID_VALUE,)  # freed already
    check(cuda.cuStreamDestroy(stream))


def test_pool_attributes_tell_the_truth(session: cricket_client.Connection) -> None:
    pool = check(cuda.cuMemPoolCreate(_pool_props()))
    threshold = cuda.cuuint64_t(64 << 20)
    check(cuda.cuMemPoolSetAttribute(pool, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold))
    assert _attr(pool, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 64 << 20
    check(cuda.cuMemPoolSetAttribute(pool, A.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0))
    assert _attr(pool, A.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC) == 0
    assert _attr(pool, A.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES) == 1
    stream = _stream()
    sizes = [1 << 10, 3 << 20, 5000]
    ptrs = [check(cuda.cuMemAllocFromPoolAsync(n, pool, stream)) for n in sizes]
    check(cuda.cuStreamSynchronize(stream))
    used = _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    assert used == sum(sizes)
    assert _attr(pool, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= used
    assert _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH) == sum(sizes)
    for p in ptrs:
        check(cuda.cuMemFreeAsync(p, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0
    assert _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH) == sum(sizes)  # a high-water mark
    check(cuda.cuMemPoolTrimTo(pool, 0))
    assert _attr(pool, A.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0  # trimmed to nothing
    check(cuda.cuMemPoolSetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH, cuda.cuuint64_t(0)))
    assert _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 0
    assert cuda.cuMemPoolSetAttribute(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, 5) == (
        E.CUDA_ERROR_INVALID_VALUE,
    )
    check(cuda.cuMemPoolDestroy(pool))


def test_freed_memory_is_not_reused_before_the_stream_reaches_the_free(
    session: cricket_client.Connection, kernels: Any
) -> None:
    """A free waits behind a kernel that spins until the host opens a flag; an allocation of
    the same size on another stream meanwhile must get other memory."""
    wait_flag = check(cuda.cuModuleGetFunction(kernels, b"wait_flag"))
    held, side = _stream(), _stream()
    flags = check(cuda.cuMemAlloc(8))
    check(cuda.cuMemsetD8(flags, 0, 8))
    size = 4096
    first = check(cuda.cuMemAllocAsync(size, held))
    flag, done = ctypes.c_uint64(int(flags)), ctypes.c_uint64(int(flags) + 4)
    args = (ctypes.c_void_p * 2)(ctypes.addressof(flag), ctypes.addressof(done))
    check(cuda.cuLaunchKernel(wait_flag, 1, 1, 1, 1, 1, 1, 0, held, ctypes.addressof(args), 0))
    check(cuda.cuMemFreeAsync(first, held))
    second = check(cuda.cuMemAllocAsync(size, side))
    check(cuda.cuStreamSynchronize(side))
    assert int(second) != int(first)  # the held stream has not reached the free yet
    check(cuda.cuMemcpyHtoDAsync(flags, np.array([1], np.int32), 4, side))
    check(cuda.cuStreamSynchronize(held))
    check(cuda.cuMemFreeAsync(second, side))
    check(cuda.cuStreamSynchronize(side))
    check(cuda.cuMemFree(flags))


def test_a_pool_with_a_maximum_size_refuses_more(session: cricket_client.Connection) -> None:
    pool = check(cuda.cuMemPoolCreate(_pool_props(max_size=1 << 20)))
    stream = _stream()
    ptr = check(cuda.cuMemAllocFromPoolAsync(768 << 10, pool, stream))
    assert cuda.cuMemAllocFromPoolAsync(512 << 10, pool, stream) == (
        E.CUDA_ERROR_OUT_OF_MEMORY,
        None,
    )
    check(cuda.cuMemFreeAsync(ptr, stream))
    again = check(cuda.cuMemAllocFromPoolAsync(512 << 10, pool, stream))  # after the free
    check(cuda.cuMemFreeAsync(again, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemPoolDestroy(pool))


def test_another_sessions_pool_is_unknown(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    with other_session.active():
        theirs = check(cuda.cuMemPoolCreate(_pool_props()))
    assert cuda.cuMemAllocFromPoolAsync(64, theirs, 0) == (E.CUDA_ERROR_INVALID_HANDLE, None)
    assert foreign_handle_message() in cricket_client.last_error_message()
    assert cuda.cuDeviceSetMemPool(0, theirs) == (E.CUDA_ERROR_INVALID_HANDLE,)
    assert cuda.cuMemPoolDestroy(theirs) == (E.CUDA_ERROR_INVALID_HANDLE,)
    with other_session.active():
        check(cuda.cuMemPoolDestroy(theirs))


def test_runtime_forms(session: cricket_client.Connection) -> None:
    err, default = cudart.cudaDeviceGetDefaultMemPool(0)
    assert err == cudart.cudaError_t.cudaSuccess
    props = cudart.cudaMemPoolProps()
    props.allocType = cudart.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.type = cudart.cudaMemLocationType.cudaMemLocationTypeDevice
    props.location.id = 0
    err, pool = cudart.cudaMemPoolCreate(props)
    assert err == cudart.cudaError_t.cudaSuccess
    err, stream = cudart.cudaStreamCreate()
    assert err == cudart.cudaError_t.cudaSuccess
    err, ptr = cudart.cudaMallocFromPoolAsync(256, pool, stream)
    assert err == cudart.cudaError_t.cudaSuccess and isinstance(ptr, int)
    attr = cudart.cudaMemPoolAttr.cudaMemPoolAttrUsedMemCurrent
    assert cudart.cudaStreamSynchronize(stream)[0] == cudart.cudaError_t.cudaSuccess
    err, used = cudart.cudaMemPoolGetAttribute(pool, attr)
    assert (err, int(used)) == (cudart.cudaError_t.cudaSuccess, 256)
    assert cudart.cudaFreeAsync(ptr, stream)[0] == cudart.cudaError_t.cudaSuccess
    assert cudart.cudaStreamSynchronize(stream)[0] == cudart.cudaError_t.cudaSuccess
    assert cudart.cudaMemPoolTrimTo(pool, 0)[0] == cudart.cudaError_t.cudaSuccess
    assert cudart.cudaDeviceSetMemPool(0, pool)[0] == cudart.cudaError_t.cudaSuccess
    err, current = cudart.cudaDeviceGetMemPool(0)
    assert err == cudart.cudaError_t.cudaSuccess and int(current) == int(pool)
    assert cudart.cudaMemPoolDestroy(pool)[0] == cudart.cudaError_t.cudaSuccess
    err, current = cudart.cudaDeviceGetMemPool(0)
    assert int(current) == int(default)
    assert cudart.cudaStreamDestroy(stream)[0] == SUCCESS


def test_pools_by_location_and_pool_access(session: cricket_client.Connection) -> None:
    location = cuda.CUmemLocation()
    location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    location.id = 0
    pinned = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    default = check(cuda.cuDeviceGetDefaultMemPool(0))
    assert check(cuda.cuMemGetDefaultMemPool(location, pinned)) == default
    pool = check(cuda.cuMemPoolCreate(_pool_props()))
    check(cuda.cuMemSetMemPool(location, pinned, pool))
    assert check(cuda.cuMemGetMemPool(location, pinned)) == pool
    assert check(cuda.cuMemPoolGetAccess(pool, location)) == (
        cuda.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    )
    desc = cuda.CUmemAccessDesc()
    desc.location = location
    desc.flags = cuda.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    check(cuda.cuMemPoolSetAccess(pool, [desc], 1))
    host = cuda.CUmemLocation()
    host.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
    assert cuda.cuMemGetDefaultMemPool(host, pinned) == (E.CUDA_ERROR_NOT_SUPPORTED, None)
    assert "cannot be the client's" in cricket_client.last_error_message()
    check(cuda.cuMemPoolDestroy(pool))
