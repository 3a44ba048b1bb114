"""A blob_ref for manifests built by hand in tests: raw, its piece list matching its size."""

from __future__ import annotations

from checkpoint.format import PIECE_SIZE
from rpc_spec import checkpoint_rpc as ck


def raw_ref(file: str, size: int, piece_size: int = PIECE_SIZE) -> ck.blob_ref:
    whole, rest = divmod(size, piece_size)
    sizes = [piece_size] * whole + ([rest] if rest else [])
    pieces = [ck.blob_piece(stored_size=n, sha256=bytes(32)) for n in sizes]
    return ck.blob_ref(file=file, codec=ck.blob_codec.BLOB_RAW, size=size, stored_size=size,
                       piece_size=piece_size, pieces=pieces)  # fmt: skip
