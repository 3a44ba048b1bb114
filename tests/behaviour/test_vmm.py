"""Virtual memory management through the remote driver: granularity, reserve, create, map,
set access, copy, unmap, release; what a program may and may not do with its own and with
another session's reservations and handles."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from behaviour_helpers import SUCCESS, check, foreign_handle_message

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


def _prop(dev: int = 0) -> cuda.CUmemAllocationProp:
    prop = cuda.CUmemAllocationProp()
    prop.type = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = dev
    return prop


def _access(dev: int = 0) -> cuda.CUmemAccessDesc:
    desc = cuda.CUmemAccessDesc()
    desc.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    desc.location.id = dev
    desc.flags = cuda.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    return desc


def _granularity() -> int:
    return check(
        cuda.cuMemGetAllocationGranularity(
            _prop(), cuda.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
        )
    )


@pytest.fixture
def gran(session: cricket_client.Connection) -> Iterator[int]:
    yield _granularity()


def test_granularity_is_a_power_of_two_and_recommended_is_a_multiple(gran: int) -> None:
    assert gran >= 4096 and gran & (gran - 1) == 0
    recommended = check(
        cuda.cuMemGetAllocationGranularity(
            _prop(), cuda.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
        )
    )
    assert recommended % gran == 0


def test_reserve_create_map_access_copy_unmap_release(gran: int) -> None:
    size = 2 * gran
    ptr = check(cuda.cuMemAddressReserve(size, 0, 0, 0))
    assert int(ptr) % gran == 0
    handle = check(cuda.cuMemCreate(size, _prop(), 0))
    check(cuda.cuMemMap(ptr, size, 0, handle, 0))
    check(cuda.cuMemSetAccess(ptr, size, [_access()], 1))
    data = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
    check(cuda.cuMemcpyHtoD(ptr, data, size))
    out = np.zeros_like(data)
    check(cuda.cuMemcpyDtoH(out, ptr, size))
    assert np.array_equal(out, data)
    check(cuda.cuMemsetD32(cuda.CUdeviceptr(int(ptr) + gran), 0x01020304, 4))
    check(cuda.cuMemcpyDtoH(out, ptr, size))
    assert out[gran : gran + 4].tolist() == [4, 3, 2, 1]
    check(cuda.cuMemUnmap(ptr, size))
    check(cuda.cuMemRelease(handle))
    check(cuda.cuMemAddressFree(ptr, size))


def test_adjacent_mappings_are_one_range_for_copies(gran: int) -> None:
    """The growing-vector pattern: two physical allocations mapped back to back."""
    ptr = check(cuda.cuMemAddressReserve(4 * gran, 0, 0, 0))
    first = check(cuda.cuMemCreate(gran, _prop(), 0))
    second = check(cuda.cuMemCreate(gran, _prop(), 0))
    check(cuda.cuMemMap(ptr, gran, 0, first, 0))
    check(cuda.cuMemMap(cuda.CUdeviceptr(int(ptr) + gran), gran, 0, second, 0))
    check(cuda.cuMemSetAccess(ptr, 2 * gran, [_access()], 1))
    data = np.arange(2 * gran // 4, dtype=np.uint32)
    check(cuda.cuMemcpyHtoD(ptr, data, data.nbytes))
    out = np.zeros_like(data)
    check(cuda.cuMemcpyDtoH(out, ptr, data.nbytes))
    assert np.array_equal(out, data)
    check(cuda.cuMemUnmap(ptr, 2 * gran))
    check(cuda.cuMemRelease(first))
    check(cuda.cuMemRelease(second))
    check(cuda.cuMemAddressFree(ptr, 4 * gran))


def test_a_handle_keeps_its_bytes_between_mappings(gran: int) -> None:
    ptr = check(cuda.cuMemAddressReserve(2 * gran, 0, 0, 0))
    handle = check(cuda.cuMemCreate(gran, _prop(), 0))
    check(cuda.cuMemMap(ptr, gran, 0, handle, 0))
    check(cuda.cuMemSetAccess(ptr, gran, [_access()], 1))
    check(cuda.cuMemcpyHtoD(ptr, b"kept across mappings", 20))
    check(cuda.cuMemUnmap(ptr, gran))
    elsewhere = cuda.CUdeviceptr(int(ptr) + gran)
    check(cuda.cuMemMap(elsewhere, gran, 0, handle, 0))
    check(cuda.cuMemSetAccess(elsewhere, gran, [_access()], 1))
    out = bytearray(20)
    check(cuda.cuMemcpyDtoH(out, elsewhere, 20))
    assert out == b"kept across mappings"
    check(cuda.cuMemUnmap(elsewhere, gran))
    check(cuda.cuMemRelease(handle))
    check(cuda.cuMemAddressFree(ptr, 2 * gran))


def test_access_is_needed_and_reported(gran: int) -> None:
    ptr = check(cuda.cuMemAddressReserve(gran, 0, 0, 0))
    handle = check(cuda.cuMemCreate(gran, _prop(), 0))
    check(cuda.cuMemMap(ptr, gran, 0, handle, 0))
    location = _access().location
    assert check(cuda.cuMemGetAccess(location, ptr)) == 0
    assert cuda.cuMemcpyHtoD(ptr, b"x", 1)[0] != SUCCESS  # mapped, not yet accessible
    check(cuda.cuMemSetAccess(ptr, gran, [_access()], 1))
    assert check(cuda.cuMemGetAccess(location, ptr)) == int(
        cuda.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    )
    check(cuda.cuMemcpyHtoD(ptr, b"x", 1))
    check(cuda.cuMemUnmap(ptr, gran))
    check(cuda.cuMemRelease(handle))
    check(cuda.cuMemAddressFree(ptr, gran))


def test_properties_and_retained_handle(gran: int) -> None:
    ptr = check(cuda.cuMemAddressReserve(gran, 0, 0, 0))
    handle = check(cuda.cuMemCreate(gran, _prop(), 0))
    prop = check(cuda.cuMemGetAllocationPropertiesFromHandle(handle))
    assert prop.type == cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    assert prop.location.type == cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    assert prop.location.id == 0
    check(cuda.cuMemMap(ptr, gran, 0, handle, 0))
    check(cuda.cuMemRelease(handle))  # still mapped: the memory lives on
    again = check(cuda.cuMemRetainAllocationHandle(ptr))
    assert int(again) == int(handle)
    check(cuda.cuMemRelease(again))
    check(cuda.cuMemUnmap(ptr, gran))
    assert cuda.cuMemRelease(handle) == (E.CUDA_ERROR_INVALID_HANDLE,)
    check(cuda.cuMemAddressFree(ptr, gran))


def test_mistakes_are_refused_naming_the_cause(gran: int) -> None:
    ptr = check(cuda.cuMemAddressReserve(2 * gran, 0, 0, 0))
    assert cuda.cuMemCreate(gran + 1, _prop(), 0) == (E.CUDA_ERROR_INVALID_VALUE, None)
    assert "granularity" in cricket_client.last_error_message()
    handle = check(cuda.cuMemCreate(gran, _prop(), 0))
    assert cuda.cuMemMap(ptr, 2 * gran, 0, handle, 0) == (E.CUDA_ERROR_INVALID_VALUE,)
    check(cuda.cuMemMap(ptr, gran, 0, handle, 0))
    assert cuda.cuMemMap(ptr, gran, 0, handle, 0) == (E.CUDA_ERROR_INVALID_VALUE,)  # overlap
    assert cuda.cuMemAddressFree(ptr, 2 * gran) == (E.CUDA_ERROR_INVALID_VALUE,)
    assert "cuMemUnmap them first" in cricket_client.last_error_message()
    check(cuda.cuMemUnmap(ptr, gran))
    check(cuda.cuMemRelease(handle))
    check(cuda.cuMemAddressFree(ptr, 2 * gran))
    bad = _prop()
    bad.location.id = 1 << 20
    assert cuda.cuMemCreate(gran, bad, 0)[0] == E.CUDA_ERROR_INVALID_DEVICE


def test_another_sessions_handle_and_reservation_are_unknown(
    gran: int, other_session: cricket_client.Connection
) -> None:
    with other_session.active():
        theirs = check(cuda.cuMemCreate(gran, _prop(), 0))
        their_range = check(cuda.cuMemAddressReserve(gran, 0, 0, 0))
    ptr = check(cuda.cuMemAddressReserve(gran, 0, 0, 0))
    assert cuda.cuMemMap(ptr, gran, 0, theirs, 0) == (E.CUDA_ERROR_INVALID_HANDLE,)
    assert foreign_handle_message() in cricket_client.last_error_message()
    assert cuda.cuMemRelease(theirs) == (E.CUDA_ERROR_INVALID_HANDLE,)
    mine = check(cuda.cuMemCreate(gran, _prop(), 0))
    assert cuda.cuMemMap(their_range, gran, 0, mine, 0) == (E.CUDA_ERROR_INVALID_VALUE,)
    assert cuda.cuMemAddressFree(their_range, gran) == (E.CUDA_ERROR_INVALID_VALUE,)
    assert cuda.cuMemcpyHtoD(their_range, b"x", 1)[0] != SUCCESS
    check(cuda.cuMemRelease(mine))
    check(cuda.cuMemAddressFree(ptr, gran))
    with other_session.active():  # theirs is untouched
        check(cuda.cuMemMap(their_range, gran, 0, theirs, 0))
        check(cuda.cuMemUnmap(their_range, gran))
        check(cuda.cuMemRelease(theirs))
        check(cuda.cuMemAddressFree(their_range, gran))


def test_a_reservation_at_a_wanted_free_address_gets_it(gran: int) -> None:
    ptr = check(cuda.cuMemAddressReserve(gran, 0, 0, 0))
    check(cuda.cuMemAddressFree(ptr, gran))
    again = check(cuda.cuMemAddressReserve(gran, 0, ptr, 0))
    assert int(again) == int(ptr)
    check(cuda.cuMemAddressFree(again, gran))
