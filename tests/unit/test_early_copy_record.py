"""The early copy's record, encoded by hand on its hot path, is what cricket.x's codecs make
of CU_MEMCPY_HTOD_ASYNC(dst, data, legacy stream): a change of the procedure's arguments
cannot go unnoticed."""

from __future__ import annotations

import pytest

from cricket_client import early_copies
from cricket_xdr.xdr import Encoder
from rpc_spec import cricket_rpc as proto


def _codec_encoding(dst: int, data: bytes) -> bytes:
    procedure = proto.CRICKET_V1_Server.PROCEDURES[proto.CU_MEMCPY_HTOD_ASYNC]
    enc = Encoder()
    for codec, arg in zip(procedure.arg_codecs, (dst, data, 0), strict=True):
        codec.pack(enc, arg)
    return b"".join(bytes(b) for b in enc.buffers())


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7, 4096, 65535])
def test_the_hand_encoded_early_copy_matches_the_codecs(size: int) -> None:
    dst, data = 0x7F00_1234_5000, bytes(range(256)) * (size // 256) + bytes(size % 256)
    by_hand = early_copies._HEAD.pack(dst, size) + data + early_copies._TAILS[size & 3]
    assert by_hand == _codec_encoding(dst, data)
