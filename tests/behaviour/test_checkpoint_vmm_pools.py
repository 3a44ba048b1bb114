"""Checkpoint, SIGKILL, `cricket-restart`: virtual memory mappings and memory pools come back.

Reservations and mappings at the same addresses with the same bytes and access, a physical
allocation mapped nowhere with its bytes, one released while mapped still mapped; pools with
their attributes, high-water marks, allocations (same addresses and bytes) and the device's
current pool. Runs on CRICKET_TEST_BACKEND.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from behaviour_helpers import ROOT, check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda

A = cuda.CUmemPool_attribute
READWRITE = cuda.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def _prop() -> cuda.CUmemAllocationProp:
    prop = cuda.CUmemAllocationProp()
    prop.type = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    return prop


def _access() -> cuda.CUmemAccessDesc:
    desc = cuda.CUmemAccessDesc()
    desc.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    desc.location.id = 0
    desc.flags = READWRITE
    return desc


def _attr(pool: object, attr: A) -> int:
    return int(check(cuda.cuMemPoolGetAttribute(pool, attr)))


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_vmm_mappings_and_pools_survive_a_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    server = start_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    rng = random.Random(13)
    try:
        gran = check(cuda.cuMemGetAllocationGranularity(_prop(), 0))
        base = int(check(cuda.cuMemAddressReserve(4 * gran, 0, 0, 0)))
        handles = [check(cuda.cuMemCreate(gran, _prop(), 0)) for _ in range(3)]
        for i, h in enumerate(handles):
            check(cuda.cuMemMap(base + i * gran, gran, 0, h, 0))
        check(cuda.cuMemSetAccess(base, 3 * gran, [_access()], 1))
        data = rng.randbytes(3 * gran)
        check(cuda.cuMemcpyHtoD(base, data, 3 * gran))
        check(cuda.cuMemUnmap(base + 2 * gran, gran))  # handles[2]: mapped nowhere now
        check(cuda.cuMemRelease(handles[0]))  # released, still mapped

        stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
        props = cuda.CUmemPoolProps()
        props.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        props.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        props.location.id = 0
        pool = check(cuda.cuMemPoolCreate(props))
        check(cuda.cuMemPoolSetAttribute(pool, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, cuda.cuuint64_t(1 << 30)))
        check(cuda.cuDeviceSetMemPool(0, pool))
        sizes = [1000, 2 << 20, 77]
        ptrs = [check(cuda.cuMemAllocAsync(n, stream)) for n in sizes]
        pool_data = [rng.randbytes(n) for n in sizes]
        for p, d in zip(ptrs, pool_data, strict=True):
            check(cuda.cuMemcpyHtoDAsync(p, d, len(d), stream))
        check(cuda.cuMemFreeAsync(ptrs[1], stream))
        check(cuda.cuStreamSynchronize(stream))
        high = _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH)
        assert high == sum(sizes)

        cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        tool = [sys.executable, "-m", "checkpoint"]
        verify = subprocess.run([*tool, "verify", str(tmp_path / "ckpt")], cwd=ROOT, check=False)
        assert verify.returncode == 0
        shown = subprocess.run(
            [*tool, "inspect", str(tmp_path / "ckpt")], cwd=ROOT, capture_output=True, text=True
        ).stdout
        assert f"mapping [{base:#x}, {base + gran:#x}): physical allocation" in shown
        assert f"memory pool {int(pool):#x}: created, current" in shown
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        assert read(base, 2 * gran) == data[: 2 * gran]  # same addresses, same bytes
        assert check(cuda.cuMemGetAccess(_access().location, base + gran)) == int(READWRITE)
        assert int(check(cuda.cuMemRetainAllocationHandle(base))) == int(handles[0])
        check(cuda.cuMemMap(base + 2 * gran, gran, 0, handles[2], 0))
        check(cuda.cuMemSetAccess(base + 2 * gran, gran, [_access()], 1))
        assert read(base + 2 * gran, gran) == data[2 * gran :]  # kept while mapped nowhere

        assert check(cuda.cuDeviceGetMemPool(0)) == pool
        assert _attr(pool, A.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 1 << 30
        assert _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == sizes[0] + sizes[2]
        assert _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH) == high
        for i in (0, 2):
            assert read(ptrs[i], sizes[i]) == pool_data[i]
            check(cuda.cuMemFreeAsync(ptrs[i], stream))
        check(cuda.cuStreamSynchronize(stream))
        assert _attr(pool, A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0

        fresh = int(check(cuda.cuMemAddressReserve(gran, 0, 0, 0)))
        assert not base <= fresh < base + 4 * gran
        check(cuda.cuMemUnmap(base, 3 * gran))
        for h in (handles[0], handles[1], handles[2]):
            check(cuda.cuMemRelease(h))
        check(cuda.cuMemAddressFree(base, 4 * gran))
        check(cuda.cuMemAddressFree(fresh, gran))
    finally:
        conn.close()
