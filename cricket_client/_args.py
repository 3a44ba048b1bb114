"""Argument conversion as cuda-python does it, before anything is sent.

cuda-python's functions convert each numeric argument to its C type (Cython): an int or any
object with `__int__` (a float is truncated, as there), nothing else (`TypeError`), and a value
outside the C type's range raises `OverflowError`. The driver and runtime mirrors call these
instead of `int()`, so `cuMemcpyHtoD(p, buf, -1)` raises OverflowError as locally, instead of
copying `len(buf) - 1` bytes, and `cuMemAlloc("8")` raises TypeError. The messages name the
call and the parameter.

| helper    | C type           | range              |
| --------- | ---------------- | ------------------ |
| `size_t`  | size_t           | 0 .. 2**64 - 1     |
| `u64`     | unsigned long long | 0 .. 2**64 - 1   |
| `uint`    | unsigned int     | 0 .. 2**32 - 1     |
| `ushort`  | unsigned short   | 0 .. 2**16 - 1     |
| `uchar`   | unsigned char    | 0 .. 255           |
| `c_int`   | int              | -2**31 .. 2**31 - 1 |
"""

from __future__ import annotations

from typing import Any

__all__ = ["integer", "size_t", "u64", "uint", "ushort", "uchar", "c_int", "unsigned"]


def integer(value: Any, what: str) -> int:
    """`value` as a Python int the way Cython takes it: ints, `__int__` (truncating), else
    TypeError."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str | bytes | bytearray) or not hasattr(type(value), "__int__"):
        raise TypeError(f"{what}: an integer is required, got {type(value).__name__}")
    return int(value)


def _unsigned(value: Any, bits: int, ctype: str, what: str) -> int:
    number = integer(value, what)
    if number < 0:
        raise OverflowError(f"{what}: can't convert negative value {number} to {ctype}")
    if number >> bits:
        raise OverflowError(f"{what}: value {number} too large to convert to {ctype}")
    return number


def size_t(value: Any, what: str) -> int:
    return _unsigned(value, 64, "size_t", what)


def u64(value: Any, what: str) -> int:
    return _unsigned(value, 64, "unsigned long long", what)


def uint(value: Any, what: str) -> int:
    return _unsigned(value, 32, "unsigned int", what)


def ushort(value: Any, what: str) -> int:
    return _unsigned(value, 16, "unsigned short", what)


def uchar(value: Any, what: str) -> int:
    return _unsigned(value, 8, "unsigned char", what)


def unsigned(value: Any, width: int, what: str) -> int:
    """An unsigned value of `width` bytes (1, 2 or 4: cuMemsetD8/D16/D32's value)."""
    ctype = {1: "unsigned char", 2: "unsigned short"}.get(width, "unsigned int")
    return _unsigned(value, 8 * width, ctype, what)


def c_int(value: Any, what: str) -> int:
    number = integer(value, what)
    if not -(1 << 31) <= number < 1 << 31:
        raise OverflowError(f"{what}: value {number} too large to convert to int")
    return number
