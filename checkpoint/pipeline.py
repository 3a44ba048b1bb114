"""Storing one blob in overlapping stages: copy-out -> encode and hash (in parallel) -> write.

`store_blob(pieces, out, compress=...)` stores the concatenation of `pieces` (bytes-like;
taking the next one is the device-to-host copy) through `out` (called with the stored bytes
of each piece of the format, in order) and returns what a manifest records of it. The blob is
cut into format pieces of `piece_size` decoded bytes (checkpoint.format: the last may hold
fewer); a source piece that is a multiple of it is cut without a copy, the rest is gathered
into pieces of their own. The caller's thread takes the source pieces and chooses the codec
on the first non-empty one (zstd where a sample of it shrinks to PAYS_RATIO or less); a few
encoding threads (one more each time a piece waits for one, up to one a core) compress each
format piece into a zstd frame of its own where so chosen and compute the sha256 of its
stored bytes, several pieces at once (sha256, zstd and file writes release the GIL for large
buffers); one writing thread calls `out` in order.

Memory stays bounded: at most `depth` source pieces are alive at a time (a source piece is
taken only once an earlier one has been written and every reference to it dropped, so a
source that lends its buffers, the cuda backend's pinned staging pool, gets them back for the
next copy), and at most `ahead` format pieces are being encoded or wait to be written.

The first error of any stage stops the others and is raised, unchanged, in the caller's
thread once every thread has ended. A blob of one format piece is stored without threads.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rpc_spec import checkpoint_rpc as ck

from . import format as fmt
from .format import zstd_available, zstd_compressor

PAYS_RATIO = 0.8  # compress a blob when a sample of it shrinks to at most this fraction
SAMPLE = 1 << 20  # bytes of the first piece compressed on trial
MIN_COMPRESS = 4096  # a blob whose first piece is smaller is written raw
DEPTH = 4  # source pieces alive at once (the cuda backend stages 4 pieces of 64 MiB)
MAX_ENCODERS = 16  # threads that encode and hash the pieces of one blob, at most

Out = Callable[[memoryview], None]


@dataclass(frozen=True)
class StoredBlob:
    """What a manifest records of a stored blob (see ck.blob_ref)."""

    codec: ck.blob_codec
    size: int  # decoded bytes
    stored: int  # bytes handed to `out`
    piece_size: int
    pieces: list[ck.blob_piece]  # in order: stored size and sha256 of each


def digest(data: bytes | memoryview) -> bytes:
    """The digest the format keeps of a piece's stored bytes."""
    return hashlib.sha256(data).digest()


def choose_codec(first: memoryview, compress: bool) -> ck.blob_codec:
    """zstd where a sample of the blob's first piece shrinks to PAYS_RATIO or less."""
    if not (compress and zstd_available() and len(first) >= MIN_COMPRESS):
        return ck.blob_codec.BLOB_RAW
    sample = first[:SAMPLE]
    trial = zstd_compressor().compress(sample)  # type: ignore[attr-defined]
    pays = len(trial) <= PAYS_RATIO * len(sample)
    return ck.blob_codec.BLOB_ZSTD if pays else ck.blob_codec.BLOB_RAW


_local = threading.local()


def encode(data: memoryview, codec: ck.blob_codec) -> bytes | memoryview:
    """The stored bytes of one piece: itself, or one zstd frame of it (its size declared)."""
    if codec != ck.blob_codec.BLOB_ZSTD:
        return data
    compressor: Any = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstd_compressor()
    return compressor.compress(data)  # type: ignore[no-any-return]


class _Hold:
    """A source piece in flight: its slot is given back once the caller and every format
    piece cut from it without a copy have let go of it."""

    def __init__(self, slots: threading.Semaphore) -> None:
        self._slots = slots
        self._users = 1  # the caller, while it cuts
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self._users += 1

    def done(self) -> None:
        with self._lock:
            self._users -= 1
            last = self._users == 0
        if last:
            self._slots.release()


class _Job:
    """One format piece: its decoded bytes, then its stored bytes and digest."""

    __slots__ = ("data", "hold", "stored", "sha256", "ready")

    def __init__(self, data: memoryview, hold: _Hold | None) -> None:
        self.data: memoryview | None = data
        self.hold = hold
        self.stored: bytes | memoryview | None = None
        self.sha256 = b""
        self.ready = threading.Event()


