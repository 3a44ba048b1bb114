"""Copies at the edges of the size rules: the inline limits (`Limits.small`, DtoH
`Limits.dtoh_small`) and one
shared-memory slot (`SHM_PIECE`: one slot goes on the direct synchronous path, more through
the windowed pipeline). Bytes come back exact at threshold-1, threshold and threshold+1, odd
sizes and zero, each by the path the rule names; a bad device range is still the CUDA error."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from behaviour_helpers import BACKEND, SUCCESS, check, open_session
from server_harness import running_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client.datapath import DataPaths, Limits, Mode
from cricket_client.datapath import Path as DataPath
from cricket_client.datapath.paths import SHM_PIECE

SMALL = Limits().small
DTOH_SMALL = Limits().dtoh_small
SIZES = [0, 1, 3, DTOH_SMALL - 1, DTOH_SMALL, DTOH_SMALL + 1, SMALL - 1, SMALL, SMALL + 1,
         (1 << 20) + 3, SHM_PIECE - 1, SHM_PIECE, SHM_PIECE + 1]


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("copy-edges"), backend=BACKEND) as server:
        yield server.address


@pytest.fixture(params=[Mode.AUTO, Mode.RPC, Mode.SHM], ids=lambda m: m.value)
def conn(request: pytest.FixtureRequest, address: str) -> Iterator[cricket_client.Connection]:
    c = open_session(address, make_default=True)
    c.datapaths = DataPaths(c, mode=request.param)
    yield c
    c.close()


def _expected(mode: Mode, size: int, small: int = SMALL) -> DataPath:
    if mode is Mode.AUTO:
        return DataPath.SHM if size >= small else DataPath.RPC
    return DataPath(mode.value)


@pytest.mark.parametrize("size", SIZES)
def test_bytes_are_exact_at_the_size_edges(conn: cricket_client.Connection, size: int) -> None:
    rng = np.random.default_rng(size)
    data = rng.integers(0, 256, size, dtype=np.uint8)
    ptr = check(cuda.cuMemAlloc(size + 8))
    guard = rng.integers(0, 256, 8, dtype=np.uint8)  # bytes right after the copy stay
    assert cuda.cuMemcpyHtoD(int(ptr) + size, guard, 8) == (SUCCESS,)
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (SUCCESS,)
    assert conn.datapaths is not None
    if size:
        assert conn.datapaths.last_path is _expected(conn.datapaths.mode, size)
    out = np.full(size + 8, 0xA5, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    if size:
        assert conn.datapaths.last_path is _expected(conn.datapaths.mode, size, DTOH_SMALL)
    assert np.array_equal(out[:size], data)
    assert (out[size:] == 0xA5).all()  # nothing written past the copy
    back = np.empty(8, dtype=np.uint8)
    assert cuda.cuMemcpyDtoH(back, int(ptr) + size, 8) == (SUCCESS,)
    assert np.array_equal(back, guard)
    check(cuda.cuMemFree(ptr))


@pytest.mark.parametrize("size", [SMALL, SHM_PIECE + 1])
def test_stream_copies_at_the_edges_keep_order(conn: cricket_client.Connection, size: int) -> None:
    stream = check(cuda.cuStreamCreate(0))
    ptr = check(cuda.cuMemAlloc(size))
    first = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
    second = np.random.default_rng(2).integers(0, 256, size, dtype=np.uint8)
    got = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyHtoDAsync(ptr, first, size, stream) == (SUCCESS,)
    assert cuda.cuMemcpyHtoDAsync(ptr, second, size, stream) == (SUCCESS,)
    assert cuda.cuMemcpyDtoHAsync(got, ptr, size, stream) == (SUCCESS,)
    assert cuda.cuStreamSynchronize(stream) == (SUCCESS,)
    assert np.array_equal(got, second)
    check(cuda.cuMemFree(ptr))
    check(cuda.cuStreamDestroy(stream))


@pytest.mark.parametrize("size", [SMALL - 1, SMALL, SHM_PIECE + 1])
def test_a_copy_past_the_allocation_is_refused(conn: cricket_client.Connection, size: int) -> None:
    ptr = check(cuda.cuMemAlloc(size - 1))
    data = np.ones(size, dtype=np.uint8)
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    assert cuda.cuMemcpyDtoH(data, ptr, size) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    check(cuda.cuMemFree(ptr))


def test_a_host_buffer_shorter_than_the_count_is_refused(conn: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(SMALL + 1))
    with pytest.raises(TypeError, match="srcHost"):
        cuda.cuMemcpyHtoD(ptr, bytes(SMALL), SMALL + 1)
    with pytest.raises(TypeError, match="dstHost"):
        cuda.cuMemcpyDtoH(bytearray(SMALL), ptr, SMALL + 1)
    check(cuda.cuMemFree(ptr))
