"""A loop of early-returned copies (cricket_client.early_copies) survives a server crash
and cricket-restart in its middle: after a checkpoint the program took (its replay log holds
the copies) and after an operator checkpoint (the client keeps its last early copies and
sends again those the restored session lacks). Runs on CRICKET_TEST_BACKEND."""

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

ROOT = Path(__file__).resolve().parents[2]
SLOT = 1024
STEPS = 40


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def _slot(i: int) -> bytes:
    return bytes([i + 1]) * SLOT


def _loop(
    conn: cricket_client.Connection, base: int, steps: range, during: dict[int, object]
) -> None:
    for i in steps:
        check(cuda.cuMemcpyHtoD(base + i * SLOT, _slot(i), SLOT))
        assert i > 20 or conn.pending_count > 0  # returned early (after the restart the
        # client proves its allocations again: the restored session may be elsewhere)
        action = during.get(i)
        if action is not None:
            action()  # type: ignore[operator]


@pytest.mark.parametrize("who", ["program", "operator"])
def test_a_loop_of_early_copies_survives_a_restart_in_its_middle(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, who: str
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    ckpt = tmp_path / "ckpt"

    def take_checkpoint() -> None:
        if who == "program":
            cricket_client.checkpoint(ckpt)
            return
        taken = subprocess.run(
            [sys.executable, "-m", "checkpoint", "--server", server.operator, str(ckpt)],
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        assert taken.returncode == 0, taken.stderr

    def crash_and_restart() -> None:
        server.kill()
        restarted = start_restart(servers, tmp_path, ckpt)
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

    try:
        base = int(check(cuda.cuMemAlloc(SLOT * STEPS)))
        _loop(conn, base, range(STEPS), {20: take_checkpoint, 29: crash_and_restart})
        assert read(base, SLOT * STEPS) == b"".join(_slot(i) for i in range(STEPS))
        assert conn.address != server.address
    finally:
        conn.close()


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_an_operator_checkpoint_right_after_early_copies_holds_them(
    tmp_path: Path, servers: list[ServerProcess], isolation: str
) -> None:
    """The copies returned before the server read them; the checkpoint (SIGUSR1) waits until
    every call that reached the server ran, so each one holds the last copy."""
    target = tmp_path / "periodic"
    server = start_server(servers, tmp_path, isolation, "--checkpoint-dir", str(target))
    conn = open_session(server.address, make_default=False)
    try:
        with conn.active():
            ptr = check(cuda.cuMemAlloc(4096))
            for round_ in range(8):
                for value in range(8):  # several in flight; the last one wins
                    check(cuda.cuMemcpyHtoD(ptr, bytes([round_ * 8 + value]) * 4096, 4096))
                assert conn.pending_count > 0  # returned early
                ckpt = operator_checkpoint(server, target)
                (session,) = ckpt.manifest.sessions
                (alloc,) = session.allocations
                assert ckpt.read_blob(alloc.contents) == bytes([round_ * 8 + 7]) * 4096
    finally:
        conn.close()
