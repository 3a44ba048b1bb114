"""Blobs in pieces (checkpoint format 5): a damaged or missing piece is found and named, the
restore releases everything it made and the sessions already there go on; a piece list that
does not describe its blob is refused before the device is touched; the previous format is
refused by name; a blob much larger than a piece is restored in bounded memory."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import checkpoint.format
import checkpoint.reader
from checkpoint import pieces
from checkpoint.format import MANIFEST, CheckpointError, decode_manifest, encode_manifest
from checkpoint.pieces import Blob, Piece
from checkpoint.reader import Checkpoint, blob_refs
from checkpoint.writer import CheckpointWriter
from cricket_server.backends.sim.backend import SimSession
from cricket_server.checkpoints.restart import check_files
from cricket_server.checkpoints.sessions import restore_checkpoint, write_checkpoint
from cricket_server.session import SessionManager
from rpc_spec import checkpoint_rpc as ck
from tests.unit.test_checkpoint_restore import SIZES, build, manager

PIECE = 64 << 10  # as written in these tests: the 3 MiB allocation is 48 pieces
BIG = SIZES[-1]


def _threads() -> list[str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = [t.name for t in threading.enumerate() if t.name.startswith("checkpoint-")]
        if not left:
            return []
        time.sleep(0.02)
    return left


@dataclass
class Served:
    """A server's manager with one live session, and a checkpoint of another session."""

    manager: SessionManager
    ptr: int  # the live session's allocation
    free: int  # free device address bytes with the live session alone
    path: Path


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Served:
    monkeypatch.setattr(checkpoint.format, "PIECE_SIZE", PIECE)
    m = manager()
    live = m.open("127.0.0.1:2", "live")
    live.init(0)
    live.ctx_set_current(live.primary_ctx_retain(0))
    ptr = live.mem_alloc(4096)
    live.memcpy_htod(ptr, memoryview(b"\x5a" * 4096))
    free = m.arena.free_bytes()
    old, _ = build(m)
    write_checkpoint(m, [old], tmp_path / "c")
    old.close("test")
    assert m.arena.free_bytes() == free
    return Served(m, ptr, free, tmp_path / "c")


def _big(path: Path) -> ck.blob_ref:
    (ref,) = [a.contents for a in Checkpoint.open(path).manifest.sessions[0].allocations
              if a.size == BIG]  # fmt: skip
    return ref


def _nothing_restored(served: Served) -> None:
    (live,) = served.manager.sessions()  # only the session that was there
    assert live.client_name == "live" and served.manager.arena.free_bytes() == served.free
    assert bytes(live.memcpy_dtoh(served.ptr, 4096)) == b"\x5a" * 4096  # it goes on
    assert _threads() == []


def test_a_damaged_piece_in_the_middle_is_named_and_nothing_is_restored(served: Served) -> None:
    ckpt_dir = served.path
    ref = _big(ckpt_dir)
    assert ref.piece_size == PIECE and len(ref.pieces) == 48
    blob = ckpt_dir / ref.file
    raw = bytearray(blob.read_bytes())
    raw[20 * PIECE + 123] ^= 0x10  # in piece 21 of 48
    blob.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError) as failed:
        restore_checkpoint(served.manager, ckpt_dir)
    assert failed.value.path == str(blob)
    assert "piece 21 of 48" in str(failed.value) and "checksum mismatch" in str(failed.value)
    _nothing_restored(served)


def test_a_truncated_blob_is_named_and_nothing_is_restored(served: Served) -> None:
    blob = served.path / _big(served.path).file
    blob.write_bytes(blob.read_bytes()[: 30 * PIECE + 5])
    with pytest.raises(CheckpointError, match=f"blob is {30 * PIECE + 5} bytes, the manifest "
                       f"says {BIG} \\(truncated") as failed:  # fmt: skip
        restore_checkpoint(served.manager, served.path)
    assert failed.value.path == str(blob)
    _nothing_restored(served)


