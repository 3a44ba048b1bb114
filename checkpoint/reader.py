"""Reading a checkpoint directory: the manifest, its blobs, and checking all of it.

`Checkpoint.open(path)` reads and checks the manifest (CheckpointError naming the file when
it is missing, of another version, truncated or damaged). Every file is opened by `open_in`:
no symbolic link below the checkpoint directory is followed, and only regular files are
read. `pieces(ref)` gives a blob's decoded bytes piece by piece, each checked (its sha256)
before it is given (checkpoint.pieces: several pieces are read at once); `read_blob(ref)`
all of them. `check_manifest()` raises the first thing in the manifest a restore refuses
(checkpoint.validate). `verify()` checks the manifest and every blob it names and raises
the first problem; `problems()` lists them all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rpc_spec import checkpoint_rpc as ck

from .format import MANIFEST, CheckpointError, decode_manifest
from .pieces import Blob, PieceReads, read_pieces
from .validate import blob_path_problem, manifest_problems


def open_in(root: Path, rel: Path) -> BinaryIO:
    """`root / rel` opened for reading, following no symbolic link below `root` (each part
    is opened with O_NOFOLLOW from its parent's descriptor); only a regular file is opened.
    CheckpointError naming the file otherwise (FileNotFoundError when it does not exist)."""
    file = root / rel
    if not rel.parts:
        raise CheckpointError(file, "names no file")
    nofollow = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise CheckpointError(root, f"cannot be opened: {e.strerror}") from None
    here = root
    try:
        for part in rel.parts[:-1]:
            here = here / part
            inner = os.open(part, nofollow | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        here = file
        blob = os.open(rel.parts[-1], nofollow, dir_fd=fd)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(here):
            raise CheckpointError(
                here, "is a symbolic link: refused (checkpoint files are read without following "
                "links)",
            ) from None
        raise CheckpointError(here, f"cannot be opened: {e.strerror}") from None
    finally:
        os.close(fd)
    mode = os.fstat(blob).st_mode
    if not stat.S_ISREG(mode):
        os.close(blob)
        raise CheckpointError(file, "is not a regular file: refused")
    os.set_blocking(blob, True)
    return os.fdopen(blob, "rb")


def blob_refs(body: ck.manifest_body) -> Iterator[tuple[str, ck.blob_ref]]:
    """(what it is, blob_ref) for every blob the manifest names."""
    for s in body.sessions:
        sid = f"session {s.session_id:#x}"
        for m in s.modules:
            yield f"{sid} module {m.handle:#x} image", m.image
            for g in m.globals:
                yield f"{sid} module {m.handle:#x} global {g.name}", g.contents
        for lib in s.libraries:
            yield f"{sid} library {lib.handle:#x} image", lib.image
            for lg in lib.globals:
                yield f"{sid} library {lib.handle:#x} global {lg.name}", lg.contents
        for a in s.allocations:
            yield f"{sid} allocation {a.ptr:#x} ({a.size} bytes)", a.contents
        for arr in s.arrays:
            yield f"{sid} array {arr.handle:#x}", arr.contents
        for mm in s.mipmaps:
            for arr in mm.levels:
                yield f"{sid} mipmapped array {mm.handle:#x} level {arr.handle:#x}", arr.contents
        for ph in s.vmm.physicals:
            yield f"{sid} physical allocation {ph.handle:#x} ({ph.size} bytes)", ph.contents


@dataclass
class VerifyReport:
    blobs: int
    bytes: int
    stored_bytes: int


class Checkpoint:
    """An opened checkpoint directory; see the module docstring."""

    def __init__(self, path: Path, manifest: ck.manifest_body) -> None:
        self.path = path
        self.manifest = manifest
        self._prefetch: PieceReads | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Checkpoint:
        root = Path(path)
        if not root.is_dir():
            raise CheckpointError(root, "no such checkpoint directory")
        file = root / MANIFEST
        try:
            with open_in(root, Path(MANIFEST)) as f:
                data = f.read()
        except FileNotFoundError:
            raise CheckpointError(
                file, "missing: not a checkpoint, or one never completed"
            ) from None
        except OSError as e:
            raise CheckpointError(file, f"cannot be read: {e}") from None
        return cls(root, decode_manifest(data, file))

    def manifest_problems(self) -> list[CheckpointError]:
        """Everything in the manifest a restore refuses (checkpoint.validate), each naming
        the manifest file."""
        return [CheckpointError(self.path / MANIFEST, p) for p in manifest_problems(self.manifest)]

    def check_manifest(self) -> None:
        """Raise the first thing in the manifest a restore refuses; reads no blob."""
        found = self.manifest_problems()
        if found:
            raise found[0]

    def check_files(self) -> None:
        """Raise the first blob whose file is missing, not a regular file or not of its
        stored size (reads no blob)."""
        for _what, ref in blob_refs(self.manifest):
            blob = Blob(self.path, ref)
            try:
                blob.open()
            finally:
                blob.close()

    def pieces(self, ref: ck.blob_ref) -> Iterator[bytes]:
        """The decoded contents of a blob piece by piece, each checked before it is given;
        a piece that fails its check raises CheckpointError naming the file and the piece
        (after the pieces before it were given)."""
        ahead = self._prefetch.take(ref) if self._prefetch is not None else None
        if ahead is None and len(ref.pieces) > 1:  # read alone, its pieces still in parallel
            reads = PieceReads(self.path, [ref])
            try:
                ahead = reads.take(ref)
                assert ahead is not None
                yield from ahead
            finally:
                reads.close()
            return
        yield from ahead if ahead is not None else read_pieces(self.path, ref)

    @contextlib.contextmanager
    def prefetching(self, refs: list[ck.blob_ref]) -> Iterator[None]:
        """While inside, `pieces` of these blobs come from threads that read and check their
        pieces ahead of their use, in this order (checkpoint.pieces; host memory stays
        bounded whatever the checkpoint's size). Each piece is read once; a blob asked for
        before its turn, or again, is read by the caller. Leaving stops the threads and drops
        what was read ahead."""
        prefetch = PieceReads(self.path, refs)
        self._prefetch = prefetch
        try:
            yield
        finally:
            self._prefetch = None
            prefetch.close()

    def read_blob(self, ref: ck.blob_ref) -> bytes:
        """The decoded contents of a blob, checked."""
        return b"".join(self.pieces(ref))

    def check_blob(self, ref: ck.blob_ref) -> None:
        """Read a blob through, checking it, keeping nothing."""
        for _ in self.pieces(ref):
            pass

    def problems(self, progress: Callable[[int], None] | None = None) -> list[CheckpointError]:
        """Every problem of the manifest (`manifest_problems`), then of every blob (empty: the
        checkpoint is whole and a restore would take it), in manifest order. The pieces of
        all blobs are read and checked by several threads at once (checkpoint.pieces);
        `progress(n)` is called with each checked blob's size."""
        found = self.manifest_problems()
        refs = [r for _what, r in blob_refs(self.manifest) if blob_path_problem(r.file) is None]
        with self.prefetching(refs):
            for ref in refs:
                try:
                    self.check_blob(ref)
                except CheckpointError as e:
                    found.append(e)
                    continue
                if progress is not None:
                    progress(ref.size)
        return found

    def verify(self, progress: Callable[[int], None] | None = None) -> VerifyReport:
        """Check the manifest, then every blob; raise the first problem (CheckpointError
        naming the file)."""
        self.check_manifest()  # before any blob is read
        found = self.problems(progress)
        if found:
            raise found[0]
        refs = [ref for _what, ref in blob_refs(self.manifest)]
        return VerifyReport(len(refs), sum(r.size for r in refs), sum(r.stored_size for r in refs))
