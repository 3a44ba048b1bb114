"""--max-session-memory covers every kind of device memory of a session: cuMemAlloc, physical
allocations of the virtual memory API (cuMemCreate) and stream-ordered allocations (pools),
together; beyond it CUDA_ERROR_OUT_OF_MEMORY names the quota. Memory freed in stream order
counts until the stream has reached the free, then is available again."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_harness import running_server

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
MB = 1 << 20


def _session(address: str) -> cricket_client.Connection:
    conn = cricket_client.connect(address, make_default=False, timeout=60)
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
    return conn


def _prop() -> cuda.CUmemAllocationProp:
    prop = cuda.CUmemAllocationProp()
    prop.type = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    return prop


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_quota_counts_physical_and_pool_memory_together(tmp_path: Path, mode: str) -> None:
    with running_server(tmp_path, "--max-session-memory", "5M", isolation=mode) as srv:
        conn = _session(srv.address)
        with conn.active():
            err, gran = cuda.cuMemGetAllocationGranularity(_prop(), 0)
            assert err == E.CUDA_SUCCESS and gran == 2 * MB  # this test's sizes assume it
            err, handle = cuda.cuMemCreate(gran, _prop(), 0)
            assert err == E.CUDA_SUCCESS
            err, stream = cuda.cuStreamCreate(0)
            err, ptr = cuda.cuMemAllocAsync(2 * MB, stream)
            assert err == E.CUDA_SUCCESS
            assert cuda.cuMemCreate(gran, _prop(), 0) == (E.CUDA_ERROR_OUT_OF_MEMORY, None)
            assert "(--max-session-memory)" in cricket_client.last_error_message()
            assert cuda.cuMemAllocAsync(2 * MB, stream) == (E.CUDA_ERROR_OUT_OF_MEMORY, None)
            assert cuda.cuMemAlloc(2 * MB) == (E.CUDA_ERROR_OUT_OF_MEMORY, None)
            assert cuda.cuMemFreeAsync(ptr, stream) == (E.CUDA_SUCCESS,)
            err, again = cuda.cuMemAllocAsync(2 * MB, stream)  # once the stream got there
            assert err == E.CUDA_SUCCESS
            assert cuda.cuMemRelease(handle) == (E.CUDA_SUCCESS,)
            err, other = cuda.cuMemCreate(gran, _prop(), 0)  # released memory counts no more
            assert err == E.CUDA_SUCCESS
            assert cuda.cuMemRelease(other) == (E.CUDA_SUCCESS,)
            assert cuda.cuMemFreeAsync(again, stream) == (E.CUDA_SUCCESS,)
            assert cuda.cuStreamSynchronize(stream) == (E.CUDA_SUCCESS,)
        conn.close()
