"""The device memory of one session: its heaps, its allocations, and what it may touch.

A session may touch only addresses inside its own allocations or inside the globals of its
own modules; a copy or memset must lie entirely inside one such range. `SessionMemory.span`
checks that and raises `CudaError(CUDA_ERROR_INVALID_VALUE)` otherwise (what local CUDA gives
for a bad pointer in cuMemcpy or cuMemFree), with a log line naming the session and address.

Allocations come from one `DeviceHeap` per device, over the process-wide `AddressArena`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_SUCCESS,
    CudaError,
)
from cricket_server.limits import memory_quota_error
from cricket_server.memory import ALLOC_ALIGNMENT, DeviceHeap

log = logging.getLogger("cricket_server.session")

# CUpointer_attribute values
PA_CONTEXT = 1
PA_MEMORY_TYPE = 2
PA_DEVICE_POINTER = 3
PA_HOST_POINTER = 4
PA_P2P_TOKENS = 5
PA_SYNC_MEMOPS = 6
PA_BUFFER_ID = 7
PA_IS_MANAGED = 8
PA_DEVICE_ORDINAL = 9
PA_IS_LEGACY_CUDA_IPC_CAPABLE = 10
PA_RANGE_START_ADDR = 11
PA_RANGE_SIZE = 12
PA_MAPPED = 13
PA_ALLOWED_HANDLE_TYPES = 14
PA_IS_GPU_DIRECT_RDMA_CAPABLE = 15
PA_ACCESS_FLAGS = 16
PA_MEMPOOL_HANDLE = 17
PA_MAPPING_SIZE = 18
PA_MAPPING_BASE_ADDR = 19
PA_MEMORY_BLOCK_ID = 20
_UNSUPPORTED = {
    PA_P2P_TOKENS,
    PA_MEMPOOL_HANDLE,
    PA_MAPPING_SIZE,
    PA_MAPPING_BASE_ADDR,
    PA_MEMORY_BLOCK_ID,
}
CU_MEMORYTYPE_DEVICE = 2
ACCESS_FLAG_READWRITE = 3


@dataclass
class Allocation:
    """One cuMemAlloc(Pitch/Async) of a session; `ctx` is the context it was made in."""

    ptr: int
    size: int
    dev: int
    ctx: int
    buffer_id: int


@dataclass(frozen=True)
class Span:
    """The owned range an address lies in: an allocation or a module global."""

    base: int
    size: int
    dev: int
    ctx: int
    buffer_id: int  # 0 for a module global


class SessionMemory:
    """Heaps and allocations of one session, and the owned-range checks."""

    def __init__(
        self,
        session_id: int,
        new_heap: Callable[[int], DeviceHeap],
        next_buffer_id: Callable[[], int],
        globals_: Callable[[], Iterable[Span]],
        quota: int | None = None,
    ) -> None:
        self._session_id = session_id
        self.quota = quota  # bytes this session may hold at once (--max-session-memory)
        self._new_heap = new_heap
        self._next_buffer_id = next_buffer_id
        self._globals = globals_
        self._heaps: dict[int, DeviceHeap] = {}
        self._allocs: dict[int, Allocation] = {}
        self.outside_heaps = 0  # bytes held outside the heaps (cuMemCreate), under the quota too
        self._retired: dict[int, Allocation] = {}  # freed in stream order, not yet given back

    def _refuse(self, message: str) -> CudaError:
        log.warning("session %#x: %s", self._session_id, message)
        return CudaError(CUDA_ERROR_INVALID_VALUE, message)

    # -- lookups ----------------------------------------------------------------------------
    def find(self, addr: int) -> Span | None:
        """The owned range containing `addr`, or None."""
        for dev, heap in self._heaps.items():
            found = heap.find(addr)
            if found is not None:
                base, size = found
                alloc = self._allocs.get(base)
                if alloc is None:  # retired: no longer the session's to touch
                    break
                return Span(base, size, dev, alloc.ctx, alloc.buffer_id)
        for span in self._globals():
            if span.base <= addr < span.base + max(span.size, 1):
                return span
        return None

    def span(self, call: str, addr: int, size: int) -> Span:
        """Check that [addr, addr+size) lies inside one owned range; return that range."""
        found = self.find(addr)
        if found is None:
            raise self._refuse(f"{call}: {addr:#x} is not inside any allocation of this session")
        if addr + size > found.base + found.size:
            raise self._refuse(
                f"{call}: [{addr:#x}, {addr + size:#x}) runs past the end of the allocation "
                f"[{found.base:#x}, {found.base + found.size:#x})"
            )
        return found

    def allocation(self, ptr: int) -> Allocation | None:
        """The allocation starting at `ptr`."""
        return self._allocs.get(ptr)

    def used(self) -> int:
        """Bytes of the session's allocations, retired ones too (what the quota counts)."""
        return sum(a.size for a in self._allocs.values()) + sum(
            a.size for a in self._retired.values()
        )

    def allocations(self) -> list[Allocation]:
        return list(self._allocs.values())

    def made_in(self, ctx: int) -> list[Allocation]:
        return [a for a in self._allocs.values() if a.ctx == ctx]

    # -- allocate and free ------------------------------------------------------------------
    def alloc(self, call: str, size: int, dev: int, ctx: int, align: int = ALLOC_ALIGNMENT) -> int:
        if size <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: size must be > 0, got {size}")
        self.check_quota(call, size)
        heap = self._heaps.get(dev)
        if heap is None:
            heap = self._heaps[dev] = self._new_heap(dev)
        ptr = heap.alloc(size, align)
        self._allocs[ptr] = Allocation(ptr, size, dev, ctx, self._next_buffer_id())
        return ptr

    def check_quota(self, call: str, size: int) -> None:
        """Refuse `size` more bytes beyond --max-session-memory (CUDA_ERROR_OUT_OF_MEMORY)."""
        if self.quota is not None:
            used = self.used() + self.outside_heaps
            if used + size > self.quota:
                error = memory_quota_error(call, size, used, self.quota)
                log.warning("session %#x: %s", self._session_id, error.message)
                raise error

    def alloc_at(self, ptr: int, size: int, dev: int, ctx: int, buffer_id: int) -> None:
        """Recreate an allocation at exactly `ptr` with its buffer id (restore)."""
        heap = self._heaps.get(dev)
        if heap is None:
            heap = self._heaps[dev] = self._new_heap(dev)
        heap.alloc_at(ptr, size)
        self._allocs[ptr] = Allocation(ptr, size, dev, ctx, buffer_id)

    def free(self, call: str, ptr: int) -> int:
        """Free the allocation starting at `ptr`; return its size."""
        alloc = self._allocs.get(ptr)
        if alloc is None:
            found = self.find(ptr)
            why = (
                f"is inside the allocation at {found.base:#x}, not its start"
                if found
                else "is not an allocation of this session (or was freed)"
            )
            raise self._refuse(f"{call}: {ptr:#x} {why}")
        size = self._heaps[alloc.dev].free(ptr)
        del self._allocs[ptr]
        return size

    def retire(self, call: str, ptr: int) -> Allocation:
        """Take the allocation at `ptr` out of the session's reach (cuMemFreeAsync) while its
        memory stays taken until `give_back` (when the stream has reached the free)."""
        if ptr not in self._allocs:
            self.free(call, ptr)  # raises the error that names it
        alloc = self._allocs.pop(ptr)
        self._retired[ptr] = alloc
        return alloc

    def give_back(self, ptr: int) -> None:
        """Free a retired allocation's memory."""
        alloc = self._retired.pop(ptr)
        self._heaps[alloc.dev].free(ptr)

    def release_all(self) -> tuple[int, int, int]:
        """Unmap everything; (allocations, bytes, errors)."""
        count, size = len(self._allocs), sum(a.size for a in self._allocs.values())
        errors = 0
        for dev, heap in self._heaps.items():
            try:
                heap.release_all()
            except Exception:
                errors += 1
                log.exception(
                    "session %#x: releasing its memory on device %d", self._session_id, dev
                )
        self._allocs.clear()
        self._retired.clear()
        self._heaps.clear()
        return count, size, errors

    # -- cuPointerGetAttributes -------------------------------------------------------------
    def pointer_attributes(self, attributes: Iterable[int], ptr: int) -> list[tuple[int, int, int]]:
        """(attribute, err, value) for each attribute, as cuPointerGetAttributes: an address
        the session does not own gets zeros (CUDA's answer for a non-CUDA pointer)."""
        found = self.find(ptr)
        return [(a, *pointer_attribute(a, ptr, found)) for a in attributes]


