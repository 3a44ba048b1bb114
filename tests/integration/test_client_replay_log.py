"""Each Connection owns its replay log from the start: `conn.replay_log`, numbering its calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_client_fakes import FakeServer

import cricket_client
from cricket_client.replay import ReplayLog, enable_replay


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    yield srv
    srv.stop()


def test_a_new_connection_has_an_empty_replay_log_of_its_own(server: FakeServer) -> None:
    first = cricket_client.connect(server.address)
    second = cricket_client.connect(server.address)
    try:
        assert isinstance(first.replay_log, ReplayLog)
        assert first.replay_log is not second.replay_log
        assert (first.replay_log.seq, first.replay_log.logging) == (0, False)
        assert first.sync("CU_MEM_ALLOC", 64)[0] == 0
        first.post("CU_MEMSET_ASYNC", first.sync("CU_MEM_ALLOC", 64)[1].value, 0, 1, 64, 0)
        assert first.sync("CU_CTX_SYNCHRONIZE")[0] == 0
        assert first.replay_log.seq == 4  # every counted call, pipelined ones too
        assert first.replay_log.named(1, 4) == [
            (1, "CU_MEM_ALLOC"),
            (2, "CU_MEM_ALLOC"),
            (3, "CU_MEMSET_ASYNC"),
            (4, "CU_CTX_SYNCHRONIZE"),
        ]
        assert second.replay_log.seq == 0
    finally:
        first.close()
        second.close()


def test_enable_replay_logs_the_calls_of_that_connection(server: FakeServer) -> None:
    conn = cricket_client.connect(server.address)
    try:
        conn.sync("CU_MEM_ALLOC", 64)
        enable_replay(conn, "/nowhere/ckpt")
        assert conn.replay_log.logging and conn.replay_log.checkpoint_path == "/nowhere/ckpt"
        err, reply = conn.sync("CU_MEM_ALLOC", 32)
        assert err == 0
        entries = list(conn.replay_log.entries)
        assert [(e.seq, e.proc, e.args) for e in entries] == [(2, "CU_MEM_ALLOC", (32,))]
        assert entries[0].expect == reply  # a pointer: its replay must give the same one
    finally:
        conn.close()
