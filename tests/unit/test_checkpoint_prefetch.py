"""A restore reads its blobs ahead in parallel and copies them as they arrive: each blob is
read once, a damaged one still fails the restore and leaves nothing behind, no client can
take a restored session before every blob is checked, and prefetching ends its threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import checkpoint.format
from checkpoint import pieces
from checkpoint.format import CheckpointError
from checkpoint.pieces import Blob, Piece
from checkpoint.reader import Checkpoint, blob_refs
from cricket_server.backends.base import CudaError
from cricket_server.checkpoints.sessions import restore_checkpoint, write_checkpoint
from tests.unit.test_checkpoint_restore import build, manager


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("checkpoint-")]


def _wait_no_threads() -> list[str]:
    deadline = time.monotonic() + 30
    while _threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    return _threads()


def test_no_client_takes_a_session_before_every_blob_is_checked(tmp_path: Path) -> None:
    first, _ = build(manager())
    second, _ = build(first.manager)
    write_checkpoint(first.manager, [first, second], tmp_path / "c")
    m = manager()
    refused: list[bool] = []

    def try_to_take(n: int) -> None:  # called as each piece reaches the device
        try:
            m.resume(first.token)
        except CudaError:
            refused.append(True)
        else:
            refused.append(False)

    restore_checkpoint(m, tmp_path / "c", progress=try_to_take)
    assert refused and all(refused)
    assert m.resume(first.token).id == first.id  # once all of it is back, it can be taken


def test_a_damaged_last_blob_releases_the_sessions_already_copied(tmp_path: Path) -> None:
    first, _ = build(manager())
    second, _ = build(first.manager)
    write_checkpoint(first.manager, [first, second], tmp_path / "c")
    body = Checkpoint.open(tmp_path / "c").manifest
    last = body.sessions[-1].allocations[-1].contents.file
    blob = tmp_path / "c" / last
    raw = bytearray(blob.read_bytes())
    raw[-1] ^= 1
    blob.write_bytes(bytes(raw))
    m = manager()
    free = m.arena.free_bytes()
    with pytest.raises(CheckpointError, match="checksum") as failed:
        restore_checkpoint(m, tmp_path / "c")
    assert failed.value.path == str(blob)
    assert m.sessions() == [] and m.arena.free_bytes() == free
    assert _wait_no_threads() == []


def test_prefetching_serves_every_blob_in_any_order_and_ends_its_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint.format, "PIECE_SIZE", 4096)  # many pieces per blob
    old, _ = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    ckpt = Checkpoint.open(tmp_path / "c")
    refs = [ref for _what, ref in blob_refs(ckpt.manifest)]
    expected = {ref.file: ckpt.read_blob(ref) for ref in refs}
    got = {}
    with ckpt.prefetching(refs):
        for ref in reversed(refs):  # against the order read ahead
            got[ref.file] = b"".join(bytes(p) for p in ckpt.pieces(ref))
    assert got == expected
    with ckpt.prefetching(refs):  # left before anything was taken
        time.sleep(0.05)
    assert _wait_no_threads() == []


def test_prefetching_holds_a_bounded_number_of_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint.format, "PIECE_SIZE", 4096)  # the 3 MiB allocation: 768 pieces
    old, _ = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    ckpt = Checkpoint.open(tmp_path / "c")
    refs = [ref for _what, ref in blob_refs(ckpt.manifest)]
    assert max(len(ref.pieces) for ref in refs) == 768
    read = 0
    original = Blob.read

    def counting(self: Blob, piece: Piece) -> bytes:
        nonlocal read
        read += 1
        return original(self, piece)

    monkeypatch.setattr(Blob, "read", counting)
    with ckpt.prefetching(refs):
        time.sleep(1.0)  # nothing taken: the threads stop once their pieces wait
        assert 0 < read <= 2 * pieces.default_threads()
    assert _wait_no_threads() == []