def _forge(path: Path, change: object) -> None:
    """Change the big blob's ref as a forger would: the manifest's checksum matches again."""
    manifest = path / MANIFEST
    body = decode_manifest(manifest.read_bytes(), manifest)
    (ref,) = [a.contents for a in body.sessions[0].allocations if a.size == BIG]
    change(ref)  # type: ignore[operator]
    manifest.write_bytes(encode_manifest(body))


def _drop_last(ref: ck.blob_ref) -> None:
    ref.pieces.pop()


def _no_pieces(ref: ck.blob_ref) -> None:
    ref.pieces = []


def _larger_pieces(ref: ck.blob_ref) -> None:
    ref.piece_size *= 2


def _zero_piece_size(ref: ck.blob_ref) -> None:
    ref.piece_size = 0


def _stored_sizes_off(ref: ck.blob_ref) -> None:
    ref.pieces[3].stored_size += 1


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (_drop_last, f"lists 47 pieces; {BIG} bytes in pieces of {PIECE} make 48"),
        (_no_pieces, f"lists 0 pieces; {BIG} bytes in pieces of {PIECE} make 48"),
        (_larger_pieces, f"lists 48 pieces; {BIG} bytes in pieces of {2 * PIECE} make 24"),
        (_zero_piece_size, "has pieces of 0 bytes"),
        (_stored_sizes_off, f"lists pieces of {BIG + 1} stored bytes; the blob is stored in {BIG}"),
    ],
    ids=["one-piece-missing", "no-pieces", "other-piece-size", "piece-size-0", "stored-sizes"],
)
def test_a_piece_list_that_does_not_match_the_blob_is_refused_before_anything_is_read(
    served: Served, monkeypatch: pytest.MonkeyPatch, change: object, says: str
) -> None:
    ckpt_dir = served.path
    ref = _big(ckpt_dir)
    _forge(ckpt_dir, change)

    def no_read(self: Blob, piece: Piece) -> bytes:
        raise AssertionError(f"{self.ref.file} read")

    monkeypatch.setattr(Blob, "read", no_read)
    with pytest.raises(CheckpointError) as failed:
        restore_checkpoint(served.manager, ckpt_dir)
    assert failed.value.path == str(ckpt_dir / MANIFEST)
    assert ref.file in str(failed.value) and says in str(failed.value)
    _nothing_restored(served)
    monkeypatch.undo()  # cricket-checkpoint verify reads the blobs, and names it too
    assert says in "\n".join(str(e) for e in Checkpoint.open(ckpt_dir).problems())


def test_a_checkpoint_of_format_version_6_is_refused_by_name(served: Served) -> None:
    manifest = served.path / MANIFEST
    data = bytearray(manifest.read_bytes())
    data[4:8] = (6).to_bytes(4, "big")
    manifest.write_bytes(bytes(data))
    with pytest.raises(CheckpointError) as failed:
        restore_checkpoint(served.manager, served.path)
    assert failed.value.path == str(manifest)
    assert str(failed.value).endswith(
        "manifest format version 6 is not supported (this reader knows version 7; the file is "
        "older: restore it with the release that wrote it)"
    )
    _nothing_restored(served)


