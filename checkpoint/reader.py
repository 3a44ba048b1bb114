"""Reading a checkpoint directory: the manifest, its blobs, and checking all of it.

`Checkpoint.open(path)` reads and checks the manifest (CheckpointError naming the file when
it is missing, of another version, truncated or damaged). `read_blob(ref)` returns a blob's
decoded bytes after checking its size and sha256. `verify()` checks every blob the manifest
names and raises the first problem; `problems()` lists them all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rpc_spec import checkpoint_rpc as ck

from .format import MANIFEST, CheckpointError, decode_manifest, sha256, zstd_decompress


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
        for a in s.allocations:
            yield f"{sid} allocation {a.ptr:#x} ({a.size} bytes)", a.contents


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

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Checkpoint:
        root = Path(path)
        if not root.is_dir():
            raise CheckpointError(root, "no such checkpoint directory")
        file = root / MANIFEST
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise CheckpointError(
                file, "missing: not a checkpoint, or one never completed"
            ) from None
        except OSError as e:
            raise CheckpointError(file, f"cannot be read: {e}") from None
        return cls(root, decode_manifest(data, file))

    def _file(self, ref: ck.blob_ref) -> Path:
        rel = Path(ref.file)
        if rel.is_absolute() or ".." in rel.parts:
            raise CheckpointError(
                self.path / MANIFEST, f"blob path {ref.file!r} leaves the checkpoint"
            )
        return self.path / rel

    def read_stored(self, ref: ck.blob_ref) -> bytes:
        """The stored bytes of a blob, checked against its size and sha256."""
        file = self._file(ref)
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise CheckpointError(file, "missing blob") from None
        except OSError as e:
            raise CheckpointError(file, f"cannot be read: {e}") from None
        if len(data) != ref.stored_size:
            raise CheckpointError(
                file, f"blob is {len(data)} bytes, the manifest says {ref.stored_size} (truncated?)"
            )
        if sha256(data) != bytes(ref.sha256):
            raise CheckpointError(file, "blob checksum mismatch (sha256): the file is damaged")
        return data

    def read_blob(self, ref: ck.blob_ref) -> bytes:
        """The decoded contents of a blob, checked."""
        data = self.read_stored(ref)
        file = self._file(ref)
        if ref.codec == ck.blob_codec.BLOB_ZSTD:
            data = zstd_decompress(data, ref.size, file)
        if len(data) != ref.size:
            raise CheckpointError(file, f"blob decodes to {len(data)} bytes, expected {ref.size}")
        return data

    def problems(self) -> list[CheckpointError]:
        """Every problem of every blob (empty: the checkpoint is whole)."""
        found = []
        for _what, ref in blob_refs(self.manifest):
            try:
                self.read_blob(ref)
            except CheckpointError as e:
                found.append(e)
        return found

    def verify(self) -> VerifyReport:
        """Check every blob; raise the first problem (CheckpointError naming the file)."""
        count = size = stored = 0
        for _what, ref in blob_refs(self.manifest):
            self.read_blob(ref)
            count += 1
            size += ref.size
            stored += ref.stored_size
        return VerifyReport(count, size, stored)
