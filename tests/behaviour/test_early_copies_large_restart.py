"""Early copies through shared-memory slots (cricket_client.early_copies, one MiB each) and
checkpoints: an operator checkpoint taken right after them holds them (it waits until every
call that reached the server ran), and a crash after an operator checkpoint loses none of
them (the client sends again, from their slots, those the restored session lacks). Runs on
CRICKET_TEST_BACKEND."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from behaviour_helpers import check, open_session
from checkpoint_helpers import (
    ServerProcess,
    operator_checkpoint,
    read,
    server_list,
    start_restart,
    start_server,
)

import cricket_client
from cricket_client import driver as cuda
from cricket_client.datapath.paths import SHM_SLOTS
from cricket_client.datapath.select import Path as DataPath

ROOT = Path(__file__).resolve().parents[2]
SIZE = 1 << 20


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def _fill(i: int) -> bytes:
    return bytes([(i * 37 + 1) & 0xFF]) * SIZE


def _early(conn: cricket_client.Connection, ptr: int, data: bytes) -> None:
    check(cuda.cuMemcpyHtoD(ptr, data, SIZE))
    assert conn.pending_count > 0  # returned early
    assert conn.datapaths is not None and conn.datapaths.last_path is DataPath.SHM


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_an_operator_checkpoint_right_after_large_early_copies_holds_them(
    tmp_path: Path, servers: list[ServerProcess], isolation: str
) -> None:
    target = tmp_path / "periodic"
    server = start_server(servers, tmp_path, isolation, "--checkpoint-dir", str(target))
    conn = open_session(server.address, make_default=False)
    try:
        with conn.active():
            ptr = int(check(cuda.cuMemAlloc(SIZE)))
            for round_ in range(4):
                for value in range(SHM_SLOTS + 2):  # more than the slots; the last one wins
                    _early(conn, ptr, _fill(round_ * 16 + value))
                ckpt = operator_checkpoint(server, target)
                (session,) = ckpt.manifest.sessions
                (alloc,) = session.allocations
                assert ckpt.read_blob(alloc.contents) == _fill(round_ * 16 + SHM_SLOTS + 1)
    finally:
        conn.close()


def test_large_early_copies_after_an_operator_checkpoint_survive_a_crash(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    ckpt = tmp_path / "ckpt"
    steps = 4 + SHM_SLOTS + 2
    try:
        base = int(check(cuda.cuMemAlloc(SIZE * steps)))
        for i in range(4):
            _early(conn, base + i * SIZE, _fill(i))
        taken = subprocess.run(
            [sys.executable, "-m", "checkpoint", "--server", server.operator, str(ckpt)],
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        assert taken.returncode == 0, taken.stderr
        after = range(4, 4 + SHM_SLOTS - 1)  # as many as the early slots: all can go again
        for i in after:
            _early(conn, base + i * SIZE, _fill(i))
        server.kill()
        restarted = start_restart(servers, tmp_path, ckpt)
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        for i in range(after.stop, steps):  # the first of these resumes the session
            check(cuda.cuMemcpyHtoD(base + i * SIZE, _fill(i), SIZE))
        assert read(base, SIZE * steps) == b"".join(_fill(i) for i in range(steps))
        assert conn.address != server.address
    finally:
        conn.close()