def test_memory_stays_bounded_while_restoring_a_blob_much_larger_than_a_piece(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces read and not yet on the device never exceed what the readers may hold ahead
    (2 a thread), however slow the device and however many pieces the blob has."""
    lock = threading.Lock()
    held = peak = 0
    read, copy = Blob.read, SimSession.memcpy_htod

    def reading(self: Blob, piece: Piece) -> bytes:
        nonlocal held, peak
        data = read(self, piece)
        if "/module-" in self.ref.file:
            return data  # an image: loaded, not copied
        with lock:
            held += 1
            peak = max(peak, held)
        return data

    def slow_copy(self: SimSession, dst: int, data: memoryview, stream: object | None) -> None:
        nonlocal held
        time.sleep(0.002)  # a slow device: the readers get ahead, as far as they may
        copy(self, dst, data, stream)
        with lock:
            held -= 1

    monkeypatch.setattr(Blob, "read", reading)
    monkeypatch.setattr(SimSession, "memcpy_htod", slow_copy)
    ckpt_dir = served.path
    restored = restore_checkpoint(served.manager, ckpt_dir).sessions[0]
    assert held == 0 and peak > pieces.default_threads()  # the readers got ahead ...
    assert peak <= 2 * pieces.default_threads() + 1  # ... within their bound (+ the one copied)
    big = next(a for a in restored.memory.allocations() if a.size == BIG)
    expected = Checkpoint.open(ckpt_dir).read_blob(_big(ckpt_dir))
    assert bytes(restored.memcpy_dtoh(big.ptr, BIG)) == expected


def test_zstd_pieces_decode_in_parallel_and_a_damaged_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not checkpoint.format.zstd_available():
        pytest.skip("zstandard is not installed")
    monkeypatch.setattr(checkpoint.format, "PIECE_SIZE", PIECE)
    data = b"".join(i.to_bytes(4, "little") * 64 for i in range(20_000))  # compressible
    with CheckpointWriter(tmp_path / "c") as writer:
        ref = writer.sink.write("s1/z", [data[i : i + 100_000] for i in range(0, len(data), 100_000)])
        ckpt = Checkpoint(writer.tmp, ck.manifest_body("t", 0, "sim", 0, 0, 0, []))
        assert ref.codec == ck.blob_codec.BLOB_ZSTD and len(ref.pieces) == -(-len(data) // PIECE)
        assert ref.stored_size < len(data) // 4
        assert ckpt.read_blob(ref) == data
        file = writer.tmp / "s1" / "z"
        raw = bytearray(file.read_bytes())
        middle = sum(p.stored_size for p in ref.pieces[:40]) + 7  # in piece 41
        raw[middle] ^= 1
        file.write_bytes(bytes(raw))
        with pytest.raises(CheckpointError, match=f"piece 41 of {len(ref.pieces)} .*checksum"):
            ckpt.read_blob(ref)


def test_a_process_isolated_restart_checks_files_without_reading_a_blob(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The main process of cricket-restart --isolation process reads no blob (each worker
    reads and checks its session's, once); it still refuses a missing or truncated file."""

    def no_read(self: Blob, piece: Piece) -> bytes:
        raise AssertionError(f"{self.ref.file} read")

    monkeypatch.setattr(Blob, "read", no_read)
    ckpt_dir = served.path
    checked = check_files(str(ckpt_dir))
    assert checked.bytes >= sum(SIZES)
    blob = ckpt_dir / _big(ckpt_dir).file
    blob.write_bytes(blob.read_bytes()[:-1])
    with pytest.raises(CheckpointError, match="truncated") as failed:
        check_files(str(ckpt_dir))
    assert failed.value.path == str(blob)


def test_a_restore_reads_every_blob_through_one_read_ahead(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All blobs of the restore come from the one parallel read-ahead: none is read alone by
    the restoring thread (that would read its pieces one after another)."""
    made: list[int] = []
    alone: list[str] = []
    init, serial = pieces.PieceReads.__init__, pieces.read_pieces

    def counting(self: pieces.PieceReads, root: Path, refs: list[ck.blob_ref], **kw: object) -> None:
        made.append(len(refs))
        init(self, root, refs, **kw)  # type: ignore[arg-type]

    def reading_alone(root: Path, ref: ck.blob_ref) -> object:
        alone.append(ref.file)
        return serial(root, ref)

    monkeypatch.setattr(pieces.PieceReads, "__init__", counting)
    monkeypatch.setattr(checkpoint.reader, "read_pieces", reading_alone)
    restore_checkpoint(served.manager, served.path)
    blobs = list(blob_refs(Checkpoint.open(served.path).manifest))
    assert made == [len(blobs)] and alone == []
