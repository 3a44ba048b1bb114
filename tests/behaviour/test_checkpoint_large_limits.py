"""A device limit the server accepted is checkpointed whatever its size: limits are size_t,
so a value above 2**63 must be kept, not break the checkpoint (found by the record fuzzer:
the checkpoint's handler failed encoding such a limit)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from behaviour_helpers import check, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda

HUGE = (1 << 63) + (1 << 20)


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def test_a_limit_above_2_63_survives_checkpoint_and_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        check(cuda.cuInit(0))
        ctx = check(cuda.cuDevicePrimaryCtxRetain(check(cuda.cuDeviceGet(0))))
        check(cuda.cuCtxSetCurrent(ctx))
        limit = cuda.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE
        (err,) = cuda.cuCtxSetLimit(limit, HUGE)
        if err != cuda.CUresult.CUDA_SUCCESS:
            pytest.skip(f"this device refuses a heap limit of {HUGE} ({err.name})")
        kept = check(cuda.cuCtxGetLimit(limit))
        cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        assert check(cuda.cuCtxGetLimit(limit)) == kept
    finally:
        conn.close()
