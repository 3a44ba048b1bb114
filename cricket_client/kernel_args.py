"""Kernel arguments: every form cuda-python's cuLaunchKernel accepts, packed into one buffer (D5).

The layout (each parameter's offset and size) comes from the server's CU_FUNC_GET_PARAM_INFO;
parameter i occupies `buffer[offset_i : offset_i + size_i]`. Accepted forms:

| kernelParams | meaning |
| --- | --- |
| `None` / `0` | no parameters (or all of them in `extra`) |
| `((values...), (types...))` | a ctypes type per value; `None` for a handle/pointer-like value |
| an int | the address of a `void*[]` array, one pointer to each parameter's bytes |
| a buffer (numpy array of addresses) | the same array given as a buffer |

`extra` is 0/None or the address (or buffer) of a `void*[]` list of CU_LAUNCH_PARAM_BUFFER_POINTER,
ptr, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END: the packed buffer itself.
Mistakes raise `LaunchArgumentError` (answered CUDA_ERROR_INVALID_VALUE) naming the function;
a value whose size differs from the parameter's is such a mistake (cuda-python would pass it
silently truncated or padded). One deliberate difference: a handle given with type
`ctypes.c_void_p` travels as its value (cuda-python would pass the address of its host cell,
which means nothing on the server's GPU).
"""

from __future__ import annotations

import ctypes
import enum
import struct
from collections.abc import Sequence
from typing import Any

from ._types import Handle

__all__ = ["LaunchArgumentError", "LaunchName", "ParamLayout", "pack_kernel_params"]

CU_LAUNCH_PARAM_END = 0
CU_LAUNCH_PARAM_BUFFER_POINTER = 1
CU_LAUNCH_PARAM_BUFFER_SIZE = 2

ParamLayout = Sequence[tuple[int, int]]  # (offset, size) per parameter

_SCALAR_TYPES = (
    ctypes.c_bool,
    ctypes.c_char,
    ctypes.c_wchar,
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
)


# ctypes scalar -> struct code, for the precompiled packing of `((values), (types))`
_STRUCT_CODES: dict[Any, str] = {
    ctypes.c_bool: "?",
    ctypes.c_byte: "b",
    ctypes.c_ubyte: "B",
    ctypes.c_short: "h",
    ctypes.c_ushort: "H",
    ctypes.c_int: "i",
    ctypes.c_uint: "I",
    ctypes.c_long: "q" if ctypes.sizeof(ctypes.c_long) == 8 else "i",
    ctypes.c_ulong: "Q" if ctypes.sizeof(ctypes.c_long) == 8 else "I",
    ctypes.c_longlong: "q",
    ctypes.c_ulonglong: "Q",
    ctypes.c_size_t: "Q" if ctypes.sizeof(ctypes.c_size_t) == 8 else "I",
    ctypes.c_float: "f",
    ctypes.c_double: "d",
}
_SCALAR_VALUES = (int, float)
# (layout, types) -> (one struct for the whole buffer, whether each slot is pointer-like), or
# None where the slow path must pack (structures, sizes that differ, overlapping parameters)
_PLANS: dict[tuple[Any, Any], tuple[struct.Struct, tuple[bool, ...]] | None] = {}


class LaunchArgumentError(ValueError):
    """Kernel arguments that do not match the function's parameters."""


def _buffer_size(layout: ParamLayout) -> int:
    return max((off + size for off, size in layout), default=0)


def _int_bytes(value: int, size: int, where: str) -> bytes:
    try:
        return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    except (OverflowError, ValueError):
        raise LaunchArgumentError(f"{where}: cannot store {value} in {size} bytes") from None


