"""AddressArena and DeviceHeap: allocation, reuse, alignment, lookup, restore, chunk return."""

from __future__ import annotations

import random
import threading

import pytest

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    CudaError,
)
from cricket_server.memory import AddressArena, DeviceHeap

MiB = 1 << 20
GRAN = 2 * MiB
BASE = 0x7F0000000000


class RecordingBacking:
    """A ChunkBacking that only remembers what is mapped."""

    granularity = GRAN

    def __init__(self) -> None:
        self.mapped: dict[int, int] = {}
        self.calls: list[tuple[str, int, int]] = []

    def map_chunk(self, addr: int, size: int) -> object:
        assert addr % GRAN == 0 and size % GRAN == 0
        assert all(addr + size <= a or a + s <= addr for a, s in self.mapped.items())
        self.mapped[addr] = size
        self.calls.append(("map", addr, size))
        return ("token", addr)

    def unmap_chunk(self, addr: int, size: int, token: object) -> None:
        assert token == ("token", addr)
        assert self.mapped.pop(addr) == size
        self.calls.append(("unmap", addr, size))


@pytest.fixture
def arena() -> AddressArena:
    return AddressArena(BASE, 1 << 36, GRAN)


@pytest.fixture
def backing() -> RecordingBacking:
    return RecordingBacking()


@pytest.fixture
def heap(arena: AddressArena, backing: RecordingBacking) -> DeviceHeap:
    return DeviceHeap(arena, backing)


def test_arena_take_give_claim(arena: AddressArena) -> None:
    a = arena.take(1)
    b = arena.take(3 * MiB)
    assert a == BASE and b == BASE + GRAN
    with pytest.raises(CudaError) as err:
        arena.claim(b, GRAN)
    assert err.value.code == CUDA_ERROR_INVALID_VALUE
    arena.give(a, GRAN)
    arena.claim(a, GRAN)
    arena.give(a, GRAN)
    arena.give(b, 4 * MiB)
    assert arena.free_bytes() == 1 << 36
    with pytest.raises(CudaError):
        arena.give(b, GRAN)  # not taken any more


def test_arena_runs_out() -> None:
    arena = AddressArena(BASE, 4 * GRAN, GRAN)
    arena.take(3 * GRAN)
    with pytest.raises(CudaError) as err:
        arena.take(2 * GRAN)
    assert err.value.code == CUDA_ERROR_OUT_OF_MEMORY


def test_small_allocations_share_a_chunk_and_are_aligned(heap: DeviceHeap, backing) -> None:
    ptrs = [heap.alloc(size) for size in (1, 100, 256, 257, 4000)]
    assert all(p % 256 == 0 for p in ptrs)
    assert len(backing.mapped) == 1
    spans = sorted(ptrs)
    assert spans[1] - spans[0] >= 256
    assert heap.used() == 1 + 100 + 256 + 257 + 4000
    assert len(set(ptrs)) == len(ptrs)


def test_large_allocation_gets_its_own_chunks(heap: DeviceHeap, backing) -> None:
    small = heap.alloc(64)
    big = heap.alloc(5 * MiB)
    assert big % GRAN == 0
    assert backing.mapped[big] == 6 * MiB
    heap.free(big)
    assert big not in backing.mapped
    assert heap.find(small) == (small, 64)


def test_freed_space_is_reused(heap: DeviceHeap) -> None:
    a = heap.alloc(1000)
    heap.alloc(1000)  # keeps the chunk alive
    heap.free(a)
    assert heap.alloc(1000) == a


def test_requested_alignment(heap: DeviceHeap) -> None:
    heap.alloc(256)
    p = heap.alloc(300, align=4096)
    assert p % 4096 == 0


def test_free_errors(heap: DeviceHeap) -> None:
    p = heap.alloc(1024)
    with pytest.raises(CudaError) as err:
        heap.free(p + 256)
    assert err.value.code == CUDA_ERROR_INVALID_VALUE
    assert f"{p:#x}" in err.value.message
    assert heap.free(p) == 1024
    with pytest.raises(CudaError) as err:
        heap.free(p)
    assert err.value.code == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError):
        heap.alloc(0)


def test_find(heap: DeviceHeap) -> None:
    a = heap.alloc(1000)
    b = heap.alloc(3 * MiB)
    assert heap.find(a) == (a, 1000)
    assert heap.find(a + 999) == (a, 1000)
    assert heap.find(a + 1000) is None  # padding up to 1024 belongs to nobody
    assert heap.find(b + 3 * MiB - 1) == (b, 3 * MiB)
    assert heap.find(b + 3 * MiB) is None
    assert heap.find(BASE - 1) is None
    assert heap.allocations() == sorted([(a, 1000), (b, 3 * MiB)])


