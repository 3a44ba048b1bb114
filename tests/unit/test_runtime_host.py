"""Client-side page-locked host memory (cudaMallocHost/cudaHostAlloc): real, writable,
zeroed memory of this process, found by any address inside it, freed exactly once."""

from __future__ import annotations

import ctypes

from cricket_client import runtime as cudart
from cricket_client.runtime_host import PinnedHeap

OK = cudart.cudaError_t.cudaSuccess


def test_blocks_are_zeroed_writable_and_found_inside() -> None:
    heap = PinnedHeap()
    block = heap.alloc(10_000)
    assert ctypes.string_at(block.address, 10_000) == bytes(10_000)
    ctypes.memset(block.address + 100, 0x7F, 50)
    assert ctypes.string_at(block.address + 99, 52) == b"\0" + b"\x7f" * 50 + b"\0"
    assert heap.find(block.address + 9_999) is block
    assert heap.find(block.address + 10_000) is None
    assert heap.free(block.address)
    assert not heap.free(block.address)
    assert heap.find(block.address) is None


def test_runtime_host_allocations_need_no_server() -> None:
    err, ptr = cudart.cudaMallocHost(4096)
    assert err == OK and ptr
    other = cudart.cudaHostAlloc(64, cudart.cudaHostAllocPortable | cudart.cudaHostAllocWriteCombined)
    assert other[0] == OK
    assert cudart.cudaMallocHost(0) == (OK, 0)
    assert cudart.cudaFreeHost(0) == (OK,)
    assert cudart.cudaFreeHost(ptr) == (OK,)
    assert cudart.cudaFreeHost(other[1]) == (OK,)
