"""Reusable pinned host buffers for copies between client bytes and device memory.

Copies from pinned memory run at full DMA speed and may be asynchronous; copies from pageable
memory run at a fraction of it, and an asynchronous one would need its source kept unchanged
until the stream reaches it. So host-to-device bytes are first copied into a pinned buffer,
and an event recorded after the device copy marks when that buffer may be reused.

Buffers are per context (their events are), grow on demand up to `limit` bytes in all, and
are released by `close()`. A copy larger than `limit` is not staged (the caller copies from
pageable memory and waits).

Device-to-host bytes stay in their pinned buffer: `lend()` gives a read-only view of it (the
reply is written from there, no copy), and the buffer is not used again while any view of it
is alive.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass

from ..base import CUDA_ERROR_NOT_READY, CUDA_SUCCESS, CudaError
from ._driver import call, driver, error_text

__all__ = ["PinnedBuffer", "PinnedStager"]

_MIN_BUFFER = 1 << 20


@dataclass
class PinnedBuffer:
    address: int
    capacity: int
    event: object | None = None  # recorded after the last asynchronous copy that reads it
    pending: bool = False
    lent: object | None = None  # the ctypes array behind the views `lend()` gave

    def view(self, size: int) -> memoryview:
        """A writable view of the first `size` bytes."""
        return memoryview((ctypes.c_ubyte * size).from_address(self.address)).cast("B")


class PinnedStager:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffers: list[PinnedBuffer] = []
        self._total = 0

    def fits(self, size: int) -> bool:
        return 0 < size <= self.limit

    def acquire(self, size: int) -> PinnedBuffer | None:
        """A buffer of at least `size` (<= limit) bytes that no pending copy reads and nobody
        views; the caller's context must be current. Waits for a pending copy only when the
        pool is full; None when every buffer that could serve is lent out."""
        for buf in self._buffers:
            if buf.capacity >= size and not self._lent(buf) and self._idle(buf):
                return buf
        capacity = min(max(_MIN_BUFFER, 1 << (size - 1).bit_length()), self.limit)
        if self._total + capacity > self.limit:
            busy = [b for b in self._buffers if b.capacity >= size and not self._lent(b)]
            if busy:  # the pool is full: wait for a copy that reads a large enough buffer
                return self._wait(min(busy, key=lambda b: b.capacity))
        while self._total + capacity > self.limit:
            candidate = self._evict_candidate()
            if candidate is None:
                return None
            self._free(candidate)
        return self._allocate(capacity)

    def lend(self, buf: PinnedBuffer, size: int) -> memoryview:
        """A read-only view of the first `size` bytes of `buf`; `buf` is not handed out again
        while a view of it is alive."""
        array = (ctypes.c_ubyte * size).from_address(buf.address)
        buf.lent = array
        return memoryview(array).cast("B").toreadonly()

    def mark_pending(self, buf: PinnedBuffer, stream: object) -> None:
        """Record that an asynchronous copy on `stream` reads `buf`."""
        if buf.event is None:
            flags = int(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
            buf.event = call(driver.cuEventCreate, flags)
        call(driver.cuEventRecord, buf.event, stream)
        buf.pending = True

    def close(self) -> None:
        """Wait for pending copies, then free every buffer (the context must be current)."""
        while self._buffers:
            self._free(self._buffers[-1])

    @staticmethod
    def _lent(buf: PinnedBuffer) -> bool:
        """Whether a view `lend()` gave of `buf` is still alive."""
        if buf.lent is None:
            return False
        # References: buf.lent and getrefcount's argument; every live view adds one.
        if sys.getrefcount(buf.lent) > 2:
            return True
        buf.lent = None
        return False

    def _idle(self, buf: PinnedBuffer) -> bool:
        if buf.pending:
            (err,) = driver.cuEventQuery(buf.event)
            if err == CUDA_ERROR_NOT_READY:
                return False
            if err != CUDA_SUCCESS:
                code = int(err)
                raise CudaError(code, f"cuEventQuery (staging buffer): {error_text(code)}")
            buf.pending = False
        return True

    def _wait(self, buf: PinnedBuffer) -> PinnedBuffer:
        call(driver.cuEventSynchronize, buf.event, what="staging buffer")
        buf.pending = False
        return buf

    def _evict_candidate(self) -> PinnedBuffer | None:
        """The smallest buffer not lent out, preferring idle ones; None if all are lent."""
        free = [b for b in self._buffers if not self._lent(b)]
        idle = [b for b in free if not b.pending]
        return min(idle or free, key=lambda b: b.capacity) if free else None

    def _allocate(self, capacity: int) -> PinnedBuffer:
        flags = driver.CU_MEMHOSTALLOC_PORTABLE
        address = int(call(driver.cuMemHostAlloc, capacity, flags, what=f"{capacity} bytes"))
        buf = PinnedBuffer(address, capacity)
        self._buffers.append(buf)
        self._total += capacity
        return buf

    def _free(self, buf: PinnedBuffer) -> None:
        self._buffers.remove(buf)
        self._total -= buf.capacity
        try:
            if buf.pending:
                call(driver.cuEventSynchronize, buf.event)
        finally:
            if buf.event is not None:
                call(driver.cuEventDestroy, buf.event)
            call(driver.cuMemFreeHost, buf.address)