def _pointer_like_bytes(value: Any, size: int, where: str) -> bytes:
    """A value given with type None: a handle, a ctypes Structure, an enum or an int."""
    if isinstance(value, ctypes.Structure):
        raw = bytes(value)
        if len(raw) != size:
            raise LaunchArgumentError(f"{where} is {size} bytes, got a {len(raw)}-byte structure")
        return raw
    if isinstance(value, enum.Enum | Handle | int) or hasattr(value, "getPtr"):
        return _int_bytes(int(value), size, where)
    if hasattr(value, "__index__"):  # numpy integers
        return _int_bytes(value.__index__(), size, where)
    raise TypeError(
        f"{where}: provided argument is of type {type(value).__name__} but expected a "
        "ctypes.Structure, an int or a CUDA handle with getPtr()"
    )


def _typed_bytes(value: Any, ctype: Any, size: int, where: str) -> bytes:
    if ctype is ctypes.c_void_p:
        if isinstance(value, ctypes.c_void_p):
            ival = value.value or 0
        elif value is None:
            ival = 0
        else:
            ival = int(value)
        raw = _int_bytes(ival, 8, where)
    elif ctype in _SCALAR_TYPES or (isinstance(ctype, type) and issubclass(ctype, ctypes.Structure)):
        if ctype is ctypes.c_double and isinstance(value, ctypes.c_float):
            value = value.value
        cval = value if isinstance(value, ctype) else ctype(value)
        raw = bytes(cval)
    else:
        raise TypeError(f"{where}: unsupported type {ctype!r}")
    if len(raw) != size:
        name = getattr(ctype, "__name__", repr(ctype))
        raise LaunchArgumentError(f"{where} is {size} bytes, got {name} ({len(raw)} bytes)")
    return raw


def _read_pointer_array(kernel_params: Any, count: int, func: object) -> list[int]:
    if isinstance(kernel_params, int):
        if kernel_params == 0:
            raise LaunchArgumentError(f"{func} takes {count} parameters, got none")
        arr = (ctypes.c_uint64 * count).from_address(kernel_params)
        return [int(p) for p in arr]
    view = memoryview(kernel_params).cast("B")
    have = view.nbytes // 8
    if have != count:
        raise LaunchArgumentError(f"{func} takes {count} parameters, got {have}")
    return list(struct.unpack(f"<{count}Q", view[: 8 * count]))


