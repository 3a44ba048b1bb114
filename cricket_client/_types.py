"""Handle types that behave like cuda.bindings.driver's (CUdevice, CUdeviceptr, CUstream, ...).

Each holds its value in a small ctypes cell, so `getPtr()` returns a real address of the value
as cuda-python's does (kernel arguments given as `(handle, None)` are read through it).
`int(h)` gives the value; handles are equal when their class and value are, and hashable;
like cuda-python's, every handle is true (even a NULL one): compare `int(h)` with 0.
Contexts, modules, functions, libraries, kernels, streams and events carry server-issued IDs;
device pointers carry real device addresses on the server's GPU (D4).
"""

from __future__ import annotations

import ctypes
from typing import Any, ClassVar

__all__ = [
    "Handle",
    "CUdevice",
    "CUdeviceptr",
    "CUcontext",
    "CUmodule",
    "CUfunction",
    "CUkernel",
    "CUlibrary",
    "CUstream",
    "CUevent",
    "CUuuid",
    "as_int",
]


def as_int(value: Any) -> int:
    """The integer value of a handle, an int, None (0) or an IntEnum."""
    if type(value) is int:  # the native door's arguments: the common case first
        return value
    if value is None:
        return 0
    if isinstance(value, Handle):
        return value.value
    if isinstance(value, ctypes.c_void_p):
        return value.value or 0
    return int(value)


class Handle:
    """Base of the handle types: an unsigned 64-bit value (a signed int for CUdevice)."""

    _ctype: ClassVar[type] = ctypes.c_uint64
    _hex: ClassVar[bool] = True

    __slots__ = ("_cell",)

    def __init__(self, init_value: Any = 0) -> None:
        value = as_int(init_value)
        if self._ctype is ctypes.c_uint64 and not 0 <= value < 1 << 64:
            raise OverflowError(f"{type(self).__name__}: {value} does not fit in 64 unsigned bits")
        self._cell = self._ctype(value)

    @property
    def value(self) -> int:
        return int(self._cell.value)

    def getPtr(self) -> int:
        """The address of the cell holding the value."""
        return ctypes.addressof(self._cell)

    def __int__(self) -> int:
        return self._cell.value  # type: ignore[no-any-return]  # (`value` without a frame)

    __index__ = __int__

    def __repr__(self) -> str:
        shown = hex(self.value) if self._hex else str(self.value)
        return f"<{type(self).__name__} {shown}>"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Handle):
            return type(other) is type(self) and other.value == self.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.value))


class CUdevice(Handle):
    _ctype = ctypes.c_int
    _hex = False
    __slots__ = ()


class CUdeviceptr(Handle):
    _hex = False
    __slots__ = ()


class CUcontext(Handle):
    __slots__ = ()


class CUmodule(Handle):
    __slots__ = ()


class CUfunction(Handle):
    __slots__ = ()


class CUkernel(Handle):
    __slots__ = ()


class CUlibrary(Handle):
    __slots__ = ()


class CUstream(Handle):
    __slots__ = ()


class CUevent(Handle):
    __slots__ = ()


class CUuuid:
    """A device UUID: 16 bytes in `.bytes`."""

    __slots__ = ("_cell",)

    def __init__(self, data: bytes = bytes(16)) -> None:
        if len(data) != 16:
            raise ValueError(f"CUuuid: expected 16 bytes, got {len(data)}")
        self._cell = (ctypes.c_char * 16).from_buffer_copy(data)

    @property
    def bytes(self) -> bytes:
        return bytes(self._cell.raw)

    def getPtr(self) -> int:
        return ctypes.addressof(self._cell)

    def __repr__(self) -> str:
        return f"bytes : {self.bytes.hex()}"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CUuuid) and other.bytes == self.bytes

    def __hash__(self) -> int:
        return hash(self.bytes)
