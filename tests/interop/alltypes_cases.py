"""The test values of alltypes.x, as Python values of the generated module.

tests/interop/c/cases.c builds the same values in C under the same names; the C client,
the C codec and the Python tests refer to a case by its name.
"""

from __future__ import annotations

import math
import struct
import sys
from dataclasses import dataclass, fields, is_dataclass
from types import ModuleType
from typing import Any

INT_MIN, INT_MAX, UINT_MAX = -(2**31), 2**31 - 1, 2**32 - 1
HYPER_MIN, HYPER_MAX, UHYPER_MAX = -(2**63), 2**63 - 1, 2**64 - 1
FLT_MAX = 3.4028234663852886e38
FLT_TRUE_MIN = 2.0**-149
DBL_MAX = sys.float_info.max
DBL_TRUE_MIN = 5e-324
NAN, INF = math.nan, math.inf
TEXT_PATTERN = "abcdefghijklmnopqrstuvwxyz0123456789"
SIXTEEN = "sixteen-chars-ab"  # a string at the bound of `name` (NAME_LEN = 16)


@dataclass(frozen=True)
class Case:
    """A named value of a type of alltypes.x (`hyper`: the argument of ECHO_HYPER)."""

    name: str
    type: str
    value: Any


def pattern_bytes(n: int) -> bytes:
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


