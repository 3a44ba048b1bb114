"""The `cuda` backend on a real GPU: device queries, the address reservation, VMM chunks,
copies and memsets, called directly through the backend's Python API."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from cuda.bindings import driver

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    BackendSession,
    CudaError,
)
from cricket_server.backends.cuda import CudaBackend
from cricket_server.backends.cuda.vmm import (
    DEFAULT_RESERVE_BASE,
    DEFAULT_RESERVE_SIZE,
    AddressReservation,
)

if TYPE_CHECKING:
    from conftest import ChunkMapper

pytestmark = pytest.mark.gpu

MiB = 1 << 20
CC_MAJOR = int(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)


# -- devices ------------------------------------------------------------------------------
def test_device_queries_describe_a_real_gpu(backend: CudaBackend) -> None:
    assert backend.device_count() >= 1
    assert backend.driver_version() >= 13000
    assert backend.runtime_version() >= 13000
    assert backend.device_name(0).strip()
    assert backend.device_total_mem(0) > 1 << 30
    assert backend.device_attribute(CC_MAJOR, 0) >= 7
    uuid = backend.device_uuid(0)
    assert len(uuid) == 16 and uuid != bytes(16)
    assert re.fullmatch(
        r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9]", backend.device_pci_bus_id(0)
    )


def test_device_queries_reject_bad_device_and_attribute(backend: CudaBackend) -> None:
    with pytest.raises(CudaError) as bad_dev:
        backend.device_name(backend.device_count())
    assert bad_dev.value.code == CUDA_ERROR_INVALID_DEVICE
    with pytest.raises(CudaError) as bad_attr:
        backend.device_attribute(999_999, 0)
    assert bad_attr.value.code == CUDA_ERROR_INVALID_VALUE
    assert "cuDeviceGetAttribute" in bad_attr.value.message


# -- the address reservation ----------------------------------------------------------------
def test_default_base_is_honoured_in_a_fresh_process(backend: CudaBackend) -> None:
    code = (
        "import json; from cricket_server.backends.cuda import CudaBackend; b = CudaBackend(); "
        "print(json.dumps(b.address_space())); b.close()"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    base, size, granularity = json.loads(out.stdout.strip().splitlines()[-1])
    assert (base, size) == (DEFAULT_RESERVE_BASE, DEFAULT_RESERVE_SIZE)
    assert granularity == 2 * MiB


def test_reservation_is_aligned_to_the_granularity(backend: CudaBackend) -> None:
    base, size, granularity = backend.address_space()
    assert granularity == backend.granularity(0) and granularity > 0
    assert base % granularity == 0 and size % granularity == 0


def test_required_base_that_is_taken_fails_and_an_optional_one_is_adopted(
    backend: CudaBackend,
) -> None:
    base, _, granularity = backend.address_space()
    with pytest.raises(CudaError) as exc:
        AddressReservation.reserve(base, 64 * MiB, granularity, require_base=True)
    assert exc.value.code == CUDA_ERROR_INVALID_VALUE
    assert f"{base:#x}" in exc.value.message
    other = AddressReservation.reserve(base, 64 * MiB, granularity)
    try:
        assert other.base != base
        assert other.base % granularity == 0
    finally:
        other.free()


# -- VMM chunks -------------------------------------------------------------------------------
def test_mapped_chunk_holds_data_at_the_chosen_address(
    session: BackendSession, chunks: ChunkMapper
) -> None:
    addr = chunks.map(session, 4 * MiB)
    payload = bytes(range(256)) * 4096  # 1 MiB
    session.memcpy_htod(addr + 3 * MiB, memoryview(payload), None)
    assert bytes(session.memcpy_dtoh(addr + 3 * MiB, len(payload), None)) == payload


def test_chunk_backing_refuses_misaligned_and_foreign_ranges(
    backend: CudaBackend, session: BackendSession
) -> None:
    backing = session.chunk_backing(0)
    base, size, g = backend.address_space()
    with pytest.raises(CudaError) as misaligned:
        backing.map_chunk(base + 4096, g)
    assert misaligned.value.code == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as outside:
        backing.map_chunk(base + size, g)
    assert outside.value.code == CUDA_ERROR_INVALID_VALUE
    assert "outside the reserved range" in outside.value.message


def test_memory_of_one_session_is_visible_to_another(
    open_session: Callable[..., BackendSession], chunks: ChunkMapper
) -> None:
    a, b = open_session(), open_session()
    addr = chunks.map(a, 2 * MiB)
    a.memcpy_htod(addr, memoryview(b"written by session a"), None)
    assert bytes(b.memcpy_dtoh(addr, 20, None)) == b"written by session a"


def test_unmapped_chunk_is_no_longer_accessible(
    backend: CudaBackend, session: BackendSession, chunks: ChunkMapper
) -> None:
    backing = session.chunk_backing(0)
    g = backing.granularity
    addr = chunks.take(g)
    token = backing.map_chunk(addr, g)
    session.memcpy_htod(addr, memoryview(b"x" * 16), None)
    backing.unmap_chunk(addr, g, token)
    with pytest.raises(CudaError):
        session.memcpy_dtoh(addr, 16, None)


def test_mem_get_info_reports_this_device(backend: CudaBackend, session: BackendSession) -> None:
    free, total = session.mem_get_info()
    assert 0 < free <= total == backend.device_total_mem(0)


def test_device_heap_over_vmm_backing(backend: CudaBackend, session: BackendSession) -> None:
    memory = pytest.importorskip("cricket_server.memory")
    base, size, g = backend.address_space()
    arena = memory.AddressArena(base + size // 2, size // 4, g)  # clear of ChunkMapper's range
    heap = memory.DeviceHeap(arena, session.chunk_backing(0))
    try:
        small = [heap.alloc(1000) for _ in range(100)]
        big = heap.alloc(5 * g + 1)
        assert len({p for p in small}) == 100 and all(p % 256 == 0 for p in small)
        for i, p in enumerate(small):
            session.memcpy_htod(p, memoryview(struct.pack("<Q", i) * 125), None)
        session.memset(big, 0xAB, 1, 5 * g + 1, None)
        assert all(
            bytes(session.memcpy_dtoh(p, 8, None)) == struct.pack("<Q", i)
            for i, p in enumerate(small)
        )
        assert bytes(session.memcpy_dtoh(big + 5 * g, 1, None)) == b"\xab"
    finally:
        heap.release_all()


# -- copies and memsets -------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 4095, 3 * MiB + 17])
@pytest.mark.parametrize("use_stream", [False, True])
def test_round_trip_sizes_sync_and_on_a_stream(
    session: BackendSession, chunks: ChunkMapper, size: int, use_stream: bool
) -> None:
    addr = chunks.map(session, size)
    stream = session.stream_create(0, 0) if use_stream else None
    payload = bytes((i * 7 + 3) & 0xFF for i in range(size))
    session.memcpy_htod(addr, memoryview(payload), stream)
    assert bytes(session.memcpy_dtoh(addr, size, stream)) == payload


def test_async_htod_copies_the_source_before_returning(
    session: BackendSession, chunks: ChunkMapper
) -> None:
    addr = chunks.map(session, 8 * MiB)
    stream = session.stream_create(0, 0)
    source = bytearray(b"\x11" * (8 * MiB))
    session.memcpy_htod(addr, memoryview(source), stream)
    source[:] = b"\x22" * len(source)  # the caller reuses its buffer at once
    session.stream_synchronize(stream)
    assert bytes(session.memcpy_dtoh(addr, 8 * MiB, None)) == b"\x11" * (8 * MiB)


def test_copies_larger_than_the_staging_limit(
    open_session: Callable[..., BackendSession], chunks: ChunkMapper
) -> None:
    session = open_session(staging_limit=MiB)
    addr = chunks.map(session, 4 * MiB)
    stream = session.stream_create(0, 0)
    payload = bytes(range(256)) * (3 * 4096)
    source = bytearray(payload)
    session.memcpy_htod(addr, memoryview(source), stream)
    source[:] = bytes(len(source))
    assert bytes(session.memcpy_dtoh(addr, len(payload), stream)) == payload
    assert bytes(session.memcpy_dtoh(addr, len(payload), None)) == payload
    # small copies still go through the (small) staging pool, many times over
    for i in range(40):
        session.memcpy_htod(addr + i * 4096, memoryview(bytes([i]) * 4096), stream)
    session.stream_synchronize(stream)
    got = bytes(session.memcpy_dtoh(addr, 40 * 4096, None))
    assert got == b"".join(bytes([i]) * 4096 for i in range(40))


def test_dtod_copy_and_memsets_of_each_width(session: BackendSession, chunks: ChunkMapper) -> None:
    addr = chunks.map(session, 2 * MiB)
    session.memset(addr, 0x5A, 1, 16, None)
    session.memset(addr + 16, 0xBEEF, 2, 8, None)
    stream = session.stream_create(0, 0)
    session.memset(addr + 32, 0xDEADBEEF, 4, 4, stream)
    session.memcpy_dtod(addr + 1024, addr, 48, stream)
    session.stream_synchronize(stream)
    expected = (
        b"\x5a" * 16 + struct.pack("<8H", *[0xBEEF] * 8) + struct.pack("<4I", *[0xDEADBEEF] * 4)
    )
    assert bytes(session.memcpy_dtoh(addr + 1024, 48, None)) == expected
    with pytest.raises(CudaError) as exc:
        session.memset(addr, 0, 3, 1, None)
    assert exc.value.code == CUDA_ERROR_INVALID_VALUE


def test_copy_to_an_unmapped_address_is_a_cuda_error(
    backend: CudaBackend, session: BackendSession
) -> None:
    base, size, _ = backend.address_space()
    with pytest.raises(CudaError) as exc:
        session.memcpy_htod(base + size - 4096, memoryview(b"abc"), None)
    assert exc.value.code != 0
    assert "cuMemcpyHtoD" in exc.value.message
