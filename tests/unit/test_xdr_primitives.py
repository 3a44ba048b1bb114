"""The XDR runtime's primitives, byte for byte against xdrlib3 as an independent encoder."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import xdrlib3
from hypothesis import given
from hypothesis import strategies as st

from cricket_xdr import xdr

INT32 = st.integers(-(2**31), 2**31 - 1)
UINT32 = st.integers(0, 2**32 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT64 = st.integers(0, 2**64 - 1)


def reference(method: str, *args: object) -> bytes:
    p = xdrlib3.Packer()
    getattr(p, method)(*args)
    return p.get_buffer()


@pytest.mark.parametrize(
    ("codec", "method", "values"),
    [
        (xdr.xdr_int, "pack_int", INT32),
        (xdr.xdr_u_int, "pack_uint", UINT32),
        (xdr.xdr_hyper, "pack_hyper", INT64),
        (xdr.xdr_u_hyper, "pack_uhyper", UINT64),
        (xdr.xdr_double, "pack_double", st.floats(allow_nan=False)),
        (xdr.xdr_float, "pack_float", st.floats(width=32, allow_nan=False)),
        (xdr.xdr_bool, "pack_bool", st.booleans()),
    ],
    ids=lambda x: getattr(x, "name", None) if isinstance(x, xdr.Codec) else None,
)
def test_scalars_match_xdrlib3(codec: xdr.Codec, method: str, values: st.SearchStrategy) -> None:
    @given(values)
    def check(v: object) -> None:
        data = codec.encode(v)
        assert data == reference(method, v)
        assert codec.decode(data) == v

    check()


@given(st.binary(max_size=40))
def test_var_opaque_matches_xdrlib3(data: bytes) -> None:
    codec = xdr.VarOpaque(40)
    assert codec.encode(data) == reference("pack_opaque", data)
    assert codec.decode(codec.encode(data)) == data


@given(st.binary(min_size=7, max_size=7))
def test_fixed_opaque_matches_xdrlib3(data: bytes) -> None:
    codec = xdr.FixedOpaque(7)
    assert codec.encode(data) == reference("pack_fopaque", 7, data)
    assert codec.decode(codec.encode(data)) == data


@given(st.text(max_size=30))
def test_string_matches_xdrlib3(text: str) -> None:
    codec = xdr.String()
    raw = text.encode("utf-8")
    assert codec.encode(text) == reference("pack_string", raw)
    assert codec.decode(codec.encode(text)) == text


@given(st.lists(INT32, max_size=20))
def test_int_arrays_match_xdrlib3(items: list[int]) -> None:
    var = xdr.VarArray(xdr.xdr_int, 20)
    p = xdrlib3.Packer()
    p.pack_array(items, p.pack_int)
    assert var.encode(items) == p.get_buffer()
    fixed = xdr.FixedArray(xdr.xdr_int, len(items))
    p = xdrlib3.Packer()
    p.pack_farray(len(items), items, p.pack_int)
    assert fixed.encode(items) == p.get_buffer()
    assert var.decode(var.encode(items)) == items


def test_array_of_strings_matches_xdrlib3() -> None:
    items = ["a", "bcd", "", "éé"]
    p = xdrlib3.Packer()
    p.pack_array([s.encode() for s in items], p.pack_string)
    codec = xdr.VarArray(xdr.String(10))
    assert codec.encode(items) == p.get_buffer()
    assert codec.decode(p.get_buffer()) == items


@pytest.mark.parametrize(
    ("codec", "value"),
    [
        (xdr.xdr_int, 2**31),
        (xdr.xdr_u_int, -1),
        (xdr.xdr_hyper, 2**63),
        (xdr.xdr_u_hyper, -1),
        (xdr.xdr_int, "1"),
        (xdr.xdr_float, 1e300),
        (xdr.FixedOpaque(4), b"abc"),
        (xdr.VarOpaque(2), b"abc"),
        (xdr.String(2), "abc"),
        (xdr.String(), b"bytes"),
        (xdr.String(), "\ud800"),
        (xdr.FixedArray(xdr.xdr_int, 2), [1]),
        (xdr.VarArray(xdr.xdr_int, 1), [1, 2]),
        (xdr.VarArray(xdr.xdr_int), [1, "x"]),
        (xdr.VarOpaque(), 12),
    ],
)
def test_unencodable_values_raise_encode_error(codec: xdr.Codec, value: object) -> None:
    with pytest.raises(xdr.XdrEncodeError):
        codec.encode(value)


@pytest.mark.parametrize(
    ("codec", "data", "message"),
    [
        (xdr.xdr_int, b"\0\0\0", "need 4 bytes"),
        (xdr.xdr_hyper, b"\0" * 4, "need 8 bytes"),
        (xdr.xdr_bool, b"\0\0\0\2", "neither 0 nor 1"),
        (xdr.VarOpaque(3), b"\0\0\0\4abcd", "exceeds the bound 3"),
        (xdr.VarOpaque(), b"\0\0\0\5abcd", "exceeds the 4 bytes left"),
        (xdr.String(), b"\0\0\0\2\xff\xfe\0\0", "invalid UTF-8"),
        (xdr.FixedOpaque(5), b"abcde", "need 8 bytes"),
        (xdr.Optional(xdr.xdr_int), b"\0\0\0\2\0\0\0\0", "presence flag 2"),
        (xdr.xdr_int, b"\0\0\0\1\0", "1 trailing bytes"),
    ],
)
def test_bad_data_raises_decode_error(codec: xdr.Codec, data: bytes, message: str) -> None:
    with pytest.raises(xdr.XdrDecodeError, match=message):
        codec.decode(data)


def test_huge_length_is_refused_before_allocating() -> None:
    data = struct.pack(">I", 2**31) + b"\0" * 8
    for codec in (xdr.VarOpaque(), xdr.String(), xdr.VarArray(xdr.xdr_hyper), xdr.VarArray(xdr.String())):
        with pytest.raises(xdr.XdrDecodeError, match="2147483648"):
            codec.decode(data)


def test_padding_is_zero_on_encode_and_not_checked_on_decode() -> None:
    assert xdr.VarOpaque().encode(b"a") == b"\0\0\0\1a\0\0\0"
    assert xdr.VarOpaque().decode(b"\0\0\0\1a\xff\xff\xff") == b"a"


def test_big_opaque_is_kept_by_reference() -> None:
    payload = bytearray(b"x" * xdr.BIG_PAYLOAD + b"yz")
    enc = xdr.Encoder()
    xdr.xdr_int.pack(enc, 7)
    xdr.VarOpaque().pack(enc, payload)
    xdr.xdr_int.pack(enc, 8)
    pieces = enc.buffers()
    assert [memoryview(p).nbytes for p in pieces] == [8, len(payload), 2 + 4]
    assert memoryview(pieces[1]).obj is payload
    assert enc.getvalue() == b"".join(bytes(p) for p in pieces)
    dec = xdr.Decoder(enc.getvalue())
    assert (xdr.xdr_int.unpack(dec), xdr.VarOpaque().unpack(dec), xdr.xdr_int.unpack(dec)) == (
        7,
        bytes(payload),
        8,
    )
    dec.done()


def test_opaque_accepts_memoryview_and_numpy() -> None:
    arr = np.arange(6, dtype=np.float32)
    codec = xdr.VarOpaque()
    assert codec.decode(codec.encode(arr)) == arr.tobytes()
    assert codec.decode(codec.encode(memoryview(b"abc"))) == b"abc"
    assert xdr.xdr_int.decode(np.frombuffer(b"\0\0\0\5", dtype=np.uint8)) == 5


def test_small_buffers_are_one_piece() -> None:
    enc = xdr.Encoder()
    xdr.String().pack(enc, "hi")
    assert [bytes(b) for b in enc.buffers()] == [b"\0\0\0\2hi\0\0"]
    assert len(enc) == 8


def test_void_encodes_to_nothing() -> None:
    assert xdr.xdr_void.encode(None) == b""
    assert xdr.xdr_void.decode(b"") is None
