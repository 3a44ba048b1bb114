"""Kernel parameter layouts (cuFuncGetParamInfo) and the void*[] that cuLaunchKernel takes.

The client sends a kernel's arguments as one packed buffer laid out as the device sees them
(D5). cuLaunchKernel wants an array of pointers, one a parameter; `KernelParams` makes one
contiguous copy of the buffer and points each entry at its parameter's offset in it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from ..base import CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS, CudaError, ParamInfo
from ._driver import driver, error_text

__all__ = ["KernelParams", "ParamLayouts"]

_MAX_PARAMS = 1 << 15  # a kernel's parameters fit in 32 KiB, so no more than this


class ParamLayouts:
    """Parameter layouts per function handle, asked of the driver once.

    Forget them (`clear`) when a module or library is unloaded: the driver may reuse the
    handle values of its functions."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[ParamInfo, ...]] = {}

    def get(self, func: object) -> tuple[ParamInfo, ...]:
        key = int(func)  # type: ignore[call-overload]
        layout = self._cache.get(key)
        if layout is None:
            layout = self._cache[key] = _query(func)
        return layout

    def clear(self) -> None:
        self._cache.clear()


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


class KernelParams:
    """A void*[] for cuLaunchKernel over one copy of the packed buffer; keep it alive until
    the launch call returns (the driver copies the parameters during the call)."""

    def __init__(self, layout: Sequence[ParamInfo], params: memoryview, func: object) -> None:
        packed = memoryview(params).cast("B")
        needed = max((p.offset + p.size for p in layout), default=0)
        if len(packed) < needed:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuLaunchKernel: function {int(func):#x} has {len(layout)} parameters "  # type: ignore[call-overload]
                f"in {needed} bytes, got {len(packed)} bytes",
            )
        self._data: ctypes.Array[ctypes.c_char] | None = None
        self._pointers: ctypes.Array[ctypes.c_void_p] | None = None
        if layout:
            self._data = (ctypes.c_char * len(packed)).from_buffer_copy(packed)
            base = ctypes.addressof(self._data)
            self._pointers = (ctypes.c_void_p * len(layout))(*(base + p.offset for p in layout))

    @property
    def address(self) -> int:
        """The void** to pass as kernelParams (0 for a kernel without parameters)."""
        return 0 if self._pointers is None else ctypes.addressof(self._pointers)
