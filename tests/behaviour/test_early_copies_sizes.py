"""A cuMemcpyHtoD returns early at every size whose bytes the client can stage without the
server: inline in its record below the shared-memory limit, in a shared-memory slot from it
(the server shares this host here) up to one slot. At each size boundary the data arrives
(taken at the call: the caller reuses its buffer at once), more copies than slots keep their
order, a copy that would fail answers itself, and a failure of earlier work surfaces at the
next synchronizing call. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client.datapath import DataPaths
from cricket_client.datapath.paths import SHM_PIECE, SHM_SLOTS
from cricket_client.datapath.select import Limits, Path

E = cuda.CUresult
SMALL = Limits().small
BOUNDARIES = [
    1,
    SMALL - 1,
    SMALL,
    SMALL + 1,
    1 << 20,
    (4 << 20) + 3,
    SHM_PIECE - 1,
    SHM_PIECE,
]


def _pattern(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def _read(ptr: Any, n: int) -> np.ndarray:
    out = np.empty(n, dtype=np.uint8)
    check(cuda.cuMemcpyDtoH(out, ptr, n))
    return out


@pytest.mark.parametrize("size", BOUNDARIES)
def test_a_copy_returns_early_at_each_boundary_and_its_bytes_arrive(
    session: cricket_client.Connection, size: int
) -> None:
    ptr = check(cuda.cuMemAlloc(size + 64))
    check(cuda.cuMemsetD8(ptr, 0xEE, size + 64))
    host = _pattern(size, size)
    sent = host.copy()
    check(cuda.cuMemcpyHtoD(ptr, host, size))
    assert session.pending_count == 1, "returned before the server answered"
    assert session.datapaths is not None
    assert session.datapaths.last_path is (Path.RPC if size < SMALL else Path.SHM)
    host[:] = 0x5A  # the caller reuses its buffer at once
    back = _read(ptr, size + 64)
    np.testing.assert_array_equal(back[:size], sent)
    assert bytes(back[size:]) == b"\xee" * 64  # nothing written past the copy
    assert session.pending_count == 0


def test_a_copy_past_one_slot_waits_for_its_answer(session: cricket_client.Connection) -> None:
    size = SHM_PIECE + 1
    ptr = check(cuda.cuMemAlloc(size))
    host = _pattern(size, 7)
    check(cuda.cuMemcpyHtoD(ptr, host, size))
    assert session.pending_count == 0
    np.testing.assert_array_equal(_read(ptr, size), host)


def test_more_early_copies_than_slots_keep_their_order(
    session: cricket_client.Connection,
) -> None:
    """Each slot is filled again only after the server took its bytes; copies to one place
    land in the order made (the last wins), copies to others all arrive."""
    size = 256 << 10
    count = 3 * SHM_SLOTS + 1
    same = check(cuda.cuMemAlloc(size))
    many = check(cuda.cuMemAlloc(size * count))
    buf = np.empty(size, dtype=np.uint8)
    for i in range(count):
        buf[:] = i + 1  # one buffer, reused for every copy
        check(cuda.cuMemcpyHtoD(same, buf, size))
        check(cuda.cuMemcpyHtoD(int(many) + i * size, buf, size))
    assert session.pending_count > 0
    assert bytes(_read(same, size)) == bytes([count]) * size
    back = _read(many, size * count)
    for i in range(count):
        assert bytes(back[i * size : (i + 1) * size]) == bytes([i + 1]) * size, i


def test_early_copies_then_stream_and_large_copies_through_the_slots(
    session: cricket_client.Connection,
) -> None:
    """Copies that wait (on a stream, past one slot) and reads share the ring with early
    copies still in flight: none overwrites bytes the server has not taken yet."""
    size = 1 << 20
    a, b = check(cuda.cuMemAlloc(size * SHM_SLOTS)), check(cuda.cuMemAlloc(size))
    big = SHM_PIECE + SHM_PIECE // 2
    c = check(cuda.cuMemAlloc(big))
    stream = check(cuda.cuStreamCreate(0))
    chunks = [_pattern(size, 100 + i) for i in range(SHM_SLOTS)]
    for i, chunk in enumerate(chunks):
        check(cuda.cuMemcpyHtoD(int(a) + i * size, chunk, size))
    on_stream = _pattern(size, 200)
    check(cuda.cuMemcpyHtoDAsync(b, on_stream, size, stream))
    check(cuda.cuStreamSynchronize(stream))
    large = _pattern(big, 300)
    check(cuda.cuMemcpyHtoD(c, large, big))
    for i, chunk in enumerate(chunks):
        check(cuda.cuMemcpyHtoD(int(a) + i * size, chunk[::-1].copy(), size))
    np.testing.assert_array_equal(_read(b, size), on_stream)
    np.testing.assert_array_equal(_read(c, big), large)
    back = _read(a, size * SHM_SLOTS)
    for i, chunk in enumerate(chunks):
        np.testing.assert_array_equal(back[i * size : (i + 1) * size], chunk[::-1], str(i))
    check(cuda.cuStreamDestroy(stream))


def test_a_large_copy_that_would_fail_answers_itself(
    session: cricket_client.Connection,
) -> None:
    size = 1 << 20
    ptr = check(cuda.cuMemAlloc(size))
    data = bytes(size)
    assert cuda.cuMemcpyHtoD(int(ptr) + 8, data, size) == (E.CUDA_ERROR_INVALID_VALUE,)
    assert session.pending_count == 0
    spare = check(cuda.cuMemAlloc(size))
    check(cuda.cuMemFree(spare))
    assert cuda.cuMemcpyHtoD(spare, data, size)[0] != E.CUDA_SUCCESS  # freed: not early
    assert session.pending_count == 0


def test_a_sticky_failure_surfaces_after_a_large_early_copy(
    session: cricket_client.Connection, kernels: Any
) -> None:
    size = 1 << 20
    ptr = check(cuda.cuMemAlloc(size))
    poke = check(cuda.cuModuleGetFunction(kernels, b"poke"))
    args = ((16, 1), (None, ctypes.c_int))  # writes outside every allocation
    assert cuda.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, 0, args, 0) == (E.CUDA_SUCCESS,)
    assert cuda.cuMemcpyHtoD(ptr, bytes(size), size) == (E.CUDA_SUCCESS,)  # returned early
    assert session.pending_count > 0
    word = bytearray(4)
    assert cuda.cuMemcpyDtoH(word, ptr, 4) == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert cuda.cuCtxSynchronize() == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)  # sticky
    assert cuda.cuMemcpyHtoD(ptr, bytes(size), size) == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)


@pytest.mark.parametrize("size", [SMALL - 1, SMALL, 1 << 20])
def test_reads_at_the_boundaries_come_back_whole(
    session: cricket_client.Connection, size: int
) -> None:
    ptr = check(cuda.cuMemAlloc(size))
    host = _pattern(size, size + 1)
    check(cuda.cuMemcpyHtoD(ptr, host, size))
    np.testing.assert_array_equal(_read(ptr, size), host)
    half = _read(int(ptr) + size // 2, size - size // 2)
    np.testing.assert_array_equal(half, host[size // 2 :])


def test_the_runtime_copy_of_a_mebibyte_returns_early(server_address: str) -> None:
    from cricket_client import runtime as cudart

    size = 1 << 20
    conn = cricket_client.connect(server_address)
    try:
        err, ptr = cudart.cudaMalloc(size)
        assert err == cudart.cudaError_t.cudaSuccess
        host = _pattern(size, 11)
        h2d = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
        assert cudart.cudaMemcpy(ptr, host, size, h2d) == (cudart.cudaError_t.cudaSuccess,)
        assert conn.pending_count == 1  # returned early
        back = np.empty(size, dtype=np.uint8)
        d2h = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        assert cudart.cudaMemcpy(back, ptr, size, d2h) == (cudart.cudaError_t.cudaSuccess,)
        np.testing.assert_array_equal(back, host)
        assert cudart.cudaFree(ptr) == (cudart.cudaError_t.cudaSuccess,)
    finally:
        conn.close()


@pytest.mark.parametrize("size", [SMALL, 1 << 20, 4 << 20])
def test_without_shared_memory_a_large_copy_returns_once_written(
    session: cricket_client.Connection, size: int
) -> None:
    """A server on another host (here: shared memory switched off): up to one record the
    copy returns once its record is written; the caller's buffer is free at once."""
    paths = session.datapaths = DataPaths(session)
    paths._off.add(Path.SHM)
    ptr = check(cuda.cuMemAlloc(size))
    host = _pattern(size, size + 2)
    sent = host.copy()
    check(cuda.cuMemcpyHtoD(ptr, host, size))
    assert session.pending_count == 1, "returned before the server answered"
    assert paths.last_path is Path.RPC
    host[:] = 0x33
    np.testing.assert_array_equal(_read(ptr, size), sent)
    more = (4 << 20) + 1  # more than one record: waits
    big = check(cuda.cuMemAlloc(more))
    check(cuda.cuMemcpyHtoD(big, _pattern(more, 5), more))
    assert session.pending_count == 0
    np.testing.assert_array_equal(_read(big, more), _pattern(more, 5))