def pattern_text(n: int) -> str:
    return (TEXT_PATTERN * (n // len(TEXT_PATTERN) + 1))[:n]


def make_chain(m: ModuleType, n: int) -> Any:
    head = None
    for i in reversed(range(n)):
        head = m.node(value=i * i - 50, label=f"n{i}", next=head)
    return head


def build_cases(m: ModuleType) -> dict[str, Case]:
    """Every case of c/cases.c, by name, built from the generated module m."""
    c = m.color
    scalars_zero = m.scalars(i=0, u=0, h=0, uh=0, f=0.0, d=0.0, b=False, c=c.RED)
    scalars_max = m.scalars(
        i=INT_MAX, u=UINT_MAX, h=HYPER_MAX, uh=UHYPER_MAX, f=FLT_MAX, d=DBL_MAX, b=True, c=c.BLUE
    )
    scalars_min = m.scalars(
        i=INT_MIN, u=0, h=HYPER_MIN, uh=0, f=-INF, d=-DBL_MAX, b=False, c=c.BLACK
    )
    scalars_nan = m.scalars(i=-1, u=1, h=-1, uh=1, f=NAN, d=NAN, b=True, c=c.GREEN)
    scalars_tiny = m.scalars(
        i=1, u=2**31, h=1, uh=2**63, f=FLT_TRUE_MIN, d=DBL_TRUE_MIN, b=False, c=c.WHITE
    )
    arrays_empty = m.arrays(
        fixed_ints=[0, 0, 0], big=[], some=[], names=[], fixed_blob=bytes(5), var_blob=b"",
        any_blob=b"", short_text="", long_text="", colors=[c.RED, c.RED], flags=[],
    )  # fmt: skip
    arrays_full = m.arrays(
        fixed_ints=[INT_MIN, 0, INT_MAX],
        big=[0, 1, UHYPER_MAX],
        some=[1.5, -0.0, 1e300],
        names=["abcdefghijklmnop", "ABCDEFGHIJKLMNOP", "0123456789abcdef", SIXTEEN],
        fixed_blob=b"\x00\x01\xfe\xff\x80",
        var_blob=pattern_bytes(8),
        any_blob=pattern_bytes(1000),
        short_text="0123456789ABCDEF",
        long_text=pattern_text(1000),
        colors=[c.BLACK, c.WHITE],
        flags=[True, False, True],
    )
    arrays_pad = m.arrays(
        fixed_ints=[1, 2, 3], big=[42], some=[-1.25], names=["a", "bc", "def"],
        fixed_blob=b"hello", var_blob=b"\x01\x02\x03", any_blob=b"\xab", short_text="ab",
        long_text="café", colors=[c.GREEN, c.BLUE], flags=[False],
    )  # fmt: skip
    # 170 KB: libtirpc sends it as several record fragments (64 KiB each)
    arrays_large = m.arrays(
        fixed_ints=[1, 2, 3],
        big=[(i * 0x0101010101010101) & UHYPER_MAX for i in range(1000)],
        some=[-1.25], names=["a", "bc", "def"], fixed_blob=b"hello", var_blob=b"\x01\x02\x03",
        any_blob=pattern_bytes(100000), short_text="ab", long_text=pattern_text(70001),
        colors=[c.GREEN, c.BLUE], flags=[False],
    )  # fmt: skip
    chain_3 = make_chain(m, 3)
    optionals_some = m.optionals(
        maybe_int=-7, maybe_name="opt-name", maybe_scalars=scalars_max, items=chain_3
    )
    by_int_s = m.by_int(kind=m.NEGATIVE, value=SIXTEEN)
    by_unsigned_max = m.by_unsigned(tag=0xFFFFFFFF, value=UHYPER_MAX)
    by_enum_green = m.by_enum(c=c.GREEN, value=chain_3)
    by_bool_true = m.by_bool(present=True, value=arrays_pad)
    many_args = m.many(i=INT_MAX, n=SIXTEEN, uh=UHYPER_MAX, l=chain_3, c=c.BLACK, d=-DBL_MAX)
    values: list[tuple[str, str, Any]] = [
        ("scalars_zero", "scalars", scalars_zero),
        ("scalars_max", "scalars", scalars_max),
        ("scalars_min", "scalars", scalars_min),
        ("scalars_nan", "scalars", scalars_nan),
        ("scalars_tiny", "scalars", scalars_tiny),
        ("arrays_empty", "arrays", arrays_empty),
        ("arrays_full", "arrays", arrays_full),
        ("arrays_pad", "arrays", arrays_pad),
        ("arrays_large", "arrays", arrays_large),
        (
            "optionals_none",
            "optionals",
            m.optionals(maybe_int=None, maybe_name=None, maybe_scalars=None, items=None),
        ),
        ("optionals_some", "optionals", optionals_some),
        ("chain_0", "chain", None),
        ("chain_1", "chain", make_chain(m, 1)),
        ("chain_3", "chain", chain_3),
        ("chain_100", "chain", make_chain(m, 100)),
        ("by_int_i", "by_int", m.by_int(kind=1, value=INT_MIN)),
        ("by_int_h2", "by_int", m.by_int(kind=2, value=HYPER_MAX)),
        ("by_int_h3", "by_int", m.by_int(kind=3, value=HYPER_MIN)),
        ("by_int_s", "by_int", by_int_s),
        ("by_int_void", "by_int", m.by_int(kind=0, value=None)),
        ("by_int_default", "by_int", m.by_int(kind=99, value=2.5)),
        ("by_int_default_min", "by_int", m.by_int(kind=INT_MIN, value=-0.0)),
        ("by_unsigned_void", "by_unsigned", m.by_unsigned(tag=0, value=None)),
        ("by_unsigned_max", "by_unsigned", by_unsigned_max),
        ("by_unsigned_raw", "by_unsigned", m.by_unsigned(tag=7, value=b"\x00\xff\x10")),
        ("by_unsigned_default", "by_unsigned", m.by_unsigned(tag=12345, value=None)),
        ("by_enum_red", "by_enum", m.by_enum(c=c.RED, value=scalars_max)),
        ("by_enum_green", "by_enum", by_enum_green),
        ("by_enum_blue", "by_enum", m.by_enum(c=c.BLUE, value=None)),
        ("by_enum_black", "by_enum", m.by_enum(c=c.BLACK, value=None)),
        ("by_bool_true", "by_bool", by_bool_true),
        ("by_bool_false", "by_bool", m.by_bool(present=False, value=None)),
        ("many_args", "many", many_args),
        ("many_min", "many", m.many(i=INT_MIN, n="", uh=0, l=None, c=c.WHITE, d=NAN)),
        ("text_empty", "text", ""),
        ("text_utf8", "text", "grüße, 世界"),
        ("text_long", "text", pattern_text(100000)),
        ("hyper_min", "hyper", HYPER_MIN),
        ("hyper_max", "hyper", HYPER_MAX),
        ("hyper_minus1", "hyper", -1),
        (
            "everything_all",
            "everything",
            m.everything(
                s=scalars_nan,
                a=arrays_full,
                o=optionals_some,
                ui=by_int_s,
                uu=by_unsigned_max,
                ue=by_enum_green,
                ub=by_bool_true,
                m=many_args,
            ),
        ),  # fmt: skip
    ]
    return {name: Case(name, type_, value) for name, type_, value in values}


# The case names, for parametrizing before the generated module exists (same order as above).
CASE_NAMES = [
    "scalars_zero", "scalars_max", "scalars_min", "scalars_nan", "scalars_tiny",
    "arrays_empty", "arrays_full", "arrays_pad", "arrays_large",
    "optionals_none", "optionals_some", "chain_0", "chain_1", "chain_3", "chain_100",
    "by_int_i", "by_int_h2", "by_int_h3", "by_int_s", "by_int_void", "by_int_default",
    "by_int_default_min", "by_unsigned_void", "by_unsigned_max", "by_unsigned_raw",
    "by_unsigned_default", "by_enum_red", "by_enum_green", "by_enum_blue", "by_enum_black",
    "by_bool_true", "by_bool_false", "many_args", "many_min",
    "text_empty", "text_utf8", "text_long", "hyper_min", "hyper_max", "hyper_minus1",
    "everything_all",
]  # fmt: skip


def differences(actual: Any, expected: Any, path: str = "value") -> list[str]:
    """Where actual differs from expected; floats compare bit for bit (NaN, -0.0)."""
    if isinstance(expected, float):
        if not isinstance(actual, float):
            return [f"{path}: {actual!r} is not a float (expected {expected!r})"]
        if struct.pack(">d", actual) != struct.pack(">d", expected):
            return [f"{path}: {actual!r} != {expected!r}"]
        return []
    if is_dataclass(expected) and not isinstance(expected, type):
        if type(actual) is not type(expected):
            return [f"{path}: {type(actual).__name__} is not {type(expected).__name__}"]
        out: list[str] = []
        for f in fields(expected):
            out += differences(
                getattr(actual, f.name), getattr(expected, f.name), f"{path}.{f.name}"
            )
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [
                f"{path}: {_short(actual)} has not the {len(expected)} items of {_short(expected)}"
            ]
        out = []
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            out += differences(a, e, f"{path}[{i}]")
        return out
    if type(expected) is bool and type(actual) is not bool:
        return [f"{path}: {actual!r} is not a bool (expected {expected!r})"]
    if isinstance(expected, bytes) and not isinstance(actual, bytes):
        return [f"{path}: {type(actual).__name__} is not bytes"]
    if actual != expected:
        return [f"{path}: {_short(actual)} != {_short(expected)}"]
    return []


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:100]}... ({len(text)} characters)"
