"""Repeated cuLaunchKernel calls packed by a template: one struct for the values (D5, D6).

A launch whose kernelParams are `((values...), (ctypes types...))` is packed the first time by
`cricket_client.kernel_args` (which checks every value and names mistakes). When each value
is a plain one for its slot (an int or a float for a ctypes scalar of exactly the parameter's
size; an int or a handle for a `None` slot), the connection keeps a template for the key
(function, ctypes types, Python types of the values): one struct that packs the values at
their offsets, with the XDR padding. A later launch with the same key packs its launch_args
with two `struct.pack` calls (head and values) and goes to the launch batcher; anything else
(another key, a value the struct refuses, a CUkernel, `extra`, a logging replay log) takes
the general path, which gives the same bytes or the same error.

A template depends only on the function's parameter layout, which never changes for a
handle value: the server issues each handle value once per process and a restored session
keeps its values. Templates of unloaded functions stay until the table is full (a launch of
one is sent and refused by the server, as on the general path).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from ._types import CUfunction, CUstream, Handle
from .kernel_args import ParamLayout, _plan

__all__ = ["LaunchTemplates", "MAX_TEMPLATES", "launch_key", "template_for"]

MAX_TEMPLATES = 4096  # templates one connection keeps at most (the table is emptied past it)
_HEAD = struct.Struct(">Q7IQI")  # launch_args up to the params' length word (XDR)
_SCALAR_VALUES = (int, float)
CU_STREAM_PER_THREAD = 2
_WIRE_PER_THREAD = 2

Packer = Callable[..., bytes]


def launch_key(f: Any, kernel_params: Any) -> tuple[Any, ...] | None:
    """The template key of a launch of `f` with `kernel_params`, None where no template can
    serve it (not a (values, types) pair nor "no parameters", a CUkernel or another kind of
    function): (function, types, *value types), or (function,) for no parameters."""
    tf = type(f)
    if tf is CUfunction:
        fv = f._cell.value
    elif tf is int:
        fv = f
    else:
        return None
    if type(kernel_params) is tuple:
        if len(kernel_params) != 2:
            return None
        values, types = kernel_params
        if type(values) is not tuple or type(types) is not tuple:
            return None
        return (fv, types, *map(type, values))
    if kernel_params is None or (type(kernel_params) is int and kernel_params == 0):
        return (fv,)
    return None


def _no_params() -> bytes:
    return b""


def _plain_pointer(value_type: type) -> bool:
    """A value type that struct packs as its handle value (or itself) in a `Q` slot."""
    if value_type is int:
        return True
    return issubclass(value_type, Handle) and value_type.__index__ is Handle.__index__


def template_for(
    layout: ParamLayout, types: tuple[Any, ...], value_types: tuple[type, ...]
) -> tuple[Packer, int] | None:
    """(pack(*values) -> the params opaque with its XDR padding, params length), or None where
    these types need the general path."""
    if len(types) != len(layout) or len(value_types) != len(layout):
        return None
    try:
        plan = _plan(layout, types)
    except TypeError:  # an unhashable or odd ctypes type: the general path names it
        return None
    if plan is None:
        return None
    packer, pointers = plan
    for pointer, value_type in zip(pointers, value_types, strict=True):
        if not (_plain_pointer(value_type) if pointer else value_type in _SCALAR_VALUES):
            return None
    size = packer.size
    whole = struct.Struct(packer.format + "x" * (-size & 3))
    return whole.pack, size


class LaunchTemplates:
    """One connection's templates: `pack(key, ...)` or None, `add` after a general packing."""

    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[tuple[Any, ...], tuple[Packer, int]] = {}

    def __len__(self) -> int:
        return len(self._table)

    def clear(self) -> None:
        self._table.clear()

    def add(self, key: tuple[Any, ...], layout: ParamLayout, types: tuple[Any, ...] = ()) -> None:
        """Keep a template for `key` (from `launch_key`) if its types allow one."""
        try:
            if key in self._table:
                return
        except TypeError:  # an unhashable type in kernelParams: always the general path
            return
        if len(key) == 1:  # no parameters: only for a function that takes none
            found: tuple[Packer, int] | None = None if layout else (_no_params, 0)
        else:
            found = template_for(layout, types, key[2:])
        if found is None:
            return
        if len(self._table) >= MAX_TEMPLATES:
            self._table.clear()
        self._table[key] = found

    def body(
        self,
        key: tuple[Any, ...],
        gx: int,
        gy: int,
        gz: int,
        bx: int,
        by: int,
        bz: int,
        shared: int,
        stream: Any,
        values: tuple[Any, ...],
    ) -> bytes | None:
        """The launch_args encoding by the template of `key`, or None (no template, or values
        or launch dimensions the structs refuse: the general path decides)."""
        try:
            found = self._table.get(key)
        except TypeError:  # unhashable
            return None
        if found is None:
            return None
        ts = type(stream)
        if ts is int:
            sv = stream
        elif stream is None:
            sv = 0
        elif ts is CUstream:
            sv = stream.value
        else:
            return None
        if sv <= CU_STREAM_PER_THREAD:  # 0 and CU_STREAM_LEGACY: the legacy default stream
            sv = _WIRE_PER_THREAD if sv == CU_STREAM_PER_THREAD else 0 if sv >= 0 else sv
        pack, size = found
        try:
            if len(key) == 1:
                return _HEAD.pack(key[0], gx, gy, gz, bx, by, bz, shared, sv, 0)
            return _HEAD.pack(key[0], gx, gy, gz, bx, by, bz, shared, sv, size) + pack(*values)
        except (struct.error, TypeError):
            return None
