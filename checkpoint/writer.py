"""Writing a checkpoint directory crash-safely (D9).

`CheckpointWriter(target)` writes into a fresh temporary directory next to `target`; each
blob goes through `BlobSink.write` (in pieces, each with the sha256 of its stored bytes, zstd
where it pays, the file written behind and fsynced; checkpoint.pipeline overlaps copy-out,
hashing several pieces at once and writing);
`commit(body)` writes the manifest, fsyncs it and the directory, and puts the new directory
in place of `target` in one step (renameat2 RENAME_EXCHANGE, then the old one is deleted).
Leaving the `with` block without a commit deletes the temporary directory, so a failure (or
a crash: the temporary directory is never looked at) leaves `target` as it was.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import secrets
import shutil
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from rpc_spec import checkpoint_rpc as ck

from .format import (
    MAGIC,
    MANIFEST,
    CheckpointError,
    encode_manifest,
    zstd_available,
)
from .pipeline import store_blob
from .writebehind import WriteBehind

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
        """Store the concatenation of `pieces` as file `name` (relative to the root), fsynced
        before this returns. Taking the pieces, hashing and writing overlap
        (checkpoint.pipeline)."""
        path = self.root / name
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            file = WriteBehind(fd)
            blob = store_blob(pieces, file, compress=self.compress)
            file.finish()
        finally:
            os.close(fd)
        self.bytes += blob.size
        self.stored_bytes += blob.stored
        return ck.blob_ref(
            file=str(Path(name)),
            codec=blob.codec,
            size=blob.size,
            stored_size=blob.stored,
            piece_size=blob.piece_size,
            pieces=blob.pieces,
        )


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
