"""The memory calls of a session: allocation, copies, memset, address queries.

Every address is checked against the session's own ranges (`SessionMemory.span`) before the
backend sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    CudaError,
)
from cricket_server.memory import ALLOC_ALIGNMENT
from cricket_server.session_core import STREAM_LEGACY, SessionCore
from cricket_server.session_memory import Span

log = logging.getLogger("cricket_server.session")

PITCH_ALIGNMENT = 512  # cuMemAllocPitch pitches are multiples of this on recent GPUs


class SessionMemoryCalls(SessionCore):
    """cuMemAlloc*, cuMemFree*, cuMemcpy*, cuMemset*, cuMemGet*, cuPointerGetAttributes."""

    def find(self, addr: int) -> Span | None:
        """The owned range containing `addr`: an allocation or a module global."""
        return self.memory.find(addr)

    def _alloc(self, call: str, size: int, align: int = ALLOC_ALIGNMENT) -> int:
        ctx = self.current(call)
        return self.memory.alloc(call, size, ctx.dev, ctx.handle, align)

    def mem_alloc(self, size: int) -> int:
        return self._alloc("cuMemAlloc", size)

    def mem_alloc_pitch(self, width: int, height: int, element_size: int) -> tuple[int, int]:
        call = "cuMemAllocPitch"
        self.current(call)
        if element_size not in (4, 8, 16):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: element size must be 4, 8 or 16, got {element_size}",
            )
        if width <= 0 or height <= 0:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: width {width} and height {height} must be > 0"
            )
        pitch = -(-width // PITCH_ALIGNMENT) * PITCH_ALIGNMENT
        return self._alloc(call, pitch * height, PITCH_ALIGNMENT), pitch

    def mem_free(self, ptr: int) -> None:
        call = "cuMemFree"
        self.require_init(call)
        if ptr == 0:  # free(NULL): CUDA answers success (the runtime's cudaFree(0) idiom)
            return
        alloc = self.memory.allocation(ptr)
        if alloc is not None:
            with self._on_device(alloc.dev):
                self.bsession.synchronize()  # cuMemFree waits for the work that may use it
        self.memory.free(call, ptr)

    def mem_get_info(self) -> tuple[int, int]:
        self.current("cuMemGetInfo")
        return self.bsession.mem_get_info()

    def mem_get_address_range(self, ptr: int) -> tuple[int, int]:
        call = "cuMemGetAddressRange"
        self.require_init(call)
        found = self.memory.find(ptr)
        if found is None:  # local CUDA: NOT_FOUND for an address outside every allocation
            message = f"{call}: {ptr:#x} is not inside any allocation of this session"
            log.warning("session %#x: %s", self.id, message)
            raise CudaError(CUDA_ERROR_NOT_FOUND, message)
        return found.base, found.size

    def memcpy_htod(self, dst: int, data: memoryview, stream: int | None = None) -> None:
        call = "cuMemcpyHtoD" if stream is None else "cuMemcpyHtoDAsync"
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if len(data):
            self.memory.span(call, dst, len(data))
            self.bsession.memcpy_htod(dst, data, obj)

    def memcpy_dtoh(self, src: int, size: int, stream: int | None = None) -> bytes | memoryview:
        call = "cuMemcpyDtoH" if stream is None else "cuMemcpyDtoHAsync"
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if size == 0:
            return b""
        self.memory.span(call, src, size)
        return self.bsession.memcpy_dtoh(src, size, obj)

    def memcpy_dtod(self, dst: int, src: int, size: int, stream: int | None = None) -> None:
        call = "cuMemcpyDtoD" if stream is None else "cuMemcpyDtoDAsync"
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if size:
            self.memory.span(call, src, size)
            self.memory.span(call, dst, size)
            self.bsession.memcpy_dtod(dst, src, size, obj)

    def memset(
        self, dst: int, value: int, width: int, count: int, stream: int | None = None
    ) -> None:
        call = f"cuMemsetD{width * 8}" + ("" if stream is None else "Async")
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if width not in (1, 2, 4):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuMemset: element width must be 1, 2 or 4, got {width}"
            )
        if dst % width:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {dst:#x} is not {width}-byte aligned"
            )
        if count:
            self.memory.span(call, dst, width * count)
            self.bsession.memset(dst, value & ((1 << (8 * width)) - 1), width, count, obj)

    def pointer_attributes(self, attributes: Sequence[int], ptr: int) -> list[tuple[int, int, int]]:
        self.require_init("cuPointerGetAttributes")
        return self.memory.pointer_attributes(attributes, ptr)