def _read_extra(extra: Any, need: int, func: object) -> bytes:
    if isinstance(extra, int):
        def word(i: int) -> int:
            return int(ctypes.c_uint64.from_address(extra + 8 * i).value)
    else:
        view = memoryview(extra).cast("B")
        words = struct.unpack(f"<{view.nbytes // 8}Q", view[: view.nbytes // 8 * 8])

        def word(i: int) -> int:
            if i >= len(words):
                raise LaunchArgumentError(f"{func}: extra is not terminated by CU_LAUNCH_PARAM_END")
            return int(words[i])

    ptr = size = None
    i = 0
    while True:
        key = word(i)
        if key == CU_LAUNCH_PARAM_END:
            break
        if key == CU_LAUNCH_PARAM_BUFFER_POINTER:
            ptr = word(i + 1)
        elif key == CU_LAUNCH_PARAM_BUFFER_SIZE:
            size = int(ctypes.c_size_t.from_address(word(i + 1)).value)
        else:
            raise LaunchArgumentError(f"{func}: unknown key {key:#x} in extra")
        i += 2
    if ptr is None or size is None:
        raise LaunchArgumentError(
            f"{func}: extra needs CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE"
        )
    if size < need:
        raise LaunchArgumentError(f"{func}: extra's buffer has {size} bytes, parameters need {need}")
    return ctypes.string_at(ptr, need) if need else b""


def _plan(layout: ParamLayout, types: tuple[Any, ...]) -> tuple[struct.Struct, tuple[bool, ...]] | None:
    """One struct packing every parameter at its offset, when each is a plain scalar (or a
    pointer-like value of 8 bytes) of exactly its parameter's size."""
    fmt, at, pointers = ["<"], 0, []
    for (off, size), ctype in zip(layout, types, strict=True):
        code = "Q" if ctype is None else _STRUCT_CODES.get(ctype)
        if code is None or off < at or struct.calcsize("<" + code) != size:
            return None
        fmt.append(f"{off - at}x{code}" if off > at else code)
        at = off + size
        pointers.append(ctype is None)
    return struct.Struct("".join(fmt) + f"{_buffer_size(layout) - at}x"), tuple(pointers)


def _pack_planned(layout: ParamLayout, values: tuple[Any, ...], types: tuple[Any, ...]) -> bytes | None:
    """The buffer by the cached plan of (layout, types); None where the general path must
    pack (or name the mistake): values of other types, out of range, or no plan."""
    key = (layout, types)
    try:
        plan = _PLANS[key]
    except KeyError:
        plan = _PLANS[key] = _plan(layout, types)
    except TypeError:  # unhashable layout
        return None
    if plan is None:
        return None
    packer, pointers = plan
    items = list(values)
    for i, pointer in enumerate(pointers):
        value = items[i]
        if pointer:
            if isinstance(value, Handle):
                items[i] = value.value
            elif type(value) is not int:
                return None
        elif type(value) not in _SCALAR_VALUES:
            return None
    try:
        return packer.pack(*items)
    except (struct.error, OverflowError):
        return None  # the general path wraps or refuses like ctypes


class LaunchName:
    """"cuLaunchKernel: function 0x12" for error messages, formatted only when one is raised."""

    __slots__ = ("call", "func")

    def __init__(self, call: str, func: int) -> None:
        self.call = call
        self.func = func

    def __str__(self) -> str:
        return f"{self.call}: function {self.func:#x}"


def pack_kernel_params(
    func: str | LaunchName, layout: ParamLayout, kernel_params: Any, extra: Any = None
) -> bytes:
    """The packed argument buffer for a launch of the function named `func` (for errors)."""
    count = len(layout)
    has_params = kernel_params is not None and not (
        isinstance(kernel_params, int) and kernel_params == 0
    )
    has_extra = extra is not None and not (isinstance(extra, int) and extra == 0)
    if has_params and has_extra:
        raise LaunchArgumentError(f"{func}: kernelParams and extra are both given")
    if has_extra:
        return _read_extra(extra, _buffer_size(layout), func)
    if not has_params:
        if count:
            raise LaunchArgumentError(f"{func} takes {count} parameters, got none")
        return b""

    if isinstance(kernel_params, tuple):
        if not (
            len(kernel_params) == 2
            and isinstance(kernel_params[0], tuple)
            and isinstance(kernel_params[1], tuple)
        ):
            raise TypeError(
                "Argument 'kernelParams' is not a valid type: tuple[tuple[Any, ...], "
                "tuple[Any, ...]] or an object with the buffer protocol or an int"
            )
        values, types = kernel_params
        if len(values) != len(types):
            raise TypeError("Argument 'kernelParams' has tuples with different length")
        if len(values) != count:
            raise LaunchArgumentError(f"{func} takes {count} parameters, got {len(values)}")
        packed = _pack_planned(layout, values, types)
        if packed is not None:
            return packed
        buf = bytearray(_buffer_size(layout))
        for i, ((off, size), value, ctype) in enumerate(zip(layout, values, types, strict=True)):
            where = f"{func} parameter {i}"
            raw = (
                _pointer_like_bytes(value, size, where)
                if ctype is None
                else _typed_bytes(value, ctype, size, where)
            )
            buf[off : off + size] = raw
        return bytes(buf)

    if not isinstance(kernel_params, int):
        try:
            memoryview(kernel_params)
        except TypeError:
            raise TypeError(
                "Argument 'kernelParams' is not a valid type: tuple[tuple[Any, ...], "
                f"tuple[Any, ...]] or an object with the buffer protocol or an int, got "
                f"{type(kernel_params).__name__}"
            ) from None
    buf = bytearray(_buffer_size(layout))
    for i, ((off, size), ptr) in enumerate(
        zip(layout, _read_pointer_array(kernel_params, count, func), strict=True)
    ):
        if ptr == 0 and size:
            raise LaunchArgumentError(f"{func} parameter {i}: NULL pointer in kernelParams")
        buf[off : off + size] = ctypes.string_at(ptr, size)
    return bytes(buf)
