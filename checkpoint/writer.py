"""Writing a checkpoint directory crash-safely (D9).

`CheckpointWriter(target)` writes into a fresh temporary directory next to `target`; each
blob goes through `BlobSink.write` (sha256 of the stored bytes, zstd where it pays, the file
fsynced); `commit(body)` writes the manifest, fsyncs it and the directory, and puts the new
directory in place of `target` in one step (renameat2 RENAME_EXCHANGE, then the old one is
deleted). Leaving the `with` block without a commit deletes the temporary directory, so a
failure (or a crash: the temporary directory is never looked at) leaves `target` as it was.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import os
import queue
import secrets
import shutil
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from rpc_spec import checkpoint_rpc as ck

from .format import (
    MAGIC,
    MANIFEST,
    CheckpointError,
    encode_manifest,
    zstd_available,
    zstd_compressor,
)

PAYS_RATIO = 0.8  # compress a blob when a sample of it shrinks to at most this fraction
SAMPLE = 1 << 20  # bytes of the first piece compressed on trial
MIN_COMPRESS = 4096  # smaller blobs are written raw
_RENAME_EXCHANGE = 2


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2); False where that is not available."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    at_fdcwd = -100
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def refuse_to_replace(target: Path) -> None:
    """Only an older checkpoint (or an empty directory) may be replaced by a new one."""
    if not target.is_dir():
        raise CheckpointError(target, "exists and is not a directory")
    manifest = target / MANIFEST
    if manifest.is_file():
        with open(manifest, "rb") as f:
            if int.from_bytes(f.read(4), "big") == MAGIC:
                return
    if any(target.iterdir()):
        raise CheckpointError(
            target, "exists and is not a checkpoint: refusing to replace it (choose another path)"
        )


class BlobSink:
    """Writes blobs into one directory (a checkpoint's temporary directory or a part of it)."""

    def __init__(self, root: Path, *, compress: bool = True) -> None:
        self.root = root
        self.compress = compress and zstd_available()
        self.bytes = 0  # decoded bytes written
        self.stored_bytes = 0

    def write(self, name: str, pieces: Iterable[bytes | memoryview]) -> ck.blob_ref:
        """Store the concatenation of `pieces` as file `name` (relative to the root). From the
        second piece on, hashing, compressing and writing run in a thread of their own while
        the next piece is fetched (both release the GIL for large buffers)."""
        path = self.root / name
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            blob = _BlobFile(f, self.compress)
            it = iter(pieces)
            first = next(it, None)
            if first is not None:
                blob.feed(memoryview(first).cast("B"))
                second = next(it, None)
                if second is not None:
                    _pipelined(blob, second, it)
            blob.finish()
        self.bytes += blob.size
        self.stored_bytes += blob.stored
        return ck.blob_ref(
            file=str(Path(name)),
            codec=blob.codec,
            size=blob.size,
            stored_size=blob.stored,
            sha256=blob.digest.digest(),
        )


class _BlobFile:
    """One blob being written: codec chosen on the first piece, sha256 of what is stored."""

    def __init__(self, f: BinaryIO, compress: bool) -> None:
        self.f = f
        self.compress = compress
        self.digest = hashlib.sha256()
        self.codec = ck.blob_codec.BLOB_RAW
        self.compressor: Any = None
        self.size = self.stored = 0

    def feed(self, view: memoryview) -> None:
        if self.size == 0 and self.compress and len(view) >= MIN_COMPRESS:
            sample = view[:SAMPLE]
            trial = zstd_compressor().compress(sample)  # type: ignore[attr-defined]
            if len(trial) <= PAYS_RATIO * len(sample):
                self.codec = ck.blob_codec.BLOB_ZSTD
                self.compressor = zstd_compressor().compressobj()  # type: ignore[attr-defined]
        self.size += len(view)
        self._put(self.compressor.compress(view) if self.compressor is not None else view)

    def _put(self, out: bytes | memoryview) -> None:
        if out:
            self.digest.update(out)
            self.f.write(out)
            self.stored += len(out)

    def finish(self) -> None:
        if self.compressor is not None:
            self._put(self.compressor.flush())
        self.f.flush()
        os.fsync(self.f.fileno())


def _pipelined(blob: _BlobFile, second: bytes | memoryview, rest: Iterator[Any]) -> None:
    """Feed `second` and `rest` to `blob` in a worker thread, fetching ahead by two pieces."""
    work: queue.Queue[memoryview | None] = queue.Queue(maxsize=2)
    failed: list[BaseException] = []

    def consume() -> None:
        while (view := work.get()) is not None:
            if not failed:
                try:
                    blob.feed(view)
                except BaseException as e:  # handed to the fetching thread
                    failed.append(e)

    worker = threading.Thread(target=consume, name="checkpoint-blob", daemon=True)
    worker.start()
    try:
        work.put(memoryview(second).cast("B"))
        for piece in rest:
            if failed:
                break
            work.put(memoryview(piece).cast("B"))
    finally:
        work.put(None)
        worker.join()
    if failed:
        raise failed[0]


class CheckpointWriter:
    """One checkpoint being written; see the module docstring."""

    def __init__(self, target: str | os.PathLike[str], *, compress: bool = True) -> None:
        self.target = Path(target).absolute()
        self.tmp = self.target.with_name(f".{self.target.name}.tmp-{secrets.token_hex(4)}")
        self._compress = compress
        self.committed = False

    def __enter__(self) -> CheckpointWriter:
        if self.target.exists():
            refuse_to_replace(self.target)  # before any work
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.tmp.mkdir(mode=0o700)  # sessions' tokens and data: the owner's eyes only
        except OSError as e:
            raise CheckpointError(
                self.tmp, f"cannot create the checkpoint directory: {e}"
            ) from None
        self.sink = BlobSink(self.tmp, compress=self._compress)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.committed:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def commit(self, body: ck.manifest_body) -> None:
        """Write the manifest and put the directory in place of the target, atomically."""
        manifest = self.tmp / MANIFEST
        with open(os.open(manifest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(encode_manifest(body))
            f.flush()
            os.fsync(f.fileno())
        for folder in [p for p in self.tmp.rglob("*") if p.is_dir()] + [self.tmp]:
            fsync_dir(folder)
        if self.target.exists():
            refuse_to_replace(self.target)
            if _exchange(self.tmp, self.target):
                fsync_dir(self.target.parent)
                self.committed = True
                shutil.rmtree(self.tmp, ignore_errors=True)  # now the previous checkpoint
                return
            old = self.target.with_name(f".{self.target.name}.old-{secrets.token_hex(4)}")
            os.rename(self.target, old)  # a crash between these two leaves `old` whole
            os.rename(self.tmp, self.target)
            fsync_dir(self.target.parent)
            self.committed = True
            shutil.rmtree(old, ignore_errors=True)
            return
        os.rename(self.tmp, self.target)
        fsync_dir(self.target.parent)
        self.committed = True
