"""Known answers across a crash and `cricket-restart`: queries answered by the client after a
checkpoint are not replayed (the server never counted them), the calls that did travel are,
and after the resume the client's count of calls equals the restored server's and every
answer is the restored server's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from behaviour_helpers import check, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server
from test_known_answers import device_answers, server_calls

import cricket_client
from cricket_client import driver as cuda


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def test_queries_answered_locally_after_a_checkpoint_replay_consistently(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        dev = check(cuda.cuDeviceGet(0))
        first = device_answers(dev)
        cricket_client.checkpoint(tmp_path / "ckpt")
        assert device_answers(dev) == first  # answered here: neither sent nor logged
        ptr = check(cuda.cuMemAlloc(4096))  # travels: logged for replay
        check(cuda.cuMemsetD8(ptr, 0x7E, 4096))
        assert device_answers(dev) == first
        assert server_calls(conn) == conn.replay_log.seq
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        check(cuda.cuCtxSynchronize())  # reconnects, replays the allocation and the memset
        assert conn.address == restarted.address
        assert server_calls(conn) == conn.replay_log.seq
        out = bytearray(4096)
        check(cuda.cuMemcpyDtoH(out, ptr, 4096))
        assert out == b"\x7e" * 4096
        assert device_answers(dev) == first  # the same device and context after the restore
        assert server_calls(conn) == conn.replay_log.seq
    finally:
        conn.close()
