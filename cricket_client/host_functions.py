"""Host functions and stream callbacks (cuLaunchHostFunc, cuStreamAddCallback and their
runtime forms): they run on the client, in stream order.

The function is the client's own code, so it cannot run on the server; and a server stream
cannot wait on the client without a round trip per function. So the call synchronizes the
stream (its earlier work is done: what CUDA promises at the function's start) and then runs
the function on the calling thread before it returns: work the program adds afterwards is
ordered after it, as CUDA orders work added after a host function. The price is that the call
waits for the stream; the native library (cricket_client.native.entries) does the same for C
programs. A host function in a stream under capture (a host node of the graph) is refused:
a graph launch on the server cannot stop for the client.

The function-pointer types take cuda-python's forms: `CUhostFn(address)`, or
`CUhostFn(_ptr=ADDRESS_OF_A_POINTER)` (cuda-python's samples pass
`ctypes.addressof(a_ctypes_callback)`), their int being the function's address.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ._types import Handle, as_int
from .host_buffers import host_address

__all__ = [
    "CUhostFn",
    "CUstreamCallback",
    "cudaHostFn_t",
    "cudaStreamCallback_t",
    "function_address",
    "user_data_address",
    "HOST_FN",
    "STREAM_CALLBACK",
]

HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*)(void *userData)
# void (*)(CUstream hStream, CUresult status, void *userData)
STREAM_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p)


class _FunctionPointer(Handle):
    """A C function pointer, as cuda-python's CUhostFn: its own cell, or `_ptr`'s memory."""

    __slots__ = ()

    def __init__(self, init_value: Any = 0, _ptr: int = 0) -> None:
        if _ptr:
            self._cell = ctypes.c_uint64.from_address(as_int(_ptr))
            if init_value:
                self._cell.value = as_int(init_value)
        else:
            super().__init__(init_value)


class CUhostFn(_FunctionPointer):
    __slots__ = ()


class CUstreamCallback(_FunctionPointer):
    __slots__ = ()


class cudaHostFn_t(_FunctionPointer):
    __slots__ = ()


class cudaStreamCallback_t(_FunctionPointer):
    __slots__ = ()


def function_address(fn: Any) -> int:
    """The address a function-pointer argument denotes (0: none)."""
    if fn is None:
        return 0
    if isinstance(fn, ctypes._CFuncPtr):  # type: ignore[attr-defined]  # a ctypes callback itself
        return ctypes.cast(fn, ctypes.c_void_p).value or 0
    return as_int(fn)


def user_data_address(data: Any) -> int:
    """`userData` as cuda-python takes it: an address, None, or a buffer (its address)."""
    if data is None:
        return 0
    address = host_address(data)
    if address is not None:
        return address
    if isinstance(data, bytes):  # its own storage, no copy
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
    view = memoryview(data)
    if view.readonly:
        raise TypeError(f"userData: a read-only {type(data).__name__} other than bytes has no address")
    return ctypes.addressof(ctypes.c_char.from_buffer(view))

