"""The on-disk checkpoint format (D9): the manifest file and blob encoding.

    | file        | content                                                           |
    | MANIFEST    | manifest_file (rpc_spec/checkpoint.x): magic, format version,     |
    |             | sha256 of the body, body = manifest_body (XDR)                    |
    | s<id>/...   | blobs, named by a blob_ref: pieces of `piece_size` decoded bytes, |
    |             | each raw or one zstd frame, each with the sha256 of its stored    |
    |             | bytes in the blob_ref                                             |

A reader checks the magic and the version before it decodes the body, and the body's sha256
before it trusts any of it. Every failure is a `CheckpointError` naming the file.

Pieces: a blob is written in pieces of PIECE_SIZE decoded bytes (the last one may hold
fewer), so the digests of one large blob are computed, and checked, by several threads at
once, and a restore hands each piece on as soon as it is checked. sha256 (hashlib, OpenSSL:
about 1.2-2 GB/s a core with SHA extensions, the GIL released) stays the digest: one core per
piece in parallel outruns the disk, and it needs no other package.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from cricket_xdr.xdr import XdrError
from rpc_spec import checkpoint_rpc as ck

MANIFEST = "MANIFEST"
FORMAT_VERSION = ck.CHECKPOINT_FORMAT_VERSION
MAGIC = ck.CHECKPOINT_MAGIC
PIECE_SIZE = 8 << 20  # decoded bytes of a written blob's pieces (bench/results/profile-2core/restore.md)
MAX_PIECE = ck.CHECKPOINT_MAX_PIECE  # the largest piece_size a reader takes

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


def zstd_piece(data: bytes | memoryview, size: int, path: Path, what: str) -> bytes:
    """The `size` bytes the zstd frame `data` (one piece) decodes to; CheckpointError naming
    the file and `what` (the piece) when it does not decode to exactly that."""
    if _zstd is None:
        raise CheckpointError(path, "blob is zstd-compressed and the zstandard module is missing")
    try:
        declared = _zstd.frame_content_size(data)
        if declared != size:
            raise CheckpointError(path, f"{what}: its zstd frame declares {declared} bytes, the "
                                  f"manifest {size}")  # fmt: skip
        out = _zstd.ZstdDecompressor().decompress(
            data, max_output_size=size, allow_extra_data=False
        )
    except _zstd.ZstdError as e:
        raise CheckpointError(path, f"{what}: zstd frame does not decode: {e}") from None
    if len(out) != size:
        raise CheckpointError(path, f"{what}: decodes to {len(out)} bytes, expected {size}")
    return out


def stored_bound(size: int) -> int:
    """The most bytes one zstd frame of a piece of `size` bytes takes (ZSTD_compressBound,
    with room for the frame's header and checksum)."""
    return size + (size >> 7) + 1024


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
