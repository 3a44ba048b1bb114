"""Kernel parameter layouts (cuFuncGetParamInfo) and the void*[] that cuLaunchKernel takes.

The client sends a kernel's arguments as one packed buffer laid out as the device sees them
(D5). cuLaunchKernel wants an array of pointers, one a parameter. Each function gets one
`ParamBuffer`, made on its first launch: parameter memory and a pointer array into it, reused
by every later launch (the driver copies the parameters during the launch call, so the next
launch may overwrite them), so a launch costs one copy of its packed bytes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from ..base import CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS, CudaError, ParamInfo
from ._driver import driver, error_text

__all__ = ["ParamBuffer", "ParamLayouts"]

_MAX_PARAMS = 1 << 15  # a kernel's parameters fit in 32 KiB, so no more than this


class ParamLayouts:
    """Parameter layouts and parameter buffers per function handle, asked of the driver once.

    Forget them (`clear`) when a module or library is unloaded: the driver may reuse the
    handle values of its functions."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[ParamInfo, ...]] = {}
        self._buffers: dict[int, ParamBuffer] = {}

    def get(self, func: object) -> tuple[ParamInfo, ...]:
        key = int(func)  # type: ignore[call-overload]
        layout = self._cache.get(key)
        if layout is None:
            layout = self._cache[key] = _query(func)
        return layout

    def buffer(self, func: object) -> ParamBuffer:
        """The function's reusable parameter buffer."""
        key = int(func)  # type: ignore[call-overload]
        found = self._buffers.get(key)
        if found is None:
            found = self._buffers[key] = ParamBuffer(self.get(func), key)
        return found

    def clear(self) -> None:
        self._cache.clear()
        self._buffers.clear()


def _query(func: object) -> tuple[ParamInfo, ...]:
    infos: list[ParamInfo] = []
    for index in range(_MAX_PARAMS):
        err, offset, size = driver.cuFuncGetParamInfo(func, index)
        if err == CUDA_ERROR_INVALID_VALUE:  # index past the last parameter
            break
        if err != CUDA_SUCCESS:
            code = int(err)
            raise CudaError(
                code,
                f"cuFuncGetParamInfo (function {int(func):#x}, parameter {index}): "  # type: ignore[call-overload]
                f"{error_text(code)}",
            )
        infos.append(ParamInfo(int(offset), int(size)))
    return tuple(infos)


class ParamBuffer:
    """One function's parameter memory and the void*[] pointing into it (see the module doc);
    used by one session under its lock, one launch at a time."""

    __slots__ = (
        "size", "count", "func", "_data", "_view", "_memory", "_pointers", "address", "data_address"
    )  # fmt: skip

    def __init__(self, layout: Sequence[ParamInfo], func: int) -> None:
        self.size = max((p.offset + p.size for p in layout), default=0)
        self.count = len(layout)
        self.func = func
        self._data = bytearray(self.size)
        self._view = memoryview(self._data)
        self._memory: ctypes.Array[ctypes.c_char] | None = None
        self._pointers: ctypes.Array[ctypes.c_void_p] | None = None
        self.address = 0  # the void** to pass as kernelParams (0: no parameters)
        self.data_address = 0  # where the parameters' bytes go (0: no parameters)
        if layout:
            self._memory = (ctypes.c_char * max(self.size, 1)).from_buffer(self._data)
            base = self.data_address = ctypes.addressof(self._memory)
            self._pointers = (ctypes.c_void_p * len(layout))(*(base + p.offset for p in layout))
            self.address = ctypes.addressof(self._pointers)

    def fill(self, params: memoryview) -> int:
        """Copy a launch's packed parameters in; returns the kernelParams address."""
        size = self.size
        if size:
            if len(params) < size:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"cuLaunchKernel: function {self.func:#x} has {self.count} parameters "
                    f"in {size} bytes, got {len(params)} bytes",
                )
            self._view[:] = params[:size]
        return self.address
