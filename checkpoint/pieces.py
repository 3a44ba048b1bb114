"""Reading blobs piece by piece, several pieces at once, each checked as it is read (D9).

A blob is stored in pieces, each with the sha256 of its stored bytes (checkpoint.x
blob_ref), so any piece can be read, checked and decoded on its own. `PieceReads(root,
refs)` reads the pieces of `refs`, in that order, on a few threads (one a core, at least
MIN_THREADS: reads wait for the disk; at most MAX_THREADS): each thread takes the next piece,
reads it with pread, checks its sha256, decodes it and leaves it for its taker. `take(ref)`
gives a blob's pieces in order as they become ready; a piece that fails its check raises,
when its turn comes, a `CheckpointError` naming the file and the piece. At most `ahead`
pieces (2 a thread) are read and not yet taken, so host memory stays bounded whatever the
size of the blob: about ahead x piece size (twice that for zstd pieces while they decode).

A blob taken drops every blob before it that was not taken (its pieces are freed and no more
are read; a later `take` of it answers None and the caller reads it alone, `read_pieces`), so
the pieces read ahead can always make room for the blob being taken. `close()` stops the
threads and closes every file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rpc_spec import checkpoint_rpc as ck

from .format import MANIFEST, CheckpointError, sha256, zstd_piece
from .validate import blob_path_problem, blob_pieces_problem, piece_sizes

MIN_THREADS = 4  # threads reading one checkpoint, at least (reads wait for the disk) ...
MAX_THREADS = 16  # ... and at most


def default_threads() -> int:
    return max(MIN_THREADS, min(os.cpu_count() or 1, MAX_THREADS))


@dataclass(frozen=True)
class Piece:
    """Where one piece of a blob lies and what it must be."""

    index: int
    count: int  # pieces of the blob
    offset: int  # of its stored bytes in the file
    stored: int
    size: int  # decoded
    sha256: bytes

    @property
    def name(self) -> str:
        last = self.offset + self.stored - 1
        return f"piece {self.index + 1} of {self.count} (bytes {self.offset}-{last} of the file)"


def layout(ref: ck.blob_ref) -> list[Piece]:
    """The pieces of a blob whose piece list was checked (`blob_pieces_problem`)."""
    pieces, offset = [], 0
    sizes = piece_sizes(ref)
    for i, (p, size) in enumerate(zip(ref.pieces, sizes, strict=True)):
        pieces.append(Piece(i, len(sizes), offset, p.stored_size, size, bytes(p.sha256)))
        offset += p.stored_size
    return pieces


class Blob:
    """One blob's file, opened on first use (never following a link; its size checked)."""

    def __init__(self, root: Path, ref: ck.blob_ref) -> None:
        self.root = root
        self.ref = ref
        self.file = root / ref.file
        self.pieces: list[Piece] = []
        self._f: BinaryIO | None = None
        self._error: CheckpointError | None = None
        self._opened = False
        self._lock = threading.Lock()

    def open(self) -> None:
        """Open the file and check it against the manifest (once); CheckpointError else."""
        with self._lock:
            if not self._opened:
                self._opened = True
                try:
                    self._f = self._open()
                except CheckpointError as e:
                    self._error = e
            if self._error is not None:
                raise self._error

    def _open(self) -> BinaryIO:
        from .reader import open_in  # the reader's confinement rules

        why = blob_path_problem(self.ref.file)
        if why is not None:
            raise CheckpointError(self.root / MANIFEST, f"blob path {self.ref.file!r} {why}")
        why = blob_pieces_problem(self.ref)
        if why is not None:
            raise CheckpointError(self.root / MANIFEST, f"blob {self.ref.file} {why}")
        self.pieces = layout(self.ref)
        try:
            f = open_in(self.root, Path(self.ref.file))
        except FileNotFoundError:
            raise CheckpointError(self.file, "missing blob") from None
        except OSError as e:
            raise CheckpointError(self.file, f"cannot be read: {e}") from None
        stored = os.fstat(f.fileno()).st_size
        if stored != self.ref.stored_size:
            f.close()
            raise CheckpointError(
                self.file,
                f"blob is {stored} bytes, the manifest says {self.ref.stored_size} (truncated?)",
            )
        return f

    def read(self, piece: Piece) -> bytes:
        """One piece's decoded bytes, checked (sha256 of the stored bytes, decoded size)."""
        self.open()
        assert self._f is not None
        fd = self._f.fileno()
        parts, got = [], 0
        try:
            while got < piece.stored:
                part = os.pread(fd, piece.stored - got, piece.offset + got)
                if not part:
                    break
                parts.append(part)
                got += len(part)
        except OSError as e:
            raise CheckpointError(self.file, f"{piece.name} cannot be read: {e}") from None
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        if got != piece.stored:
            raise CheckpointError(
                self.file, f"{piece.name}: the file ends after {got} of its bytes (truncated)"
            )
        if sha256(data) != piece.sha256:
            raise CheckpointError(
                self.file, f"{piece.name}: checksum mismatch (sha256): the file is damaged"
            )
        if self.ref.codec == ck.blob_codec.BLOB_ZSTD:
            return zstd_piece(data, piece.size, self.file, piece.name)
        return data

    def close(self) -> None:
        with self._lock:
            if self._f is not None:
                self._f.close()
                self._f = None


