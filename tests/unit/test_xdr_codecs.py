"""Runtime codecs built by hand: structs (fused and nested), unions, enums, errors that name the field."""

from __future__ import annotations

import dataclasses
import enum
import struct
from typing import Any

import pytest

from cricket_xdr import xdr


class Color(enum.IntEnum):
    RED = 0
    BLUE = 7


@dataclasses.dataclass(slots=True)
class Inner:
    flag: bool
    color: Color


@dataclasses.dataclass(slots=True)
class Outer:
    n: int
    inner: Inner
    name: str
    weight: float


@dataclasses.dataclass(slots=True)
class Choice:
    kind: int
    value: Any = None


xdr_Inner = xdr.Struct("Inner").define(Inner, [("flag", xdr.xdr_bool), ("color", xdr.Enum(Color))])
xdr_Outer = xdr.Struct("Outer").define(
    Outer,
    [("n", xdr.xdr_hyper), ("inner", xdr_Inner), ("name", xdr.String(8)), ("weight", xdr.xdr_double)],
)
xdr_Choice = xdr.Union("Choice").define(
    Choice, "kind", xdr.xdr_int, [((1, 2), xdr.xdr_int), ((3,), xdr.xdr_void)]
)


def test_nested_struct_layout() -> None:
    value = Outer(-2, Inner(True, Color.BLUE), "ab", 0.5)
    data = xdr_Outer.encode(value)
    assert data == struct.pack(">qIiI2sxxd", -2, 1, 7, 2, b"ab", 0.5)
    assert xdr_Outer.decode(data) == value
    assert isinstance(xdr_Outer.decode(data).inner.color, Color)


def test_fused_fields_are_checked_on_decode() -> None:
    with pytest.raises(xdr.XdrDecodeError, match="neither 0 nor 1"):
        xdr_Inner.decode(struct.pack(">Ii", 2, 0))
    with pytest.raises(xdr.XdrDecodeError, match="5 is not a declared enum value"):
        xdr_Inner.decode(struct.pack(">Ii", 1, 5))
    with pytest.raises(xdr.XdrDecodeError, match="expected exactly 8 bytes, got 4"):
        xdr_Inner.decode(b"\0\0\0\1")
    with pytest.raises(xdr.XdrDecodeError, match="ends early"):
        xdr_Outer.decode(struct.pack(">qI", 1, 1))


def test_encode_errors_name_the_field() -> None:
    with pytest.raises(xdr.XdrEncodeError, match="struct Outer: field name: string<8>: 9 bytes"):
        xdr_Outer.encode(Outer(1, Inner(True, Color.RED), "123456789", 1.0))
    with pytest.raises(xdr.XdrEncodeError, match="struct Outer: field n: hyper"):
        xdr_Outer.encode(Outer(2**64, Inner(True, Color.RED), "", 1.0))
    with pytest.raises(xdr.XdrEncodeError, match="struct Inner: field color: enum Color: 3"):
        xdr_Inner.encode(Inner(False, 3))  # type: ignore[arg-type]
    with pytest.raises(xdr.XdrEncodeError, match="expected Inner, got str"):
        xdr_Inner.encode("nope")


def test_union_cases_share_an_arm_and_void_arms_carry_none() -> None:
    assert xdr_Choice.encode(Choice(2, 9)) == struct.pack(">ii", 2, 9)
    assert xdr_Choice.decode(struct.pack(">i", 3)) == Choice(3, None)
    with pytest.raises(xdr.XdrDecodeError, match="union Choice: no arm for kind=4 and no default"):
        xdr_Choice.decode(struct.pack(">ii", 4, 0))
    with pytest.raises(xdr.XdrEncodeError, match="union Choice \\(kind=1\\): int"):
        xdr_Choice.encode(Choice(1, "x"))


def test_arm_property_follows_the_discriminant() -> None:
    prop = xdr.arm_property("Choice", "number", "kind", frozenset({1, 2}), frozenset({1, 2, 3}))
    default = xdr.arm_property("Choice", "other", "kind", None, frozenset({1, 2, 3}))
    c = Choice(2, 5)
    assert prop.fget(c) == 5
    with pytest.raises(AttributeError, match="arm 'other' is not selected by kind=2"):
        default.fget(c)
    assert default.fget(Choice(9, 1)) == 1


def test_decoder_reads_in_sequence_and_done_checks_the_end() -> None:
    dec = xdr.Decoder(struct.pack(">iq", 1, 2) + b"\0\0\0\0")
    assert xdr.xdr_int.unpack(dec) == 1
    assert xdr.xdr_hyper.unpack(dec) == 2
    assert dec.remaining() == 4
    with pytest.raises(xdr.XdrDecodeError, match="4 trailing bytes"):
        dec.done()


def test_arrays_of_enums_and_bools_are_checked() -> None:
    colors = xdr.VarArray(xdr.Enum(Color))
    assert colors.decode(colors.encode([Color.BLUE, Color.RED])) == [Color.BLUE, Color.RED]
    with pytest.raises(xdr.XdrDecodeError, match="not a declared Color"):
        colors.decode(struct.pack(">Ii", 1, 3))
    with pytest.raises(xdr.XdrEncodeError):
        colors.encode([3])
    flags = xdr.FixedArray(xdr.xdr_bool, 2)
    assert flags.decode(flags.encode([True, False])) == [True, False]
    with pytest.raises(xdr.XdrDecodeError, match="neither 0 nor 1"):
        flags.decode(struct.pack(">II", 1, 2))
