"""checkpoint.pipeline: blobs stored in overlapping stages are the blobs the serial writer
stored, every stage's error surfaces unchanged, and the pieces in flight stay bounded."""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import checkpoint.format
from checkpoint import pipeline
from checkpoint.format import stored_bound, zstd_available, zstd_compressor
from checkpoint.pipeline import StoredBlob, store_blob
from checkpoint.reader import Checkpoint
from checkpoint.writebehind import WriteBehind
from checkpoint.writer import CheckpointWriter
from rpc_spec import checkpoint_rpc as ck

B = 8192  # the piece size (and source piece size) these tests give the pipeline
SIZES = [0, 1, B - 1, B, B + 1, 3 * B + 7]
RANDOM = os.urandom(3 * B + 7)
ZEROS = bytes(3 * B + 7)


def serial(pieces: list[bytes], compress: bool) -> tuple[bytes, ck.blob_codec, list[bytes]]:
    """What the format says a blob is: codec chosen on the first non-empty piece, the bytes
    cut into pieces of B, each stored raw or as a zstd frame of its own; and the sha256 of
    each stored piece."""
    data = b"".join(pieces)
    first = next((p for p in pieces if p), b"")
    codec = ck.blob_codec.BLOB_RAW
    if compress and len(first) >= pipeline.MIN_COMPRESS:
        sample = first[: pipeline.SAMPLE]
        if len(zstd_compressor().compress(sample)) <= pipeline.PAYS_RATIO * len(sample):  # type: ignore[attr-defined]
            codec = ck.blob_codec.BLOB_ZSTD
    stored = [data[i : i + B] for i in range(0, len(data), B)]
    if codec == ck.blob_codec.BLOB_ZSTD:
        stored = [zstd_compressor().compress(p) for p in stored]  # type: ignore[attr-defined]
    return b"".join(stored), codec, [hashlib.sha256(p).digest() for p in stored]


def split(data: bytes, piece: int) -> list[bytes]:
    return [data[i : i + piece] for i in range(0, len(data), piece)]


def stored_through_pipeline(pieces: list[bytes], compress: bool) -> tuple[bytes, StoredBlob]:
    parts: list[bytes] = []

    def out(part: memoryview) -> None:
        assert 0 < len(part) <= stored_bound(B)
        parts.append(bytes(part))

    blob = store_blob(iter(pieces), out, compress=compress, piece_size=B, depth=2)
    return b"".join(parts), blob


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("source", [RANDOM, ZEROS], ids=["random", "zeros"])
@pytest.mark.parametrize("piece", [B, 3 * B + 7], ids=["pieces-of-a-chunk", "one-piece"])
def test_a_blob_is_stored_byte_for_byte_as_the_serial_writer_stored_it(
    size: int, source: bytes, piece: int
) -> None:
    pieces = split(source[:size], piece)
    expected, codec, digests = serial(pieces, compress=zstd_available())
    stored, blob = stored_through_pipeline(pieces, compress=True)
    assert stored == expected
    assert [bytes(p.sha256) for p in blob.pieces] == digests
    assert (blob.codec, blob.size, blob.stored) == (codec, size, len(expected))


@pytest.mark.parametrize("size", SIZES)
def test_a_checkpoint_blob_file_matches_the_serial_writer(
    tmp_path: Path, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint.format, "PIECE_SIZE", B)
    pieces = split(RANDOM[:size], B) + split(ZEROS[:size], B)
    expected, codec, digests = serial(pieces, compress=zstd_available())
    with CheckpointWriter(tmp_path / "c") as writer:
        ref = writer.sink.write("s1/blob", iter(pieces))
        assert (writer.tmp / "s1" / "blob").read_bytes() == expected
        assert [bytes(p.sha256) for p in ref.pieces] == digests
        assert (ref.codec, ref.size, ref.stored_size) == (codec, 2 * size, len(expected))
        unfinished = Checkpoint(writer.tmp, ck.manifest_body("t", 0, "sim", 0, 0, 0, []))
        assert unfinished.read_blob(ref) == b"".join(pieces)


class CopyOutFailed(Exception):
    pass


