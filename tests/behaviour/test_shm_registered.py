"""Shared-memory copies on the backend under test, where the `cuda` backend page-locks the
segment and copies straight between it and the device (sim: its usual path). Bytes must
arrive exactly whatever the size and however the copy spans the ring's slots, and a slot the
client refills must never change a copy already answered. On cuda the server must say that
the segment was page-locked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from behaviour_helpers import BACKEND, check, open_session
from server_harness import running_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client.datapath import DataPaths, Mode
from cricket_client.datapath import Path as DataPath
from cricket_client.datapath.paths import SHM_PIECE, SHM_SLOTS

SIZES = [1, 4096 + 3, (8 << 20) + 5, SHM_PIECE * (SHM_SLOTS + 1) + 5]  # the last wraps the ring
PAGE_LOCKED = "page-locked: copies go straight to the device"


@pytest.fixture
def shm_session(session: cricket_client.Connection) -> cricket_client.Connection:
    session.datapaths = DataPaths(session, mode=Mode.SHM)
    return session


def _bytes(size: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


@pytest.mark.parametrize("size", SIZES)
def test_synchronous_copies_through_the_segment_are_bit_exact(
    shm_session: cricket_client.Connection, size: int
) -> None:
    data = _bytes(size, size)
    out = np.zeros_like(data)
    ptr = check(cuda.cuMemAlloc(size))
    check(cuda.cuMemcpyHtoD(ptr, data, size))
    check(cuda.cuMemcpyDtoH(out, ptr, size))
    assert shm_session.datapaths is not None
    assert shm_session.datapaths.last_path is DataPath.SHM
    assert np.array_equal(out, data)
    check(cuda.cuMemFree(ptr))


def test_asynchronous_copies_reusing_slots_do_not_disturb_each_other(
    shm_session: cricket_client.Connection,
) -> None:
    """Each copy wraps the ring, and the next one refills the same slots at once."""
    size = SIZES[-1]
    first, second = _bytes(size, 1), _bytes(size, 2)
    out_first, out_second = np.zeros_like(first), np.zeros_like(second)
    stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    a = check(cuda.cuMemAlloc(size))
    b = check(cuda.cuMemAlloc(size))
    check(cuda.cuMemcpyHtoDAsync(a, first, size, stream))
    check(cuda.cuMemcpyHtoDAsync(b, second, size, stream))
    check(cuda.cuMemcpyDtoHAsync(out_first, a, size, stream))
    check(cuda.cuMemcpyDtoHAsync(out_second, b, size, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.array_equal(out_first, first)
    assert np.array_equal(out_second, second)
    for ptr in (a, b):
        check(cuda.cuMemFree(ptr))
    check(cuda.cuStreamDestroy(stream))


@pytest.fixture(params=["thread", "process"])
def logged_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A server of its own at --log-level debug: (address, its log file)."""
    folder = tmp_path_factory.mktemp(f"shm-{request.param}")
    with running_server(
        folder, "--log-level", "debug", backend=BACKEND, isolation=request.param
    ) as server:
        yield server.address, server.log_path


def test_the_cuda_backend_page_locks_the_segment_once(logged_server: tuple[str, Path]) -> None:
    address, log = logged_server
    conn = open_session(address, make_default=True)
    try:
        conn.datapaths = DataPaths(conn, mode=Mode.SHM)
        for i, size in enumerate(SIZES[:3]):
            data = _bytes(size, i)
            out = np.zeros_like(data)
            ptr = check(cuda.cuMemAlloc(size))
            check(cuda.cuMemcpyHtoD(ptr, data, size))
            check(cuda.cuMemcpyDtoH(out, ptr, size))
            assert np.array_equal(out, data)
            check(cuda.cuMemFree(ptr))
    finally:
        conn.close()
    text = log.read_text()
    assert "not page-locked" not in text, text  # a refusal on this machine: see the log
    assert text.count(PAGE_LOCKED) == (1 if BACKEND == "cuda" else 0), text