def pointer_attribute(attr: int, ptr: int, found: Span | None) -> tuple[int, int]:
    """(err, value) of one CUpointer_attribute of device address `ptr`."""
    if attr in _UNSUPPORTED:
        return CUDA_ERROR_NOT_SUPPORTED, 0
    if not PA_CONTEXT <= attr <= PA_MEMORY_BLOCK_ID:
        return CUDA_ERROR_INVALID_VALUE, 0
    if found is None:
        return CUDA_SUCCESS, 0
    values = {
        PA_CONTEXT: found.ctx,
        PA_MEMORY_TYPE: CU_MEMORYTYPE_DEVICE,
        PA_DEVICE_POINTER: ptr,
        PA_SYNC_MEMOPS: 0,
        PA_BUFFER_ID: found.buffer_id,
        PA_IS_MANAGED: 0,
        PA_DEVICE_ORDINAL: found.dev,
        PA_IS_LEGACY_CUDA_IPC_CAPABLE: 0,
        PA_RANGE_START_ADDR: found.base,
        PA_RANGE_SIZE: found.size,
        PA_MAPPED: 1,
        PA_ALLOWED_HANDLE_TYPES: 0,
        PA_IS_GPU_DIRECT_RDMA_CAPABLE: 0,
        PA_ACCESS_FLAGS: ACCESS_FLAG_READWRITE,
    }
    if attr not in values:  # PA_HOST_POINTER: device memory has no host address
        return CUDA_ERROR_INVALID_VALUE, 0
    return CUDA_SUCCESS, values[attr]
