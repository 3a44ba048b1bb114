"""Device memory bookkeeping shared by every backend (D4).

`AddressArena` hands out device virtual address ranges of the process (granularity-aligned);
`DeviceHeap` turns them into client allocations: small ones are sub-allocated from chunks
(best fit over a free list kept sorted by size), large ones get a run of chunks of their own.
The physical memory under a chunk comes from a `ChunkBacking` (VMM on `cuda`, host RAM on
`sim`), so this module knows nothing of either.

    arena  [.... chunk A ....][ chunk B (one large allocation) ][.... chunk C ....]
    heap   |a1|a2|  free  |a3|                                   |a4|   free      |
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    ChunkBacking,
    CudaError,
)

ALLOC_ALIGNMENT = 256  # cuMemAlloc's alignment


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def align_down(value: int, alignment: int) -> int:
    return value // alignment * alignment


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


class AddressArena:
    """A process-wide device VA range [base, base+size), handed out in granularity units."""

    def __init__(self, base: int, size: int, granularity: int) -> None:
        if not _is_power_of_two(granularity) or base % granularity or size % granularity:
            raise ValueError(
                f"AddressArena: base {base:#x} and size {size:#x} must be multiples of "
                f"the granularity {granularity:#x} (a power of two)"
            )
        self.base = base
        self.size = size
        self.granularity = granularity
        self._lock = threading.Lock()
        self._free: list[tuple[int, int]] = [(base, base + size)]  # sorted (start, end)

    def take(self, size: int, align: int = 0) -> int:
        """Reserve `size` bytes (rounded up to the granularity) anywhere; return the address."""
        size = self._round(size, "take")
        align = max(align, self.granularity)
        with self._lock:
            for i, (start, end) in enumerate(self._free):
                addr = align_up(start, align)
                if addr + size <= end:
                    self._cut(i, addr, addr + size)
                    return addr
        raise CudaError(
            CUDA_ERROR_OUT_OF_MEMORY,
            f"AddressArena.take: no free range of {size:#x} bytes left in "
            f"[{self.base:#x}, {self.base + self.size:#x})",
        )

    def claim(self, addr: int, size: int) -> None:
        """Reserve exactly [addr, addr+size) (restore); INVALID_VALUE when any of it is taken."""
        size = self._round(size, "claim")
        if addr % self.granularity:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"AddressArena.claim: {addr:#x} is not a multiple of the granularity "
                f"{self.granularity:#x}",
            )
        with self._lock:
            i = bisect.bisect_right(self._free, (addr, float("inf"))) - 1
            if i >= 0:
                start, end = self._free[i]
                if start <= addr and addr + size <= end:
                    self._cut(i, addr, addr + size)
                    return
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"AddressArena.claim: [{addr:#x}, {addr + size:#x}) is not free in the arena "
            f"[{self.base:#x}, {self.base + self.size:#x})",
        )

    def give(self, addr: int, size: int) -> None:
        """Return a range taken or claimed before."""
        size = self._round(size, "give")
        end = addr + size
        with self._lock:
            i = bisect.bisect_left(self._free, (addr, addr))
            prev_overlaps = i > 0 and self._free[i - 1][1] > addr
            next_overlaps = i < len(self._free) and self._free[i][0] < end
            if addr < self.base or end > self.base + self.size or prev_overlaps or next_overlaps:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"AddressArena.give: [{addr:#x}, {end:#x}) was not taken from the arena",
                )
            if i < len(self._free) and self._free[i][0] == end:
                end = self._free.pop(i)[1]
            if i > 0 and self._free[i - 1][1] == addr:
                addr = self._free.pop(i - 1)[0]
                i -= 1
            self._free.insert(i, (addr, end))

    def free_bytes(self) -> int:
        with self._lock:
            return sum(end - start for start, end in self._free)

    def _round(self, size: int, call: str) -> int:
        if size <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"AddressArena.{call}: size {size} <= 0")
        return align_up(size, self.granularity)

    def _cut(self, i: int, lo: int, hi: int) -> None:
        start, end = self._free.pop(i)
        pieces = [(s, e) for s, e in ((start, lo), (hi, end)) if e > s]
        self._free[i:i] = pieces


@dataclass
class _Chunk:
    base: int
    size: int
    token: object
    small: bool  # sub-allocated (True) or one large allocation (False)
    live: int = 0

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass
class _Allocation:
    size: int  # as requested
    span: int  # bytes reserved in the chunk (size rounded up to the alignment)
    chunk: _Chunk = field(repr=False)


class DeviceHeap:
    """The allocations of one session on one device.

    Allocations of at most half a chunk are sub-allocated from shared chunks; larger ones
    get a chunk run of their own. A chunk is unmapped and its range returned to the arena as
    soon as its last allocation is freed. Thread-safe."""

    def __init__(self, arena: AddressArena, backing: ChunkBacking, chunk_size: int = 0) -> None:
        gran = backing.granularity
        if arena.granularity % gran:
            raise ValueError(
                f"DeviceHeap: arena granularity {arena.granularity:#x} is not a multiple of "
                f"the backing's {gran:#x}"
            )
        self.arena = arena
        self.backing = backing
        self.chunk_size = align_up(max(chunk_size, 2 << 20, arena.granularity), arena.granularity)
        self._lock = threading.RLock()
        self._chunk_starts: list[int] = []  # sorted chunk bases
        self._chunks: dict[int, _Chunk] = {}
        self._starts: list[int] = []  # sorted allocation starts
        self._allocs: dict[int, _Allocation] = {}
        # free space inside small chunks: (size, addr) sorted, plus start -> size / end -> start
        self._free_by_size: list[tuple[int, int]] = []
        self._free_at: dict[int, int] = {}
        self._free_ending: dict[int, int] = {}
        self._used = 0

    # -- public API -------------------------------------------------------------------------
    def alloc(self, size: int, align: int = ALLOC_ALIGNMENT) -> int:
        """Allocate `size` bytes aligned to `align` (a power of two >= 256); return the address."""
        self._check_size(size, "alloc")
        if not _is_power_of_two(align):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"alloc: alignment {align} is not a power of two"
            )
        align = max(align, ALLOC_ALIGNMENT)
        span = align_up(size, ALLOC_ALIGNMENT)
        with self._lock:
            if span > self.chunk_size // 2 or align > self.chunk_size // 2:
                run = align_up(span, self.arena.granularity)
                chunk = self._map(self.arena.take(run, align), run, small=False)
                return self._record(chunk.base, size, chunk.size, chunk)
            addr = self._take_free(span, align)
            if addr is None:
                base = self.arena.take(self.chunk_size, self.chunk_size)
                chunk = self._map(base, self.chunk_size, small=True)
                self._add_free(chunk.base, chunk.size)
                addr = self._take_free(span, align)
                assert addr is not None
            return self._record(addr, size, span, self._chunk_at(addr))

    def alloc_at(self, ptr: int, size: int) -> None:
        """Recreate an allocation at exactly `ptr` (restore); INVALID_VALUE if that cannot be."""
        self._check_size(size, "alloc_at")
        if ptr % ALLOC_ALIGNMENT:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"alloc_at: {ptr:#x} is not {ALLOC_ALIGNMENT}-byte aligned",
            )
        span = align_up(size, ALLOC_ALIGNMENT)
        with self._lock:
            chunk = self._chunk_at(ptr)
            if chunk is None and span <= self.chunk_size // 2:
                base = align_down(ptr, self.chunk_size)  # small chunks are chunk-aligned
                if ptr + span <= base + self.chunk_size:
                    chunk = self._map_claimed(base, self.chunk_size, small=True)
                    self._add_free(chunk.base, chunk.size)
            if chunk is None:
                if ptr % self.arena.granularity:
                    raise CudaError(
                        CUDA_ERROR_INVALID_VALUE,
                        f"alloc_at: large allocation at {ptr:#x} is not granularity-aligned",
                    )
                chunk = self._map_claimed(ptr, align_up(span, self.arena.granularity), small=False)
                self._record(ptr, size, chunk.size, chunk)
                return
            if not chunk.small or not self._take_free_range(ptr, span):
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"alloc_at: [{ptr:#x}, {ptr + size:#x}) overlaps a live allocation",
                )
            self._record(ptr, size, span, chunk)

    def free(self, ptr: int) -> int:
        """Free the allocation starting at `ptr`; return its size."""
        with self._lock:
            alloc = self._allocs.pop(ptr, None)
            if alloc is None:
                found = self._find_locked(ptr)
                why = f"inside the allocation at {found[0]:#x}" if found else "not an allocation"
                raise CudaError(CUDA_ERROR_INVALID_VALUE, f"cuMemFree: {ptr:#x} is {why}")
            del self._starts[bisect.bisect_left(self._starts, ptr)]
            self._used -= alloc.size
            chunk = alloc.chunk
            chunk.live -= 1
            if chunk.small:
                self._add_free(ptr, alloc.span)
            if chunk.live == 0:
                self._unmap(chunk)
            return alloc.size

    def find(self, addr: int) -> tuple[int, int] | None:
        """(base, size) of the allocation that contains `addr`, or None."""
        with self._lock:
            return self._find_locked(addr)

    def allocations(self) -> list[tuple[int, int]]:
        with self._lock:
            return [(start, self._allocs[start].size) for start in self._starts]

    def used(self) -> int:
        """Bytes allocated (as requested)."""
        return self._used

    def mapped(self) -> int:
        """Bytes of mapped chunks."""
        with self._lock:
            return sum(c.size for c in self._chunks.values())

    def release_all(self) -> None:
        """Unmap every chunk and return its range; the heap is empty afterwards."""
        with self._lock:
            for chunk in list(self._chunks.values()):
                self._unmap(chunk)
            self._starts.clear()
            self._allocs.clear()
            self._used = 0

    # -- allocations ------------------------------------------------------------------------
    def _check_size(self, size: int, call: str) -> None:
        if size <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: size {size} must be > 0")

    def _record(self, addr: int, size: int, span: int, chunk: _Chunk | None) -> int:
        assert chunk is not None
        bisect.insort(self._starts, addr)
        self._allocs[addr] = _Allocation(size, span, chunk)
        chunk.live += 1
        self._used += size
        return addr

    def _find_locked(self, addr: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        start = self._starts[i]
        size = self._allocs[start].size
        return (start, size) if addr < start + size else None

    # -- chunks -----------------------------------------------------------------------------
    def _map(self, base: int, size: int, small: bool) -> _Chunk:
        try:
            token = self.backing.map_chunk(base, size)
        except BaseException:
            self.arena.give(base, size)
            raise
        chunk = _Chunk(base, size, token, small)
        bisect.insort(self._chunk_starts, base)
        self._chunks[base] = chunk
        return chunk

    def _map_claimed(self, base: int, size: int, small: bool) -> _Chunk:
        for start in self._chunk_starts:
            if start < base + size and base < self._chunks[start].end:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"alloc_at: chunk [{base:#x}, {base + size:#x}) overlaps the chunk at {start:#x}",
                )
        self.arena.claim(base, size)
        return self._map(base, size, small)

    def _unmap(self, chunk: _Chunk) -> None:
        if chunk.small:
            self._remove_free_within(chunk)
        del self._chunk_starts[bisect.bisect_left(self._chunk_starts, chunk.base)]
        del self._chunks[chunk.base]
        try:
            self.backing.unmap_chunk(chunk.base, chunk.size, chunk.token)
        finally:
            self.arena.give(chunk.base, chunk.size)

    def _chunk_at(self, addr: int) -> _Chunk | None:
        i = bisect.bisect_right(self._chunk_starts, addr) - 1
        if i < 0:
            return None
        chunk = self._chunks[self._chunk_starts[i]]
        return chunk if addr < chunk.end else None

    # -- free space within small chunks ----------------------------------------------------
    def _take_free(self, span: int, align: int) -> int | None:
        free = self._free_by_size
        for i in range(bisect.bisect_left(free, (span, 0)), len(free)):
            size, start = free[i]
            addr = align_up(start, align)
            if addr + span <= start + size:
                self._remove_free(start, size)
                self._split(start, size, addr, span)
                return addr
        return None

    def _take_free_range(self, addr: int, span: int) -> bool:
        for start, size in list(self._free_at.items()):
            if start <= addr and addr + span <= start + size:
                self._remove_free(start, size)
                self._split(start, size, addr, span)
                return True
        return False

    def _split(self, start: int, size: int, addr: int, span: int) -> None:
        if addr > start:
            self._insert_free(start, addr - start)
        if addr + span < start + size:
            self._insert_free(addr + span, start + size - addr - span)

    def _add_free(self, addr: int, size: int) -> None:
        """Give [addr, addr+size) back, merging with free neighbours of the same chunk."""
        chunk = self._chunk_at(addr)
        assert chunk is not None
        end = addr + size
        after = self._free_at.get(end)
        if after is not None and end < chunk.end:
            self._remove_free(end, after)
            end += after
        before = self._free_ending.get(addr)
        if before is not None and before >= chunk.base:
            self._remove_free(before, addr - before)
            addr = before
        self._insert_free(addr, end - addr)

    def _insert_free(self, addr: int, size: int) -> None:
        bisect.insort(self._free_by_size, (size, addr))
        self._free_at[addr] = size
        self._free_ending[addr + size] = addr

    def _remove_free(self, addr: int, size: int) -> None:
        del self._free_by_size[bisect.bisect_left(self._free_by_size, (size, addr))]
        del self._free_at[addr]
        del self._free_ending[addr + size]

    def _remove_free_within(self, chunk: _Chunk) -> None:
        for start in [s for s in self._free_at if chunk.base <= s < chunk.end]:
            self._remove_free(start, self._free_at[start])