def read_pieces(root: Path, ref: ck.blob_ref) -> Generator[bytes, None, None]:
    """A blob's pieces read, checked and decoded one after another by the caller."""
    blob = Blob(root, ref)
    try:
        blob.open()
        for piece in blob.pieces:
            yield blob.read(piece)
    finally:
        blob.close()


class _Entry:
    """A blob of a `PieceReads`: waiting (read ahead), taken, or dropped (nothing more read)."""

    def __init__(self, blob: Blob, position: int) -> None:
        self.blob = blob
        self.position = position
        self.state = "waiting"
        self.ready: dict[int, bytes | BaseException] = {}
        self.reading = 0  # reads in flight
        self.read = 0  # pieces read


class PieceReads:
    """The pieces of several blobs read ahead in parallel; see the module docstring."""

    def __init__(
        self,
        root: Path,
        refs: list[ck.blob_ref],
        *,
        threads: int | None = None,
        ahead: int | None = None,
    ) -> None:
        self.root = root
        self._entries: dict[str, _Entry] = {}
        for ref in refs:  # a file once
            if ref.file not in self._entries:
                self._entries[ref.file] = _Entry(Blob(root, ref), len(self._entries))
        self._order = list(self._entries.values())
        self._tasks: list[tuple[_Entry, int]] = []
        for entry in self._order:
            count = len(entry.blob.ref.pieces) if blob_pieces_problem(entry.blob.ref) is None else 1
            self._tasks += [(entry, i) for i in range(count)]
        self._next = 0
        count = min(len(self._tasks), threads or default_threads())
        self._room = ahead if ahead is not None else max(2 * count, 2)
        self._cond = threading.Condition()
        self._stop = False
        self._threads = [
            threading.Thread(target=self._run, name="checkpoint-read", daemon=True)
            for _ in range(count)
        ]
        for thread in self._threads:
            thread.start()

    def _next_task(self) -> tuple[_Entry, int] | None:
        """The next piece to read (holding the lock), once there is room; None: stop."""
        while True:
            while self._next < len(self._tasks) and self._tasks[self._next][0].state == "dropped":
                self._next += 1
            if self._stop or self._next >= len(self._tasks):
                return None
            if self._room > 0:
                task = self._tasks[self._next]
                self._next += 1
                self._room -= 1
                task[0].reading += 1
                return task
            self._cond.wait()

    def _run(self) -> None:
        while True:
            with self._cond:
                task = self._next_task()
            if task is None:
                return
            entry, index = task
            item: bytes | BaseException
            try:
                entry.blob.open()
                item = entry.blob.read(entry.blob.pieces[index])
            except BaseException as e:  # raised in the taker's thread, in its turn
                item = e
            with self._cond:
                entry.reading -= 1
                entry.read += 1
                if entry.state == "dropped":
                    self._room += 1
                else:
                    entry.ready[index] = item
                del item
                self._close_if_done(entry)
                self._cond.notify_all()

    def _close_if_done(self, entry: _Entry) -> None:
        done = entry.state == "dropped" or entry.read == len(entry.blob.pieces)
        if done and entry.reading == 0:
            entry.blob.close()

    def _drop(self, entry: _Entry) -> None:
        """No more of this blob is read; what was read of it is freed (holding the lock)."""
        entry.state = "dropped"
        self._room += len(entry.ready)
        entry.ready.clear()
        self._close_if_done(entry)
        self._cond.notify_all()

    def take(self, ref: ck.blob_ref) -> Iterator[bytes] | None:
        """The pieces of `ref` in order as they are read; None when it is not one of these
        blobs (the same blob_ref) or was taken or dropped already (the caller reads it)."""
        with self._cond:
            entry = self._entries.get(ref.file)
            if entry is None or entry.blob.ref is not ref or entry.state != "waiting":
                return None
            entry.state = "taken"
            for other in self._order[: entry.position]:
                if other.state == "waiting":
                    self._drop(other)
        return self._drain(entry)

    def _drain(self, entry: _Entry) -> Generator[bytes, None, None]:
        try:
            entry.blob.open()  # an empty blob has no piece to read: its file is checked here
            for index in range(len(entry.blob.pieces)):
                with self._cond:
                    while index not in entry.ready and not self._stop:
                        self._cond.wait()
                    if self._stop:
                        raise CheckpointError(entry.blob.file, "reading was stopped")
                    item = entry.ready.pop(index)
                    self._room += 1
                    self._cond.notify_all()
                if isinstance(item, BaseException):
                    raise item
                yield item
                del item
        finally:
            with self._cond:
                self._drop(entry)

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()
        for entry in self._order:
            entry.ready.clear()
            entry.blob.close()
