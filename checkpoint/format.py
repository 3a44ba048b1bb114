"""The on-disk checkpoint format (D9): the manifest file and blob encoding.

    | file        | content                                                           |
    | MANIFEST    | manifest_file (rpc_spec/checkpoint.x): magic, format version,     |
    |             | sha256 of the body, body = manifest_body (XDR)                    |
    | s<id>/...   | blobs: raw bytes or one zstd frame, named by a blob_ref           |

A reader checks the magic and the version before it decodes the body, and the body's sha256
before it trusts any of it. Every failure is a `CheckpointError` naming the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cricket_xdr.xdr import XdrError
from rpc_spec import checkpoint_rpc as ck

MANIFEST = "MANIFEST"
FORMAT_VERSION = ck.CHECKPOINT_FORMAT_VERSION
MAGIC = ck.CHECKPOINT_MAGIC

_zstd: Any
try:  # zstd is optional: without it blobs are written raw, and zstd blobs cannot be read
    import zstandard as _zstd
except ImportError:  # pragma: no cover - depends on the machine
    _zstd = None


class CheckpointError(Exception):
    """A checkpoint cannot be written, read or restored; `path` names the file at fault."""

    def __init__(self, path: str | Path | None, message: str) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{path}: {message}" if path is not None else message)
        self.message = message


def zstd_available() -> bool:
    return _zstd is not None


def zstd_compressor(level: int = 1) -> object:
    """A zstd compressor (with the frame's own content checksum); needs zstandard."""
    assert _zstd is not None
    return _zstd.ZstdCompressor(level=level, write_checksum=True)


def zstd_pieces(source: Any, size: int, path: Path) -> Iterator[bytes]:
    """Decode the zstd frame read from `source` (an object with read()) in pieces of at most
    `size` bytes."""
    if _zstd is None:
        raise CheckpointError(path, "blob is zstd-compressed and the zstandard module is missing")
    try:
        yield from _zstd.ZstdDecompressor().read_to_iter(source, read_size=size, write_size=size)
    except _zstd.ZstdError as e:
        raise CheckpointError(path, f"zstd frame does not decode: {e}") from None


def sha256(data: bytes | memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def encode_manifest(body: ck.manifest_body) -> bytes:
    raw = ck.xdr_manifest_body.encode(body)
    return ck.xdr_manifest_file.encode(
        ck.manifest_file(
            magic=MAGIC, format_version=FORMAT_VERSION, body_sha256=sha256(raw), body=raw
        )
    )


def decode_manifest(data: bytes, path: Path) -> ck.manifest_body:
    """The manifest body in `data` (the bytes of `path`), checked; else CheckpointError."""
    if len(data) < 8:
        raise CheckpointError(path, f"manifest is {len(data)} bytes long: truncated")
    magic = int.from_bytes(data[:4], "big")
    version = int.from_bytes(data[4:8], "big")
    if magic != MAGIC:
        raise CheckpointError(path, f"not a cricket checkpoint manifest (magic {magic:#010x})")
    if version != FORMAT_VERSION:
        age = "older" if version < FORMAT_VERSION else "newer"
        raise CheckpointError(
            path,
            f"manifest format version {version} is not supported (this reader knows version "
            f"{FORMAT_VERSION}; the file is {age}: restore it with the release that wrote it)",
        )
    try:
        outer = ck.xdr_manifest_file.decode(data)
    except XdrError as e:
        raise CheckpointError(
            path, f"manifest does not decode (truncated or damaged): {e}"
        ) from None
    if sha256(outer.body) != bytes(outer.body_sha256):
        raise CheckpointError(path, "manifest body checksum mismatch (the file is damaged)")
    try:
        return ck.xdr_manifest_body.decode(outer.body)
    except XdrError as e:
        raise CheckpointError(path, f"manifest body does not decode: {e}") from None
