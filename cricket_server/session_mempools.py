"""Stream-ordered allocation and memory pools of a session (cuMemAllocAsync, cuMemFreeAsync,
cuMemAllocFromPoolAsync, cuMemPool*, cuDeviceGet/SetMemPool, cuDeviceGetDefaultMemPool).

Design: a stream-ordered allocation comes from the session's heap (D4) like a cuMemAlloc, so it
has a stable address, counts towards --max-session-memory and is checkpointed with the other
allocations; a pool is the server's bookkeeping of which allocations are its, its attributes
and its high-water marks. A free in stream order records an event on the stream and keeps the
memory until the stream has reached it (no later allocation can get those bytes before); it
goes back to the heap at the next pool call that finds the event done, or at once when an
allocation would otherwise fail for want of memory.

The pool keeps no memory of its own beyond its live allocations: freed memory goes back to the
session's heap, so its reserved memory equals its used memory, and cuMemPoolTrimTo has nothing
to give back. The release threshold and reuse flags are kept and answered as set.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_OUT_OF_MEMORY,
    CudaError,
)
from cricket_server.resources import HandleKind, Record
from cricket_server.session_core import SessionCore

ALLOCATION_TYPE_PINNED = 1
LOCATION_TYPE_DEVICE = 1
EVENT_DISABLE_TIMING = 0x2

# CUmemPool_attribute
REUSE_FOLLOW_EVENT_DEPENDENCIES = 1
REUSE_ALLOW_OPPORTUNISTIC = 2
REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3
RELEASE_THRESHOLD = 4
RESERVED_MEM_CURRENT = 5
RESERVED_MEM_HIGH = 6
USED_MEM_CURRENT = 7
USED_MEM_HIGH = 8
ALLOCATION_TYPE = 9
EXPORT_HANDLE_TYPES = 10
LOCATION_ID = 11
LOCATION_TYPE = 12
MAX_POOL_SIZE = 13
SETTABLE = (
    REUSE_FOLLOW_EVENT_DEPENDENCIES,
    REUSE_ALLOW_OPPORTUNISTIC,
    REUSE_ALLOW_INTERNAL_DEPENDENCIES,
    RELEASE_THRESHOLD,
)
_REUSE = SETTABLE[:3]


@dataclass(frozen=True)
class PoolProps:
    """CUmemPoolProps as the wire carries it (cricket.x mem_pool_props)."""

    alloc_type: int = ALLOCATION_TYPE_PINNED
    handle_types: int = 0
    location_type: int = LOCATION_TYPE_DEVICE
    location_id: int = 0
    max_size: int = 0
    usage: int = 0


@dataclass
class MemPoolRecord(Record):
    """A memory pool: a device's default one or one of cuMemPoolCreate."""

    dev: int
    props: PoolProps
    default: bool = False
    attributes: dict[int, int] = field(
        default_factory=lambda: {a: (1 if a in _REUSE else 0) for a in SETTABLE}
    )
    live: set[int] = field(default_factory=set)  # addresses of its allocations
    used_high: int = 0
    reserved_high: int = 0


@dataclass
class _PendingFree:
    ptr: int
    size: int
    dev: int
    event: object
    pool: MemPoolRecord | None
    stream: int  # a key of the stream: its frees are reached in order


SPARE_EVENTS = 64  # finished free markers kept per device for the next frees


