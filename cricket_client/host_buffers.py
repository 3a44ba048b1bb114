"""Host memory in copies: every form cuda-python accepts for a host pointer.

A host buffer is an object with the buffer protocol (numpy arrays, bytes, bytearray,
memoryview, ctypes arrays, ...) or an integer host address (read and written through ctypes).
Reads hand back a memoryview when the source is a buffer (no copy); writes go into the
caller's memory in place.
"""

from __future__ import annotations

import ctypes
from typing import Any

__all__ = [
    "HostBufferError",
    "read_host",
    "write_host",
    "check_writable",
    "writable_view",
    "host_address",
]


class HostBufferError(TypeError):
    """A host argument that is neither a buffer nor an address, or is too small."""


def _byte_view(obj: Any, what: str) -> memoryview:
    try:
        view = memoryview(obj)
    except TypeError:
        raise HostBufferError(
            f"{what}: expected an integer host address or an object with the buffer protocol, "
            f"got {type(obj).__name__}"
        ) from None
    if not view.contiguous:
        raise HostBufferError(f"{what}: the host buffer is not contiguous")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def host_address(obj: Any) -> int | None:
    """The integer address a host argument denotes, or None when it is a buffer object."""
    if isinstance(obj, ctypes.c_void_p):
        return obj.value or 0
    if isinstance(obj, int):
        return int(obj)
    return None


def read_host(src: Any, nbytes: int, what: str) -> memoryview | bytes:
    """`nbytes` bytes of host memory at `src` (a buffer or an integer address)."""
    if nbytes == 0:
        return b""
    addr = host_address(src)
    if addr is not None:
        if addr == 0:
            raise HostBufferError(f"{what}: NULL host pointer")
        return ctypes.string_at(addr, nbytes)
    view = _byte_view(src, what)
    if view.nbytes < nbytes:
        raise HostBufferError(f"{what}: host buffer holds {view.nbytes} bytes, {nbytes} asked for")
    return view[:nbytes]


def _bytes_address(obj: bytes) -> int:
    """Address of an immutable bytes object's storage (cuda-python writes into it too)."""
    return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value or 0


def write_host(dst: Any, data: bytes | memoryview, what: str, offset: int = 0) -> None:
    """Write `data` into host memory `dst` at byte `offset`, in place."""
    n = len(data)
    if n == 0:
        return
    addr = host_address(dst)
    if addr is None and isinstance(dst, bytes):
        if len(dst) < offset + n:
            raise HostBufferError(
                f"{what}: host buffer holds {len(dst)} bytes, {offset + n} needed"
            )
        addr = _bytes_address(dst)
    if addr is not None:
        if addr == 0:
            raise HostBufferError(f"{what}: NULL host pointer")
        ctypes.memmove(addr + offset, bytes(data) if isinstance(data, memoryview) else data, n)
        return
    view = _byte_view(dst, what)
    if view.readonly:
        raise HostBufferError(f"{what}: the host buffer is read-only")
    if view.nbytes < offset + n:
        raise HostBufferError(f"{what}: host buffer holds {view.nbytes} bytes, {offset + n} needed")
    view[offset : offset + n] = data


def check_writable(dst: Any, nbytes: int, what: str) -> None:
    """Refuse, before any data moves, a destination that cannot take `nbytes` bytes."""
    if nbytes == 0:
        return
    addr = host_address(dst)
    if addr is not None:
        if addr == 0:
            raise HostBufferError(f"{what}: NULL host pointer")
        return
    size = len(dst) if isinstance(dst, bytes) else _byte_view(dst, what).nbytes
    if not isinstance(dst, bytes) and memoryview(dst).readonly:
        raise HostBufferError(f"{what}: the host buffer is read-only")
    if size < nbytes:
        raise HostBufferError(f"{what}: host buffer holds {size} bytes, {nbytes} needed")


def writable_view(dst: Any, nbytes: int, what: str) -> memoryview:
    """A writable byte view of the first `nbytes` bytes of host memory `dst` (a buffer, an
    immutable bytes object, written in place as cuda-python does, or an integer address), so
    that received data lands there without a copy. Checks as `check_writable`."""
    if nbytes == 0:
        return memoryview(bytearray())
    addr = host_address(dst)
    if addr is None and isinstance(dst, bytes):
        if len(dst) < nbytes:
            raise HostBufferError(f"{what}: host buffer holds {len(dst)} bytes, {nbytes} needed")
        addr = _bytes_address(dst)
    elif addr == 0:
        raise HostBufferError(f"{what}: NULL host pointer")
    if addr is not None:
        return memoryview((ctypes.c_ubyte * nbytes).from_address(addr)).cast("B")
    view = _byte_view(dst, what)  # one view for the checks and the result
    if view.readonly:
        raise HostBufferError(f"{what}: the host buffer is read-only")
    if view.nbytes < nbytes:
        raise HostBufferError(f"{what}: host buffer holds {view.nbytes} bytes, {nbytes} needed")
    return view[:nbytes]