def test_empty_chunks_are_returned(heap: DeviceHeap, backing, arena: AddressArena) -> None:
    ptrs = [heap.alloc(512 * 1024) for _ in range(8)]  # 4 per 2 MiB chunk
    assert len(backing.mapped) == 2
    for p in ptrs[:4]:
        heap.free(p)
    assert len(backing.mapped) == 1
    for p in ptrs[4:]:
        heap.free(p)
    assert backing.mapped == {}
    assert arena.free_bytes() == arena.size
    assert heap.used() == 0 and heap.mapped() == 0


def test_alloc_at_reproduces_a_heap(arena: AddressArena) -> None:
    first = DeviceHeap(arena, RecordingBacking())
    layout = [(first.alloc(size), size) for size in (100, 5000, 3 * MiB, 700, 9 * MiB)]
    first.release_all()
    assert arena.free_bytes() == arena.size

    backing = RecordingBacking()
    second = DeviceHeap(arena, backing)
    for ptr, size in reversed(layout):
        second.alloc_at(ptr, size)
    assert second.allocations() == sorted(layout)
    for ptr, size in layout:
        assert second.find(ptr + size - 1) == (ptr, size)
    # new allocations do not collide with restored ones
    fresh = second.alloc(100)
    assert second.find(fresh) == (fresh, 100)
    assert all(not (p <= fresh < p + s) for p, s in layout)


def test_alloc_at_refuses_overlap(heap: DeviceHeap) -> None:
    p = heap.alloc(1024)
    with pytest.raises(CudaError) as err:
        heap.alloc_at(p + 256, 256)
    assert err.value.code == CUDA_ERROR_INVALID_VALUE
    big = heap.alloc(4 * MiB)
    with pytest.raises(CudaError):
        heap.alloc_at(big, 4 * MiB)


def test_release_all_unmaps_everything(heap: DeviceHeap, backing, arena) -> None:
    for size in (10, 20, 3 * MiB, 1 * MiB):
        heap.alloc(size)
    heap.release_all()
    assert backing.mapped == {}
    assert heap.allocations() == []
    assert arena.free_bytes() == arena.size


def test_random_alloc_free_keeps_allocations_disjoint(heap: DeviceHeap, backing) -> None:
    rng = random.Random(7)
    live: dict[int, int] = {}
    for _ in range(2000):
        if live and rng.random() < 0.45:
            ptr = rng.choice(list(live))
            assert heap.free(ptr) == live.pop(ptr)
        else:
            size = rng.choice([1, 17, 256, 1000, 65536, 300_000, 1_500_000])
            live[heap.alloc(size)] = size
        spans = sorted(live.items())
        for (a, sa), (b, _) in zip(spans, spans[1:], strict=False):
            assert a + sa <= b
    assert heap.allocations() == sorted(live.items())
    for ptr in list(live):
        heap.free(ptr)
    assert backing.mapped == {}


class FailingBacking(RecordingBacking):
    def map_chunk(self, addr: int, size: int) -> object:
        raise CudaError(CUDA_ERROR_OUT_OF_MEMORY, "no memory left")


def test_failed_map_returns_the_range(arena: AddressArena) -> None:
    heap = DeviceHeap(arena, FailingBacking())
    for size in (100, 8 * MiB):
        with pytest.raises(CudaError) as err:
            heap.alloc(size)
        assert err.value.code == CUDA_ERROR_OUT_OF_MEMORY
    assert arena.free_bytes() == arena.size
    assert heap.allocations() == [] and heap.used() == 0


def test_arena_is_thread_safe(arena: AddressArena) -> None:
    taken: list[int] = []

    def take_many() -> None:
        for _ in range(200):
            taken.append(arena.take(GRAN))

    threads = [threading.Thread(target=take_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(taken)) == 800
    for addr in taken:
        arena.give(addr, GRAN)
    assert arena.free_bytes() == arena.size


def test_small_chunks_are_chunk_aligned_with_a_finer_granularity() -> None:
    class FineBacking(RecordingBacking):
        granularity = 64 * 1024

    fine = AddressArena(BASE, 1 << 32, 64 * 1024)
    fine.take(64 * 1024)  # the next free address is not 2 MiB aligned
    heap = DeviceHeap(fine, FineBacking())
    ptr = heap.alloc(1000)
    assert ptr % heap.chunk_size == 0
    heap.release_all()
    restored = DeviceHeap(fine, FineBacking())
    restored.alloc_at(ptr + 4096, 100)
    restored.alloc_at(ptr, 1000)
    assert restored.allocations() == [(ptr, 1000), (ptr + 4096, 100)]
