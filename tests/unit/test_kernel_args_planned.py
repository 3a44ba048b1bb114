"""The cached one-struct packing of `((values), (types))` gives exactly ctypes' bytes, and
hands every value it cannot pack like ctypes (wrapping, conversions, mistakes) to the
general path, launch after launch with the same plan."""

from __future__ import annotations

import ctypes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cricket_client import driver as cuda
from cricket_client.kernel_args import LaunchArgumentError, LaunchName, pack_kernel_params

F = LaunchName("cuLaunchKernel", 0x10)
SCALARS = [
    ctypes.c_bool,
    ctypes.c_byte,
    ctypes.c_ubyte,
    ctypes.c_short,
    ctypes.c_ushort,
    ctypes.c_int,
    ctypes.c_uint,
    ctypes.c_long,
    ctypes.c_ulong,
    ctypes.c_longlong,
    ctypes.c_ulonglong,
    ctypes.c_size_t,
    ctypes.c_float,
    ctypes.c_double,
]


def _layout(types: list[object]) -> tuple[tuple[int, int], ...]:
    """Natural alignment, like a compiled kernel's parameters."""
    out, at = [], 0
    for t in types:
        size = 8 if t is None else ctypes.sizeof(t)  # type: ignore[arg-type]
        at = (at + size - 1) // size * size
        out.append((at, size))
        at += size
    return tuple(out)


def _by_ctypes(layout: tuple[tuple[int, int], ...], values: list[object], types: list[object]) -> bytes:
    buf = bytearray(max((o + s for o, s in layout), default=0))
    for (off, size), value, t in zip(layout, values, types, strict=True):
        raw = (int(value) & (2**64 - 1)).to_bytes(8, "little") if t is None else bytes(t(value))  # type: ignore[call-overload, operator]
        buf[off : off + size] = raw
    return bytes(buf)


def _value(draw: st.DrawFn, t: object) -> object:
    if t is None:
        return draw(st.integers(-(2**63), 2**64 - 1))
    if t in (ctypes.c_float, ctypes.c_double):
        return draw(st.floats(allow_nan=False) | st.integers(-(2**20), 2**20))
    return draw(st.integers(-(2**70), 2**70))  # beyond the range: ctypes wraps


@st.composite
def launches(draw: st.DrawFn) -> tuple[list[object], list[object]]:
    types: list[object] = draw(st.lists(st.sampled_from([*SCALARS, None]), max_size=8))
    return [_value(draw, t) for t in types], types


@settings(max_examples=300, deadline=None)
@given(launches())
def test_same_bytes_as_ctypes(case: tuple[list[object], list[object]]) -> None:
    values, types = case
    layout = _layout(types)
    expected = _by_ctypes(layout, values, types)
    for _ in range(2):  # the first launch makes the plan, the second uses it
        assert pack_kernel_params(F, layout, (tuple(values), tuple(types))) == expected


def test_handles_and_other_values_go_the_general_way() -> None:
    types = (ctypes.c_float, None, None, ctypes.c_int)
    layout = ((0, 4), (8, 8), (16, 8), (24, 4))
    plain = pack_kernel_params(F, layout, ((2.0, 0x1000, 0x2000, 7), types))
    handles = pack_kernel_params(F, layout, ((2.0, cuda.CUdeviceptr(0x1000), 0x2000, 7), types))
    wrapped = pack_kernel_params(F, layout, ((ctypes.c_float(2.0), 0x1000, 0x2000, 7), types))
    assert plain == handles == wrapped
    with pytest.raises(TypeError):
        pack_kernel_params(F, layout, ((2.0, 0x1000, 0x2000, 7.5), types))
    with pytest.raises(TypeError, match="float"):
        pack_kernel_params(F, layout, ((2.0, 1.5, 0x2000, 7), types))


def test_wrong_size_is_named_after_a_planned_launch() -> None:
    layout = ((0, 4), (8, 8))
    pack_kernel_params(F, layout, ((1, 2), (ctypes.c_int, None)))
    with pytest.raises(LaunchArgumentError, match=r"cuLaunchKernel: function 0x10 parameter 0 is 4 bytes"):
        pack_kernel_params(F, layout, ((1, 2), (ctypes.c_double, None)))