def failing_source(good: int) -> Iterator[bytes]:
    yield from [RANDOM[:B]] * good
    raise CopyOutFailed("cuMemcpyDtoH: CUDA_ERROR_ILLEGAL_ADDRESS")


@pytest.mark.parametrize("good", [0, 1, 2, 5])
def test_a_failing_copy_out_surfaces_unchanged(good: int) -> None:
    with pytest.raises(CopyOutFailed, match="ILLEGAL_ADDRESS"):
        store_blob(failing_source(good), lambda part: None, piece_size=B, depth=2)


def test_a_failing_write_surfaces_unchanged_and_stops_the_copy_out() -> None:
    disk_full = OSError(errno.ENOSPC, "No space left on device")
    taken = 0

    def endless() -> Iterator[bytes]:
        nonlocal taken
        for _ in itertools.count():
            taken += 1
            yield RANDOM[:B]

    def out(part: memoryview) -> None:
        raise disk_full

    with pytest.raises(OSError) as info:
        store_blob(endless(), out, piece_size=B, depth=3)
    assert info.value is disk_full
    assert taken <= 3 + 1  # the pieces in flight, then it stopped


def test_a_failing_hash_stage_surfaces_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = RuntimeError("sha256: out of memory")

    def hash_fails(stored: memoryview) -> bytes:
        raise broken

    monkeypatch.setattr(pipeline, "digest", hash_fails)
    with pytest.raises(RuntimeError) as info:
        store_blob([RANDOM[:B]] * 6, lambda part: None, piece_size=B, depth=2)
    assert info.value is broken


def test_a_failing_copy_out_leaves_no_checkpoint_directory(tmp_path: Path) -> None:
    with pytest.raises(CopyOutFailed), CheckpointWriter(tmp_path / "c") as writer:
        writer.sink.write("s1/a", [RANDOM])
        writer.sink.write("s1/b", failing_source(3))
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_fails_the_checkpoint_with_enospc_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = 0
    real = WriteBehind.__call__

    def disk_fills_up(self: WriteBehind, data: memoryview) -> None:
        nonlocal calls
        calls += 1
        if calls > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, data)

    monkeypatch.setattr(WriteBehind, "__call__", disk_fills_up)
    monkeypatch.setattr(checkpoint.format, "PIECE_SIZE", B)
    with pytest.raises(OSError) as info, CheckpointWriter(tmp_path / "c") as writer:
        writer.sink.write("s1/a", split(RANDOM, B))
    assert info.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("depth", [2, 4])
def test_the_pieces_alive_never_exceed_the_depth(depth: int) -> None:
    """The source sees at most `depth` of its pieces alive (its own buffers, which it may
    reuse once dropped), even while the writing stage is stalled."""
    alive: list[weakref.ref[np.ndarray]] = []
    peak = 0
    produced_enough = threading.Event()

    def source() -> Iterator[Any]:  # numpy arrays: weakly referenceable buffers
        nonlocal peak
        for i in range(20):
            piece = np.full(B, i, dtype=np.uint8)
            alive.append(weakref.ref(piece))
            peak = max(peak, sum(ref() is not None for ref in alive))
            if i + 1 == depth:
                produced_enough.set()
            yield piece
            del piece

    written = bytearray()

    def stalled_at_first(part: memoryview) -> None:
        assert produced_enough.wait(30), "the source never got `depth` pieces ahead"
        written.extend(part)

    blob = store_blob(source(), stalled_at_first, compress=False, piece_size=B, depth=depth)
    assert peak == depth
    assert blob.size == 20 * B
    assert bytes(written) == b"".join(bytes([i]) * B for i in range(20))


@pytest.mark.parametrize("hints", [True, False])
def test_write_behind_writes_every_part_in_order(tmp_path: Path, hints: bool) -> None:
    file = tmp_path / "f"
    fd = os.open(file, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        w = WriteBehind(fd, window=2)
        w.hints = w.hints and hints
        for part in split(RANDOM, 1000):
            w(memoryview(part))
        w.finish()
    finally:
        os.close(fd)
    assert file.read_bytes() == RANDOM
