"""A shared-memory copy of one slot (up to SHM_PIECE) is one direct synchronous call, not
the windowed pipeline; a larger one still goes through the window. Bytes are exact."""

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

SUCCESS = cuda.CUresult.CUDA_SUCCESS


def _ok(result: tuple) -> object:
    assert result[0] == SUCCESS, result
    return result[1] if len(result) == 2 else None


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("shm-slot"), backend="sim") as server:
        yield server.address


@pytest.fixture
def conn(address: str) -> Iterator[cricket_client.Connection]:
    c = cricket_client.connect(address)
    c.datapaths = DataPaths(c, mode=Mode.SHM)
    _ok(cuda.cuInit(0))
    dev = _ok(cuda.cuDeviceGet(0))
    _ok(cuda.cuCtxSetCurrent(_ok(cuda.cuDevicePrimaryCtxRetain(dev))))
    yield c
    c.close()


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
    conn: cricket_client.Connection, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    ptr = _ok(cuda.cuMemAlloc(size))
    used = _windows(conn, monkeypatch)
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (SUCCESS,)
    out = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    assert conn.datapaths is not None and conn.datapaths.last_path is DataPath.SHM
    assert np.array_equal(out, data)
    assert used == []
    _ok(cuda.cuMemFree(ptr))


def test_more_than_one_slot_goes_through_the_window(
    conn: cricket_client.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = SHM_PIECE + 5
    data = np.random.default_rng(9).integers(0, 256, size, dtype=np.uint8)
    ptr = _ok(cuda.cuMemAlloc(size))
    used = _windows(conn, monkeypatch)
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (SUCCESS,)
    out = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    assert np.array_equal(out, data)
    assert used == [2, 2]
    _ok(cuda.cuMemFree(ptr))


def test_a_bad_range_is_refused_on_the_direct_path(conn: cricket_client.Connection) -> None:
    ptr = _ok(cuda.cuMemAlloc(100))
    data = np.ones(128 << 10, dtype=np.uint8)
    bad = cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    assert cuda.cuMemcpyHtoD(ptr, data, data.nbytes) == (bad,)
    assert cuda.cuMemcpyDtoH(data, ptr, data.nbytes) == (bad,)
    assert (data == 1).all()  # a failed DtoH leaves the buffer as it was
    _ok(cuda.cuMemFree(ptr))
