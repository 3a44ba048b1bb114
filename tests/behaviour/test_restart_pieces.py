"""An allocation of several checkpoint pieces (format 5: blobs in pieces of 8 MiB, each with
its own sha256) comes back bit-exact through cricket-restart, with either isolation; a byte
damaged in its middle piece fails the restart naming the blob and the piece, and nothing is
served. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from behaviour_helpers import BACKEND, ROOT, check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from checkpoint.format import PIECE_SIZE
from checkpoint.reader import Checkpoint
from cricket_client import driver as cuda

SIZE = 2 * PIECE_SIZE + 4099  # three pieces, the last one short
DATA = random.Random(15).randbytes(SIZE)


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def _checkpoint(tmp_path: Path, servers: list[ServerProcess]) -> tuple[object, int, Path]:
    """A session holding DATA, checkpointed; (its connection, the pointer, the blob file)."""
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    ptr = check(cuda.cuMemAlloc(SIZE))
    check(cuda.cuMemcpyHtoD(ptr, DATA, SIZE))
    cricket_client.checkpoint(tmp_path / "c")
    server.kill()
    (alloc,) = [a for a in Checkpoint.open(tmp_path / "c").manifest.sessions[0].allocations
                if a.size == SIZE]  # fmt: skip
    assert alloc.contents.piece_size == PIECE_SIZE and len(alloc.contents.pieces) == 3
    return conn, ptr, tmp_path / "c" / alloc.contents.file


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_an_allocation_of_several_pieces_comes_back_through_a_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    conn, ptr, _blob = _checkpoint(tmp_path, servers)
    try:
        restarted = start_restart(servers, tmp_path, tmp_path / "c", isolation=isolation)
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        assert read(ptr, SIZE) == DATA  # resumes, then reads every piece back
    finally:
        conn.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_damaged_middle_piece_fails_the_restart_naming_blob_and_piece(
    tmp_path: Path, servers: list[ServerProcess], isolation: str
) -> None:
    conn, _ptr, blob = _checkpoint(tmp_path, servers)
    conn.close()  # type: ignore[attr-defined]
    raw = bytearray(blob.read_bytes())
    raw[PIECE_SIZE + 1000] ^= 0x01  # in piece 2 of 3
    blob.write_bytes(bytes(raw))
    refused = subprocess.run(
        [sys.executable, "-m", "cricket_server", "restart", str(tmp_path / "c"), "--listen",
         "127.0.0.1:0", "--backend", BACKEND, "--isolation", isolation],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stderr
    assert str(blob) in refused.stderr, refused.stderr
    assert "piece 2 of 3" in refused.stderr and "checksum mismatch" in refused.stderr
    assert "listening" not in refused.stdout + refused.stderr.lower()
