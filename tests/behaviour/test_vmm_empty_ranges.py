"""Empty ranges in the VMM calls are refused with a message, and the session goes on
(found by the record fuzzer: a zero-size cuMemUnmap crashed the handler)."""

from __future__ import annotations

from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


def _prop() -> cuda.CUmemAllocationProp:
    prop = cuda.CUmemAllocationProp()
    prop.type = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    return prop


def test_a_zero_size_unmap_is_refused_and_the_mapping_stays(session: cricket_client.Connection) -> None:
    gran = check(cuda.cuMemGetAllocationGranularity(
        _prop(), cuda.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
    base = check(cuda.cuMemAddressReserve(gran, 0, 0, 0))
    handle = check(cuda.cuMemCreate(gran, _prop(), 0))
    check(cuda.cuMemMap(base, gran, 0, handle, 0))
    (err,) = cuda.cuMemUnmap(base, 0)
    assert err == E.CUDA_ERROR_INVALID_VALUE
    assert "size 0" in cricket_client.last_error_message()
    check(cuda.cuMemUnmap(base, gran))  # the mapping was untouched and unmaps whole
    check(cuda.cuMemRelease(handle))
    check(cuda.cuMemAddressFree(base, gran))
