"""Memory a remote client cannot share: managed memory is refused with
CUDA_ERROR_NOT_SUPPORTED (cudaErrorNotSupported) and a message saying why and what to use; the
device attributes that announce shared memory (mapped host memory too, served only for small
ranges: test_mapped_host_memory) read 0 for a remote client, in cuDeviceGetAttribute and in
cudaGetDeviceProperties; what does work (page-locked host allocations, registered host
ranges) still copies."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

NOT_SUPPORTED = cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED
A = cuda.CUdevice_attribute
UNAVAILABLE = [
    A.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
    A.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
    A.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
    A.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
    A.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
    A.CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
    A.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
    A.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
]


@pytest.mark.parametrize("attribute", UNAVAILABLE, ids=lambda a: a.name)
def test_shared_memory_attributes_read_zero(session: cricket_client.Connection, attribute) -> None:
    assert check(cuda.cuDeviceGetAttribute(attribute, 0)) == 0


def test_device_properties_say_no_managed_or_mapped_memory(
    session: cricket_client.Connection,
) -> None:
    props = check(cudart.cudaGetDeviceProperties(0))
    assert props.managedMemory == 0
    assert props.concurrentManagedAccess == 0
    assert props.canMapHostMemory == 0
    assert props.pageableMemoryAccess == 0
    assert props.directManagedMemAccessFromHost == 0
    assert props.multiProcessorCount > 0  # the other attributes are the device's own


def _refused(result: tuple, *words: str) -> None:
    assert result[0] == NOT_SUPPORTED or int(result[0]) == 801, result
    assert all(v is None for v in result[1:])
    message = cricket_client.last_error_message()
    for word in words:
        assert word in message, message


def test_managed_allocation_is_refused_naming_why(session: cricket_client.Connection) -> None:
    _refused(cuda.cuMemAllocManaged(1 << 20, 1), "cuMemAllocManaged", "managed", "cuMemAlloc")
    _refused(cudart.cudaMallocManaged(1 << 20, 1), "cudaMallocManaged", "cudaMalloc")
    location = None
    _refused(cuda.cuMemPrefetchAsync(0, 4096, location, 0, 0), "cuMemPrefetchAsync")
    _refused(cuda.cuMemAdvise(0, 4096, 1, location), "cuMemAdvise")
    _refused(cudart.cudaMemPrefetchAsync(0, 4096, location, 0, 0), "cudaMemPrefetchAsync")


def test_page_locked_and_registered_host_memory_still_copy(
    session: cricket_client.Connection,
) -> None:
    n = 4096
    host = check(cuda.cuMemHostAlloc(n, 0))
    view = (ctypes.c_ubyte * n).from_address(host)
    view[:] = bytes(range(256)) * (n // 256)
    dptr = check(cuda.cuMemAlloc(n))
    check(cuda.cuMemcpyHtoD(dptr, host, n))
    back = np.zeros(n, dtype=np.uint8)
    check(cuda.cuMemHostRegister(back.ctypes.data, n, 0))
    assert cuda.cuMemHostRegister(back.ctypes.data, n, 0)[0] == (
        cuda.CUresult.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    )
    check(cuda.cuMemcpyDtoH(back.ctypes.data, dptr, n))
    assert bytes(back) == bytes(view)
    check(cuda.cuMemHostUnregister(back.ctypes.data))
    assert cuda.cuMemHostUnregister(back.ctypes.data)[0] == (
        cuda.CUresult.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
    )
    check(cudart.cudaHostRegister(back.ctypes.data, n, 0))
    check(cudart.cudaHostUnregister(back.ctypes.data))
    check(cuda.cuMemFreeHost(host))
    check(cuda.cuMemFree(dptr))