class SessionMemPools(SessionCore):
    """The stream-ordered allocator and memory pools; see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pool_default: dict[int, MemPoolRecord] = {}  # dev -> its default pool
        self._pool_current: dict[int, MemPoolRecord] = {}  # dev -> cuDeviceSetMemPool's
        self._pool_of: dict[int, MemPoolRecord] = {}  # allocation address -> its pool
        self._pending: list[_PendingFree] = []
        self._spare_events: dict[int, list[object]] = {}  # dev -> events to record again

    # -- what the checkpoint reads and sets -------------------------------------------------
    def mem_pools(self) -> list[MemPoolRecord]:
        """Every pool with a handle, and destroyed ones that still have allocations."""
        pools = {id(p): p for p in self._pool_default.values()}
        pools.update((id(p), p) for p in self._pool_of.values())
        for r in self.handles.of_kind(HandleKind.MEMPOOL):
            assert isinstance(r, MemPoolRecord)
            pools[id(r)] = r
        return sorted(pools.values(), key=lambda p: p.handle)

    def pool_allocations(self, pool: MemPoolRecord) -> list[int]:
        """Addresses of the pool's live allocations."""
        self._pool_used(pool)  # forgets those freed another way
        return sorted(pool.live)

    def pool_is_current(self, pool: MemPoolRecord) -> bool:
        return self._pool_current.get(pool.dev) is pool

    def adopt_pool(self, pool: MemPoolRecord, current: bool) -> None:
        """Take back a restored pool (its allocations are restored already)."""
        if pool.default:
            self._pool_default[pool.dev] = pool
        if current:
            self._pool_current[pool.dev] = pool
        for ptr in pool.live:
            self._pool_of[ptr] = pool

    # -- pools ------------------------------------------------------------------------------
    def _pool(self, call: str, handle: int) -> MemPoolRecord:
        return self.handles.get(call, HandleKind.MEMPOOL, handle, MemPoolRecord)

    def _default_pool(self, dev: int) -> MemPoolRecord:
        pool = self._pool_default.get(dev)
        if pool is None:
            pool = self.handles.add(
                HandleKind.MEMPOOL,
                MemPoolRecord,
                ctx=0,
                dev=dev,
                props=PoolProps(location_id=dev),
                default=True,
            )
            self._pool_default[dev] = pool
        return pool

    def device_get_default_mem_pool(self, dev: int) -> int:
        return self._default_pool(self.device("cuDeviceGetDefaultMemPool", dev)).handle

    def device_get_mem_pool(self, dev: int) -> int:
        dev = self.device("cuDeviceGetMemPool", dev)
        return (self._pool_current.get(dev) or self._default_pool(dev)).handle

    def device_set_mem_pool(self, dev: int, handle: int) -> None:
        call = "cuDeviceSetMemPool"
        dev = self.device(call, dev)
        pool = self._pool(call, handle)
        if pool.dev != dev:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: pool {handle:#x} is on device {pool.dev}, not device {dev}",
            )
        self._pool_current[dev] = pool

    def mem_pool_create(self, props: PoolProps) -> int:
        call = "cuMemPoolCreate"
        if props.alloc_type != ALLOCATION_TYPE_PINNED:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: allocation type {props.alloc_type} (only CU_MEM_ALLOCATION_TYPE_PINNED)",
            )
        if props.location_type != LOCATION_TYPE_DEVICE:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: location type {props.location_type}: only device pools "
                "(CU_MEM_LOCATION_TYPE_DEVICE) can serve a remote client",
            )
        dev = self.device(call, props.location_id)
        if props.handle_types:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: shareable handle types ({props.handle_types:#x}) cannot leave the "
                "server; ask for CU_MEM_HANDLE_TYPE_NONE",
            )
        return self.handles.add(HandleKind.MEMPOOL, MemPoolRecord, ctx=0, dev=dev, props=props).handle

    def mem_pool_destroy(self, handle: int) -> None:
        """Its allocations stay usable and are freed as usual (as CUDA does)."""
        call = "cuMemPoolDestroy"
        pool = self._pool(call, handle)
        if pool.default:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {handle:#x} is a device's default pool"
            )
        if self._pool_current.get(pool.dev) is pool:
            del self._pool_current[pool.dev]
        self.handles.remove(handle)

    def _pool_used(self, pool: MemPoolRecord) -> int:
        """Bytes of its live allocations and of those freed that streams have not reached."""
        used = sum(p.size for p in self._pending if p.pool is pool)
        for ptr in list(pool.live):
            alloc = self.memory.allocation(ptr)
            if alloc is None:  # freed another way (cuMemFree, its context destroyed)
                pool.live.discard(ptr)
                self._pool_of.pop(ptr, None)
            else:
                used += alloc.size
        return used

    def mem_pool_set_attribute(self, handle: int, attr: int, value: int) -> None:
        call = "cuMemPoolSetAttribute"
        pool = self._pool(call, handle)
        if attr in _REUSE:
            pool.attributes[attr] = 1 if value else 0
        elif attr == RELEASE_THRESHOLD:
            pool.attributes[attr] = value
        elif attr in (RESERVED_MEM_HIGH, USED_MEM_HIGH):
            if value:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: attribute {attr} can only be reset (set to 0), not set to {value}",
                )
            self.reap_frees()
            now = self._pool_used(pool)
            if attr == USED_MEM_HIGH:
                pool.used_high = now
            else:
                pool.reserved_high = now
        else:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: attribute {attr} cannot be set on a pool"
            )

    def mem_pool_get_attribute(self, handle: int, attr: int) -> int:
        call = "cuMemPoolGetAttribute"
        pool = self._pool(call, handle)
        if attr in pool.attributes:
            return pool.attributes[attr]
        self.reap_frees()
        used = self._pool_used(pool)
        values = {
            RESERVED_MEM_CURRENT: used,
            RESERVED_MEM_HIGH: pool.reserved_high,
            USED_MEM_CURRENT: used,
            USED_MEM_HIGH: pool.used_high,
            ALLOCATION_TYPE: pool.props.alloc_type,
            EXPORT_HANDLE_TYPES: pool.props.handle_types,
            LOCATION_ID: pool.dev,
            LOCATION_TYPE: pool.props.location_type,
            MAX_POOL_SIZE: pool.props.max_size,
        }
        if attr not in values:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: unknown pool attribute {attr}")
        return values[attr]

    def mem_pool_trim_to(self, handle: int, keep: int) -> None:
        """Freed memory has gone back to the heap already: only finished frees to collect."""
        self._pool("cuMemPoolTrimTo", handle)
        self.reap_frees()

    # -- allocate and free in stream order --------------------------------------------------
    def mem_alloc_async(self, size: int, stream: int) -> int:
        call = "cuMemAllocAsync"
        ctx = self.current(call)
        pool = self._pool_current.get(ctx.dev) or self._default_pool(ctx.dev)
        return self._alloc_from(call, size, pool, stream)

    def mem_alloc_from_pool_async(self, size: int, handle: int, stream: int) -> int:
        call = "cuMemAllocFromPoolAsync"
        return self._alloc_from(call, size, self._pool(call, handle), stream)

    def _alloc_from(self, call: str, size: int, pool: MemPoolRecord, stream: int) -> int:
        ctx = self.current(call)
        self._stream(call, stream)
        if size <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: size must be > 0, got {size}")
        self.reap_frees()
        limit = pool.props.max_size
        if limit and self._pool_used(pool) + size > limit:
            self.reap_frees(wait=True)
            if self._pool_used(pool) + size > limit:
                raise CudaError(
                    CUDA_ERROR_OUT_OF_MEMORY,
                    f"{call}: {size} bytes more would exceed the pool's maximum size of {limit} "
                    f"bytes ({self._pool_used(pool)} in use)",
                )
        try:
            ptr = self.memory.alloc(call, size, pool.dev, ctx.handle)
        except CudaError as e:
            if e.code != CUDA_ERROR_OUT_OF_MEMORY or not self._pending:
                raise
            self.reap_frees(wait=True)  # memory freed in stream order may be what is missing
            ptr = self.memory.alloc(call, size, pool.dev, ctx.handle)
        pool.live.add(ptr)
        self._pool_of[ptr] = pool
        used = self._pool_used(pool)
        pool.used_high = max(pool.used_high, used)
        pool.reserved_high = max(pool.reserved_high, used)
        return ptr

    def mem_free_async(self, ptr: int, stream: int) -> None:
        """The allocation is out of reach at once; its memory goes back once the stream has
        reached this point (an event recorded on it marks the point)."""
        call = "cuMemFreeAsync"
        self.current(call)
        obj = self._stream(call, stream)
        alloc = self.memory.allocation(ptr)
        if alloc is None:
            self.memory.free(call, ptr)  # raises the error that names it
            return
        spare = self._spare_events.setdefault(alloc.dev, [])
        with self._on_device(alloc.dev):
            event = spare.pop() if spare else self.bsession.event_create(EVENT_DISABLE_TIMING)
            try:
                self.bsession.event_record(event, obj)
            except BaseException:
                self.bsession.event_destroy(event)
                raise
        self.memory.retire(call, ptr)
        pool = self._pool_of.pop(ptr, None)
        if pool is not None:
            pool.live.discard(ptr)
        self._pending.append(
            _PendingFree(ptr, alloc.size, alloc.dev, event, pool, hash((alloc.dev, stream)))
        )

    def mem_free(self, ptr: int) -> None:
        super().mem_free(ptr)  # type: ignore[misc]
        pool = self._pool_of.pop(ptr, None)
        if pool is not None:
            pool.live.discard(ptr)

    def reap_frees(self, wait: bool = False) -> None:
        """Give back the memory of stream-ordered frees the streams have reached (`wait`:
        wait for all of them)."""
        left: list[_PendingFree] = []
        behind: set[int] = set()  # streams with a free not reached: later ones are not either
        for p in self._pending:
            if p.stream in behind:
                left.append(p)
                continue
            with self._on_device(p.dev):
                try:
                    if wait:
                        self.bsession.event_synchronize(p.event)
                    elif not self.bsession.event_query(p.event):
                        behind.add(p.stream)
                        left.append(p)
                        continue
                    reusable = True
                except CudaError:  # the stream failed: its work is over all the same
                    reusable = False
                spare = self._spare_events.setdefault(p.dev, [])
                if reusable and len(spare) < SPARE_EVENTS:
                    spare.append(p.event)
                else:
                    with contextlib.suppress(CudaError):
                        self.bsession.event_destroy(p.event)
            self.memory.give_back(p.ptr)
        self._pending = left

    def synchronize_all(self) -> None:
        super().synchronize_all()  # type: ignore[misc]
        self.reap_frees(wait=True)
