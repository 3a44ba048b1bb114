"""Page-locked host memory for cudaMallocHost and cudaHostAlloc, allocated on the client.

What "pinned" means remotely: the GPU is on another machine, so no host page can be mapped
into its address space. These allocations are anonymous memory of this process, locked into
RAM with mlock(2) where the process may lock that much (RLIMIT_MEMLOCK; else they stay
ordinary pages and `locked` says so), so they are never swapped out. Copies from and to them
travel over the network like any other host memory; an asynchronous copy takes the bytes when
it is called (host to device) or writes them when the stream's reply arrives (device to host).
cudaHostAllocMapped (a device pointer to host memory) is `cricket_client.mapped_host`'s.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import threading
from dataclasses import dataclass

__all__ = ["PinnedBlock", "PinnedHeap", "PINNED"]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


@dataclass
class PinnedBlock:
    """One allocation: its address, size, whether mlock succeeded, and what keeps it alive."""

    address: int
    size: int
    locked: bool
    _map: mmap.mmap
    _view: ctypes.Array[ctypes.c_char]


class PinnedHeap:
    """The process's page-locked host allocations, by address."""

    def __init__(self) -> None:
        self._blocks: dict[int, PinnedBlock] = {}
        self._lock = threading.Lock()

    def alloc(self, size: int) -> PinnedBlock:
        """A zeroed block of `size` (> 0) bytes; raises MemoryError when the OS has none."""
        mem = mmap.mmap(-1, size)
        view = (ctypes.c_char * size).from_buffer(mem)
        address = ctypes.addressof(view)
        locked = False
        if _LIBC is not None:
            locked = _LIBC.mlock(ctypes.c_void_p(address), ctypes.c_size_t(size)) == 0
        block = PinnedBlock(address, size, locked, mem, view)
        with self._lock:
            self._blocks[address] = block
        return block

    def free(self, address: int) -> bool:
        """Free the block starting at `address`; False when no block starts there."""
        with self._lock:
            block = self._blocks.pop(address, None)
        if block is None:
            return False
        if block.locked and _LIBC is not None:
            _LIBC.munlock(ctypes.c_void_p(block.address), ctypes.c_size_t(block.size))
        del block._view
        block._map.close()
        return True

    def find(self, address: int) -> PinnedBlock | None:
        """The block containing `address`, if any."""
        with self._lock:
            for block in self._blocks.values():
                if block.address <= address < block.address + block.size:
                    return block
        return None


PINNED = PinnedHeap()
