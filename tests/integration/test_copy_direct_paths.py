"""The direct synchronous path for copies: a small DtoH (one chunk under the direct-read
size) is one call whose data is copied once into the caller's buffer, larger ones are still
received into place; a shared-memory copy of one slot (up to SHM_PIECE) is one call, not the
windowed pipeline, larger ones still go through the window. Bytes, errors and the deferred
failures of earlier pipelined calls come back as before."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from server_harness import running_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client.datapath import DataPaths, Mode
from cricket_client.datapath import Path as DataPath
from cricket_client.datapath.paths import SHM_PIECE
from cricket_xdr.rpc.record import DIRECT_READ_MIN

SUCCESS = cuda.CUresult.CUDA_SUCCESS


def _ok(result: tuple) -> object:
    assert result[0] == SUCCESS, result
    return result[1] if len(result) == 2 else None


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("direct-copies"), backend="sim") as server:
        yield server.address


def _session(address: str, mode: Mode) -> Iterator[cricket_client.Connection]:
    c = cricket_client.connect(address)
    c.datapaths = DataPaths(c, mode=mode)
    _ok(cuda.cuInit(0))
    dev = _ok(cuda.cuDeviceGet(0))
    _ok(cuda.cuCtxSetCurrent(_ok(cuda.cuDevicePrimaryCtxRetain(dev))))
    yield c
    c.close()


@pytest.fixture
def conn(address: str) -> Iterator[cricket_client.Connection]:
    yield from _session(address, Mode.AUTO)


@pytest.fixture
def shm_conn(address: str) -> Iterator[cricket_client.Connection]:
    yield from _session(address, Mode.SHM)


# -- small DtoH ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 3, 4096, 4097, DIRECT_READ_MIN - 1])
def test_a_small_dtoh_is_one_direct_call(
    conn: cricket_client.Connection, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    ptr = _ok(cuda.cuMemAlloc(size))
    _ok(cuda.cuMemcpyHtoD(ptr, data, size))
    _ok(cuda.cuCtxSynchronize())  # the copy may have returned early: nothing in flight now

    def no_pending(*args: object, **kwargs: object) -> None:
        raise AssertionError("a small DtoH went the pending-call way")

    monkeypatch.setattr(conn._rpc, "call_async", no_pending)
    out = np.full(size + 4, 7, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    assert np.array_equal(out[:size], data) and (out[size:] == 7).all()
    assert cuda.cuMemcpyDtoH(out, int(ptr) + 1, size) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    monkeypatch.undo()
    _ok(cuda.cuMemFree(ptr))


def test_a_larger_dtoh_is_still_received_into_place(conn: cricket_client.Connection) -> None:
    size = DIRECT_READ_MIN + 5
    data = np.random.default_rng(5).integers(0, 256, size, dtype=np.uint8)
    ptr = _ok(cuda.cuMemAlloc(size))
    _ok(cuda.cuMemcpyHtoD(ptr, data, size))
    out = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    assert np.array_equal(out, data)
    _ok(cuda.cuMemFree(ptr))


def test_a_failure_of_an_earlier_pipelined_copy_is_reported_by_the_small_dtoh(
    conn: cricket_client.Connection,
) -> None:
    ptr = _ok(cuda.cuMemAlloc(16))
    stream = _ok(cuda.cuStreamCreate(0))
    # Pipelined, answered later: past the allocation's end.
    assert cuda.cuMemcpyHtoDAsync(int(ptr) + 8, bytes(16), 16, stream) == (SUCCESS,)
    out = bytearray(16)
    assert cuda.cuMemcpyDtoH(out, ptr, 16) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    assert cuda.cuMemcpyDtoH(out, ptr, 16) == (SUCCESS,)  # reported once
    _ok(cuda.cuStreamDestroy(stream))
    _ok(cuda.cuMemFree(ptr))


# -- shared memory, one slot ------------------------------------------------------------------


def _windows(conn: cricket_client.Connection, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the copies that go through the windowed pipeline."""
    used: list[int] = []
    real = conn.sync_window

    def counted(proc: str, calls: list, **kwargs: object) -> int:
        used.append(len(calls))
        return real(proc, calls, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(conn, "sync_window", counted)
    return used


@pytest.mark.parametrize("size", [1, 64 << 10, (1 << 20) + 3, SHM_PIECE])
def test_one_slot_is_one_direct_call(
    shm_conn: cricket_client.Connection, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    ptr = _ok(cuda.cuMemAlloc(size))
    used = _windows(shm_conn, monkeypatch)
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (SUCCESS,)
    out = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    assert shm_conn.datapaths is not None and shm_conn.datapaths.last_path is DataPath.SHM
    assert np.array_equal(out, data)
    assert used == []
    _ok(cuda.cuMemFree(ptr))


def test_more_than_one_slot_goes_through_the_window(
    shm_conn: cricket_client.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = SHM_PIECE + 5
    data = np.random.default_rng(9).integers(0, 256, size, dtype=np.uint8)
    ptr = _ok(cuda.cuMemAlloc(size))
    used = _windows(shm_conn, monkeypatch)
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (SUCCESS,)
    out = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    assert np.array_equal(out, data)
    assert used == [2, 2]
    _ok(cuda.cuMemFree(ptr))


def test_a_bad_range_is_refused_on_the_direct_path(shm_conn: cricket_client.Connection) -> None:
    ptr = _ok(cuda.cuMemAlloc(100))
    data = np.ones(128 << 10, dtype=np.uint8)
    bad = cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    assert cuda.cuMemcpyHtoD(ptr, data, data.nbytes) == (bad,)
    assert cuda.cuMemcpyDtoH(data, ptr, data.nbytes) == (bad,)
    assert (data == 1).all()  # a failed DtoH leaves the buffer as it was
    _ok(cuda.cuMemFree(ptr))
