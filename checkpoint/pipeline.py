"""Storing one blob in overlapping stages: copy-out -> hash -> write (D9).

`store_blob(pieces, out, compress=...)` stores the concatenation of `pieces` (bytes-like;
taking the next one is the device-to-host copy) through `out` (called with the stored bytes,
in order, in parts of at most `chunk` bytes) and returns what a manifest records of it. The
caller's thread takes the pieces; a hashing thread chooses the codec on the first non-empty
piece (zstd where a sample of it shrinks to PAYS_RATIO or less), compresses where so chosen
and feeds the sha256 of the stored bytes; a writing thread calls `out`. sha256, zstd and file
writes release the GIL for large buffers, so while piece N is written piece N+1 is hashed and
piece N+2 copied out. At most `depth` pieces are alive at a time: a piece is taken only once
an earlier one has been written and every reference to it dropped, so a source that lends
its buffers (the cuda backend's pinned staging pool) gets them back for the next copy.

The first error of any stage stops the others and is raised, unchanged, in the caller's
thread once both threads have ended. A blob of one piece of at most `chunk` bytes is stored
inline, without threads.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rpc_spec import checkpoint_rpc as ck

from .format import zstd_available, zstd_compressor

PAYS_RATIO = 0.8  # compress a blob when a sample of it shrinks to at most this fraction
SAMPLE = 1 << 20  # bytes of the first piece compressed on trial
MIN_COMPRESS = 4096  # a blob whose first piece is smaller is written raw
CHUNK = 16 << 20  # bytes hashed and handed to `out` at a time
DEPTH = 4  # pieces alive at once (the cuda backend stages 4 pieces of 64 MiB)

Out = Callable[[memoryview], None]


@dataclass(frozen=True)
class StoredBlob:
    """What a manifest records of a stored blob (see ck.blob_ref)."""

    codec: ck.blob_codec
    size: int  # decoded bytes
    stored: int  # bytes handed to `out`
    sha256: bytes  # of the stored bytes


class _Encoder:
    """The codec, chosen on the first non-empty piece, and the sha256 of the stored bytes."""

    def __init__(self, compress: bool) -> None:
        self.compress = compress and zstd_available()
        self.digest = hashlib.sha256()
        self.codec = ck.blob_codec.BLOB_RAW
        self.compressor: Any = None
        self.size = self.stored = 0

    def encode(self, view: memoryview) -> bytes | memoryview:
        """The stored bytes for the next piece (not hashed yet: see `hash`)."""
        if self.size == 0 and self.compress and len(view) >= MIN_COMPRESS:
            sample = view[:SAMPLE]
            trial = zstd_compressor().compress(sample)  # type: ignore[attr-defined]
            if len(trial) <= PAYS_RATIO * len(sample):
                self.codec = ck.blob_codec.BLOB_ZSTD
                self.compressor = zstd_compressor().compressobj()  # type: ignore[attr-defined]
        self.size += len(view)
        return self.compressor.compress(view) if self.compressor is not None else view

    def tail(self) -> bytes:
        """The stored bytes that end the blob (the end of the zstd frame)."""
        return self.compressor.flush() if self.compressor is not None else b""

    def hash(self, stored: memoryview) -> None:
        self.digest.update(stored)
        self.stored += len(stored)

    def result(self) -> StoredBlob:
        return StoredBlob(self.codec, self.size, self.stored, self.digest.digest())


def _parts(data: bytes | memoryview, chunk: int) -> Iterator[memoryview]:
    view = memoryview(data).cast("B")
    for off in range(0, len(view), chunk):
        yield view[off : off + chunk]


class _Hold:
    """One piece in flight: its slot is given back once the hashing and the writing thread
    have both let go of it."""

    def __init__(self, slots: threading.Semaphore) -> None:
        self._slots = slots
        self._users = 2
        self._lock = threading.Lock()

    def done(self) -> None:
        with self._lock:
            self._users -= 1
            last = self._users == 0
        if last:
            self._slots.release()


class _Stages:
    """The hashing and the writing thread of one blob; see the module docstring."""

    def __init__(self, encoder: _Encoder, out: Out, chunk: int, slots: threading.Semaphore):
        self.encoder = encoder
        self.out = out
        self.chunk = chunk
        self.slots = slots
        self.failed: list[BaseException] = []
        self.to_hash: queue.SimpleQueue[tuple[memoryview, _Hold] | None] = queue.SimpleQueue()
        self.to_write: queue.SimpleQueue[tuple[memoryview, _Hold | None] | None] = (
            queue.SimpleQueue()
        )
        self.threads = [
            threading.Thread(target=self._hash_loop, name="checkpoint-hash", daemon=True),
            threading.Thread(target=self._write_loop, name="checkpoint-write", daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def feed(self, view: memoryview) -> None:
        """Hand a piece on (the caller holds a slot for it, given back once it is written)."""
        self.to_hash.put((view, _Hold(self.slots)))

    def close(self) -> None:
        """No more pieces: let both threads finish and end."""
        self.to_hash.put(None)
        for thread in self.threads:
            thread.join()

    def _fail(self, e: BaseException) -> None:
        if not self.failed:
            self.failed.append(e)

    def _hash_loop(self) -> None:
        while (item := self.to_hash.get()) is not None:
            view, hold = item
            del item
            if not self.failed:
                try:
                    self._hash_piece(view, hold)
                except BaseException as e:  # raised in the caller's thread
                    self._fail(e)
                    self.to_write.put((memoryview(b""), hold))
            else:
                self.to_write.put((memoryview(b""), hold))
            del view
            hold.done()
        if not self.failed:
            try:
                for part in _parts(self.encoder.tail(), self.chunk):
                    self.encoder.hash(part)
                    self.to_write.put((part, None))
                    del part
            except BaseException as e:
                self._fail(e)
        self.to_write.put(None)

    def _hash_piece(self, view: memoryview, hold: _Hold) -> None:
        parts = list(_parts(self.encoder.encode(view), self.chunk)) or [memoryview(b"")]
        last = len(parts) - 1
        for i, part in enumerate(parts):
            self.encoder.hash(part)
            self.to_write.put((part, hold if i == last else None))
        parts.clear()
        del part

    def _write_loop(self) -> None:
        while (item := self.to_write.get()) is not None:
            part, hold = item
            del item
            if not self.failed and len(part):
                try:
                    self.out(part)
                except BaseException as e:  # raised in the caller's thread
                    self._fail(e)
            del part
            if hold is not None:
                hold.done()


def store_blob(
    pieces: Iterable[bytes | memoryview],
    out: Out,
    *,
    compress: bool = True,
    chunk: int = CHUNK,
    depth: int = DEPTH,
) -> StoredBlob:
    """Store the concatenation of `pieces` through `out`; see the module docstring."""
    if chunk < 1 or depth < 2:
        raise ValueError(f"store_blob: chunk {chunk} must be >= 1 and depth {depth} >= 2")
    encoder = _Encoder(compress)
    slots = threading.Semaphore(depth)
    it = iter(pieces)
    slots.acquire()
    first = next(it, None)
    if first is None:
        return encoder.result()
    view = memoryview(first).cast("B")
    del first
    if len(view) <= chunk:
        slots.acquire()
        second = next(it, None)
        if second is None:  # one small piece: no threads
            for part in _parts(encoder.encode(view), chunk):
                encoder.hash(part)
                out(part)
            for part in _parts(encoder.tail(), chunk):
                encoder.hash(part)
                out(part)
            return encoder.result()
        ahead = [view, memoryview(second).cast("B")]
        del second
    else:
        ahead = [view]
    del view
    stages = _Stages(encoder, out, chunk, slots)
    try:
        while ahead:
            stages.feed(ahead.pop(0))
        while not stages.failed:
            slots.acquire()
            piece = next(it, None)
            if piece is None:
                break
            stages.feed(memoryview(piece).cast("B"))
            del piece
    finally:
        ahead.clear()
        stages.close()
    if stages.failed:
        raise stages.failed[0]
    return encoder.result()