class _Stages:
    """The encoding threads and the writing thread of one blob; see the module docstring."""

    def __init__(self, codec: ck.blob_codec, out: Out, encoders: int, ahead: int) -> None:
        self.codec = codec
        self.out = out
        self.room = threading.Semaphore(ahead)  # format pieces between the caller and `out`
        self.most = encoders
        self.failed: list[BaseException] = []
        self.pieces: list[ck.blob_piece] = []
        self.stored = 0
        self.to_encode: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.to_write: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.encoders: list[threading.Thread] = []  # started as pieces wait for one
        self.writer = threading.Thread(target=self._write_loop, name="checkpoint-write",
                                       daemon=True)  # fmt: skip
        self.writer.start()

    def feed(self, data: memoryview, hold: _Hold | None) -> None:
        """Hand a format piece on (a view into `hold`'s source piece, or a copy: None)."""
        self.room.acquire()
        if hold is not None:
            hold.add()
        job = _Job(data, hold)
        self.to_write.put(job)
        if len(self.encoders) < self.most and (not self.encoders or self.to_encode.qsize()):
            thread = threading.Thread(target=self._encode_loop, name="checkpoint-hash",
                                      daemon=True)  # fmt: skip
            thread.start()
            self.encoders.append(thread)
        self.to_encode.put(job)

    def close(self) -> None:
        """No more pieces: let every thread finish and end."""
        for _ in self.encoders:
            self.to_encode.put(None)
        self.to_write.put(None)
        for thread in [*self.encoders, self.writer]:
            thread.join()

    def _fail(self, e: BaseException) -> None:
        if not self.failed:
            self.failed.append(e)

    def _encode_loop(self) -> None:
        while (job := self.to_encode.get()) is not None:
            data, job.data = job.data, None
            if not self.failed and data is not None:
                try:
                    job.stored = encode(data, self.codec)
                    job.sha256 = digest(job.stored)
                except BaseException as e:  # raised in the caller's thread
                    self._fail(e)
            del data
            job.ready.set()
            del job

    def _write_loop(self) -> None:
        while (job := self.to_write.get()) is not None:
            job.ready.wait()
            stored, job.stored = job.stored, None
            if not self.failed and stored is not None:
                try:
                    self.out(memoryview(stored).cast("B"))
                    self.pieces.append(ck.blob_piece(stored_size=len(stored), sha256=job.sha256))
                    self.stored += len(stored)
                except BaseException as e:  # raised in the caller's thread
                    self._fail(e)
            del stored
            if job.hold is not None:
                job.hold.done()
            del job
            self.room.release()


class _Cutter:
    """Cuts source pieces into format pieces of `size` bytes: views where a source piece
    holds whole ones, a gathered copy across source pieces otherwise."""

    def __init__(self, size: int, feed: Callable[[memoryview, _Hold | None], None]) -> None:
        self.size = size
        self.feed = feed
        self.partial: bytearray | None = None

    def add(self, view: memoryview, hold: _Hold) -> None:
        pos = 0
        if self.partial is not None:
            pos = min(self.size - len(self.partial), len(view))
            self.partial += view[:pos]
            if len(self.partial) == self.size:
                self.feed(memoryview(self.partial), None)
                self.partial = None
        while len(view) - pos >= self.size:
            self.feed(view[pos : pos + self.size], hold)
            pos += self.size
        if pos < len(view):
            self.partial = bytearray(view[pos:])

    def finish(self) -> None:
        if self.partial:
            self.feed(memoryview(self.partial), None)
        self.partial = None


def _one_piece(view: memoryview, out: Out, codec: ck.blob_codec, size: int) -> StoredBlob:
    stored = encode(view, codec)
    out(memoryview(stored).cast("B"))
    piece = ck.blob_piece(stored_size=len(stored), sha256=digest(stored))
    return StoredBlob(codec, len(view), len(stored), size, [piece])


def store_blob(
    pieces: Iterable[bytes | memoryview],
    out: Out,
    *,
    compress: bool = True,
    piece_size: int | None = None,
    depth: int = DEPTH,
    encoders: int | None = None,
) -> StoredBlob:
    """Store the concatenation of `pieces` through `out`; see the module docstring.
    `piece_size`: the format's (default checkpoint.format.PIECE_SIZE); `encoders`: threads
    that encode and hash (default: one a core, at most MAX_ENCODERS)."""
    size = fmt.PIECE_SIZE if piece_size is None else piece_size
    if not 1 <= size <= fmt.MAX_PIECE or depth < 2:
        raise ValueError(
            f"store_blob: piece size {size} must be 1 to {fmt.MAX_PIECE}, depth {depth} >= 2"
        )
    slots = threading.Semaphore(depth)
    it = iter(pieces)
    slots.acquire()
    view: memoryview | None = None
    while view is None or not len(view):  # the first non-empty piece chooses the codec
        first = next(it, None)
        if first is None:
            return StoredBlob(ck.blob_codec.BLOB_RAW, 0, 0, size, [])
        view = memoryview(first).cast("B")
        del first
    codec = choose_codec(view, compress)
    second = None
    if len(view) <= size:
        slots.acquire()
        second = next(it, None)
        if second is None:  # one piece: no threads
            return _one_piece(view, out, codec, size)
    threads = min(encoders or os.cpu_count() or 1, MAX_ENCODERS)
    stages = _Stages(codec, out, max(1, threads), ahead=max(2, threads) + 2)
    cutter = _Cutter(size, stages.feed)
    total = 0
    ahead: list[memoryview] = []
    try:
        ahead = [view] if second is None else [view, memoryview(second).cast("B")]
        del view, second
        while ahead and not stages.failed:
            piece = ahead.pop(0)
            hold = _Hold(slots)
            total += len(piece)
            cutter.add(piece, hold)
            del piece
            hold.done()
        while not stages.failed:
            slots.acquire()
            if stages.failed:
                break
            source = next(it, None)
            if source is None:
                break
            piece = memoryview(source).cast("B")
            del source
            hold = _Hold(slots)
            total += len(piece)
            cutter.add(piece, hold)
            del piece
            hold.done()
        if not stages.failed:
            cutter.finish()
    finally:
        ahead.clear()
        cutter.partial = None
        stages.close()
    if stages.failed:
        raise stages.failed[0]
    return StoredBlob(codec, total, stages.stored, size, stages.pieces)
