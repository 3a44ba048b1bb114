"""A launch packed by its template gives the bytes the general path gives, or defers to it."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

from cricket_client import launch_templates
from cricket_client._types import CUdeviceptr, CUfunction, CUkernel, CUstream
from cricket_client.driver import _launch_body
from cricket_client.kernel_args import pack_kernel_params
from cricket_client.launch_templates import LaunchTemplates, launch_key

SAXPY = ((0, 4), (8, 8), (16, 8), (24, 4))  # float a, float *x, float *y, int n
SAXPY_TYPES = (ctypes.c_float, None, None, ctypes.c_int)
FUNC = 0x5000000000000007


def _general(func: int, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int,
             stream: Any, layout: Any, params: Any) -> bytes | None:
    return _launch_body(func, grid, block, shared, stream, pack_kernel_params("k", layout, params))


def _templated(table: LaunchTemplates, f: Any, grid: tuple[int, int, int],
               block: tuple[int, int, int], shared: int, stream: Any, params: Any) -> bytes | None:
    key = launch_key(f, params)
    assert key is not None
    return table.body(key, *grid, *block, shared, stream, params[0])


def _primed(f: Any, layout: Any, params: Any) -> LaunchTemplates:
    table = LaunchTemplates()
    key = launch_key(f, params)
    assert key is not None
    table.add(key, layout, params[1])
    return table


@pytest.mark.parametrize("stream", [0, None, 1, 2, 0x2F00, CUstream(0), CUstream(2), CUstream(77)])
@pytest.mark.parametrize("f", [FUNC, CUfunction(FUNC)])
def test_a_templated_launch_is_the_bytes_of_the_general_path(f: Any, stream: Any) -> None:
    params = ((2.5, CUdeviceptr(0x7F0000001000), 0x7F0000002000, 1024), SAXPY_TYPES)
    table = _primed(f, SAXPY, params)
    assert len(table) == 1
    for values in [(2.5, CUdeviceptr(0x7F0000001000), 0x7F0000002000, 1024),
                   (-1.0, CUdeviceptr(0), 0, -7), (3, CUdeviceptr(8), 16, 2**31 - 1)]:
        p = (values, SAXPY_TYPES)
        if type(values[0]) is not float:  # another key: no template for it yet
            assert table.body(launch_key(f, p), 1, 1, 1, 1, 1, 1, 0, stream, values) is None
            table.add(launch_key(f, p), SAXPY, SAXPY_TYPES)  # type: ignore[arg-type]
        got = _templated(table, f, (3, 2, 1), (256, 1, 1), 64, stream, p)
        assert got == _general(FUNC, (3, 2, 1), (256, 1, 1), 64, stream, SAXPY, p)


def test_parameters_with_gaps_and_padding_match_the_general_path() -> None:
    layout = ((0, 1), (4, 2), (8, 8), (16, 4), (24, 8), (32, 1))  # 33 bytes: 3 of XDR padding
    types = (ctypes.c_bool, ctypes.c_short, ctypes.c_double, ctypes.c_uint, None, ctypes.c_ubyte)
    params = ((1, -3, 1.25, 4000000000, CUdeviceptr(99), 255), types)
    table = _primed(FUNC, layout, params)
    got = _templated(table, FUNC, (1, 1, 1), (1, 1, 1), 0, 0, params)
    assert got is not None and len(got) % 4 == 0
    assert got == _general(FUNC, (1, 1, 1), (1, 1, 1), 0, 0, layout, params)


@pytest.mark.parametrize("values", [
    (2.0, 1, 2, 2.5),  # a float for an int parameter: ctypes refuses it
    (2.0, 1, 2, 2**31),  # out of range: the general path wraps it as ctypes does
    (2.0, -1, 2, 3),  # a negative pointer: wrapped by the general path
])
def test_values_the_template_cannot_pack_go_to_the_general_path(values: tuple[Any, ...]) -> None:
    params = (values, SAXPY_TYPES)
    table = _primed(FUNC, SAXPY, params)
    assert _templated(table, FUNC, (1, 1, 1), (1, 1, 1), 0, 0, params) is None


@pytest.mark.parametrize("grid", [(2.0, 1, 1), (-1, 1, 1), (1 << 32, 1, 1)])
def test_launch_dimensions_the_wire_refuses_go_to_the_general_path(grid: Any) -> None:
    params = ((2.0, 1, 2, 3), SAXPY_TYPES)
    table = _primed(FUNC, SAXPY, params)
    assert _templated(table, FUNC, grid, (1, 1, 1), 0, 0, params) is None
    assert _general(FUNC, grid, (1, 1, 1), 0, 0, SAXPY, params) is None  # the codec names it


@pytest.mark.parametrize("stream", [-1, "0", 2.0, ctypes.c_void_p(5)])
def test_streams_other_than_ints_and_cu_streams_go_to_the_general_path(stream: Any) -> None:
    params = ((2.0, 1, 2, 3), SAXPY_TYPES)
    table = _primed(FUNC, SAXPY, params)
    assert _templated(table, FUNC, (1, 1, 1), (1, 1, 1), 0, stream, params) is None


@pytest.mark.parametrize("values", [
    (2.0, True, 2, 3),  # a bool for a pointer: packed by the general path
    (2.0, ctypes.c_void_p(1), 2, 3),
    (2.0, 1, 2, ctypes.c_int(3)),
])
def test_value_types_the_template_does_not_take_make_none(values: tuple[Any, ...]) -> None:
    params = (values, SAXPY_TYPES)
    assert len(_primed(FUNC, SAXPY, params)) == 0


def test_layouts_without_a_plan_make_none() -> None:
    overlapping = ((0, 8), (4, 4))
    params = ((1, 2), (None, ctypes.c_int))
    assert len(_primed(FUNC, overlapping, params)) == 0
    struct_param = ((0, 8),)

    class Pair(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int), ("b", ctypes.c_int)]

    assert len(_primed(FUNC, struct_param, ((Pair(1, 2),), (Pair,)))) == 0


@pytest.mark.parametrize("f, params", [
    (CUkernel(FUNC), ((1,), (ctypes.c_int,))),  # a CUkernel means a function per context
    ("7", ((1,), (ctypes.c_int,))),
    (FUNC, [(1,), (ctypes.c_int,)]),
    (FUNC, ([1], (ctypes.c_int,))),
    (FUNC, ((1,), (ctypes.c_int,), ())),
    (FUNC, 1),
    (FUNC, b"\0" * 8),
    (CUkernel(FUNC), None),
])
def test_launches_no_template_serves_have_no_key(f: Any, params: Any) -> None:
    assert launch_key(f, params) is None


def test_unhashable_types_are_left_to_the_general_path() -> None:
    params = ((1,), ([],))
    key = launch_key(FUNC, params)
    assert key is not None
    table = LaunchTemplates()
    table.add(key, ((0, 4),), params[1])
    assert len(table) == 0
    assert table.body(key, 1, 1, 1, 1, 1, 1, 0, 0, params[0]) is None


def test_the_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch_templates, "MAX_TEMPLATES", 3)
    table = LaunchTemplates()
    for func in range(1, 8):
        params = ((1,), (ctypes.c_int,))
        table.add(launch_key(func, params), ((0, 4),), params[1])  # type: ignore[arg-type]
        assert 1 <= len(table) <= 3


@pytest.mark.parametrize("none", [None, 0])
@pytest.mark.parametrize("stream", [0, CUstream(0), CUstream(0x99)])
def test_a_launch_without_parameters_is_the_bytes_of_the_general_path(none: Any, stream: Any) -> None:
    table = LaunchTemplates()
    key = launch_key(CUfunction(FUNC), none)
    assert key == (FUNC,)
    table.add(key, ())
    got = table.body(key, 1, 1, 1, 32, 1, 1, 0, stream, ())
    assert got == _general(FUNC, (1, 1, 1), (32, 1, 1), 0, stream, (), none)


def test_no_template_without_parameters_for_a_function_that_takes_some() -> None:
    table = LaunchTemplates()
    key = launch_key(FUNC, None)
    assert key is not None
    table.add(key, SAXPY)  # the general path refuses such launches ("takes 4 parameters")
    assert len(table) == 0
    assert table.body(key, 1, 1, 1, 1, 1, 1, 0, 0, ()) is None
