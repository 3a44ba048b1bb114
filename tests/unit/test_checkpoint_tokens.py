"""Session tokens at rest: reading a checkpoint's files does not give one a session's token
(a salted digest is kept instead); a restored session is still taken back by the HELLO of
its client's token, and only by that; a restored session checkpointed again keeps its
digest; a checkpoint of the format that kept tokens is refused, not misread."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_checkpoint_workers import FakePool, FakeWorker
from test_service import Client

from checkpoint.format import MANIFEST, CheckpointError
from checkpoint.reader import Checkpoint
from cricket_server.backends import make_backend
from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.checkpoints.sessions import restore_checkpoint, write_checkpoint
from cricket_server.checkpoints.workers import checkpoint_workers
from cricket_server.memory import AddressArena
from cricket_server.service import CricketService
from cricket_server.session import Session, SessionManager


def manager() -> SessionManager:
    backend = make_backend("sim")
    return SessionManager(backend, AddressArena(*backend.address_space()))


def open_session(m: SessionManager) -> Session:
    s = m.open("127.0.0.1:1", "test")
    s.init(0)
    s.ctx_set_current(s.primary_ctx_retain(0))
    ptr = s.mem_alloc(4096)
    s.memcpy_htod(ptr, memoryview(b"\x5a" * 4096))
    return s


def assert_nowhere(path: Path, secrets: list[bytes]) -> None:
    """None of `secrets` (raw or as hex) is in any file below `path`."""
    files = [p for p in path.rglob("*") if p.is_file()]
    assert files
    for file in files:
        data = file.read_bytes()
        for secret in secrets:
            assert secret not in data, f"{file} holds a session token"
            assert secret.hex().encode() not in data.lower(), f"{file} holds a token in hex"


def test_no_session_token_is_written_into_a_checkpoint(tmp_path: Path) -> None:
    m = manager()
    sessions = [open_session(m), open_session(m)]
    write_checkpoint(m, sessions, tmp_path / "c")
    assert_nowhere(tmp_path / "c", [s.token for s in sessions])


def test_no_session_token_is_written_by_worker_processes(tmp_path: Path) -> None:
    pool = FakePool()
    pool.workers = [FakeWorker(pool, pid, bytes([pid]) * 5000) for pid in (1, 2)]
    checkpoint_workers(pool, tmp_path / "c")
    assert_nowhere(tmp_path / "c", [w.session.token for w in pool.workers])


def test_a_restored_session_is_taken_back_by_its_token_only(tmp_path: Path) -> None:
    old = open_session(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    m = manager()
    (restored,) = restore_checkpoint(m, tmp_path / "c").sessions
    assert restored.token != old.token  # the restored server was never told the token
    with pytest.raises(CudaError, match="no restored session waits for that token"):
        m.resume(old.token[:-1] + bytes([old.token[-1] ^ 1]))
    assert m.resume(old.token) is restored
    assert restored.token == old.token  # learnt from the client's HELLO


def test_hello_with_the_token_resumes_a_restored_session(tmp_path: Path) -> None:
    old = open_session(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    m = manager()
    restore_checkpoint(m, tmp_path / "c")
    service = CricketService(m)
    assert Client(service).hello(token=b"\x00" * 32).err == CUDA_ERROR_INVALID_VALUE
    client = Client(service)
    ok = client.hello(token=old.token).value
    assert (ok.session_id, ok.session_token) == (old.id, old.token)
    assert client.hello(token=old.token).value.session_id == old.id  # the same again: fine


def test_a_restored_session_checkpointed_again_keeps_its_token(tmp_path: Path) -> None:
    """cricket-restart --checkpoint-dir: the restored server writes the digest it read; the
    client of the first server still takes its session back from the second checkpoint."""
    old = open_session(manager())
    write_checkpoint(old.manager, [old], tmp_path / "first")
    middle = manager()
    restore_checkpoint(middle, tmp_path / "first")  # no client has come back yet
    write_checkpoint(middle, middle.sessions(), tmp_path / "second")
    assert_nowhere(tmp_path / "second", [old.token])
    last = manager()
    (restored,) = restore_checkpoint(last, tmp_path / "second").sessions
    assert last.resume(old.token) is restored and restored.id == old.id


def test_a_checkpoint_of_the_format_that_kept_tokens_is_refused(tmp_path: Path) -> None:
    old = open_session(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    manifest = tmp_path / "c" / MANIFEST
    data = bytearray(manifest.read_bytes())
    data[4:8] = (1).to_bytes(4, "big")
    manifest.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="format version 1 is not supported .*older"):
        Checkpoint.open(tmp_path / "c")
