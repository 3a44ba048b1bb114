"""Device memory of the sim: chunks of host RAM (anonymous mmap) at GPU-like addresses.

`SimMemory` is the address space of one session: every chunk its heaps mapped, on any
device, looked up by bisecting the sorted chunk bases. The index is replaced as a whole on
every map/unmap, so stream workers read it without a lock. `SimChunkBacking` is the
`ChunkBacking` of one device for that session; it charges the device's memory budget.
"""

from __future__ import annotations

import bisect
import mmap
from collections.abc import Callable
from typing import Any

import numpy as np

from cricket_server.backends.base import (
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)
from cricket_server.backends.sim.device import SimDevice

GRANULARITY = 2 << 20


class _Chunk:
    __slots__ = ("base", "buffer", "charged", "device", "end", "mm", "shadow")

    def __init__(
        self,
        base: int,
        size: int,
        device: SimDevice,
        buffer: np.ndarray | None = None,
        shadow: Any = None,
    ) -> None:
        self.base = base
        self.end = base + size
        self.device = device
        self.shadow = shadow  # the host mirror `buffer` lives in (VMM mappings), or None
        self.charged = buffer is None  # a view of physical memory charged elsewhere (VMM)
        self.mm: mmap.mmap | None = None
        if buffer is None:
            self.mm = mmap.mmap(-1, size)  # zero pages, committed only when touched
            buffer = np.frombuffer(self.mm, dtype=np.uint8)
        self.buffer = buffer


class SimMemory:
    """Address -> host buffer lookup for one session."""

    def __init__(self) -> None:
        self._index: tuple[list[int], list[_Chunk]] = ([], [])
        self.closed = False

    # -- mapping (session thread) -----------------------------------------------------------
    def map(
        self,
        base: int,
        size: int,
        device: SimDevice,
        buffer: np.ndarray | None = None,
        shadow: Any = None,
    ) -> _Chunk:
        """Map fresh memory (charged to `device`) at `base`, or `buffer`, memory charged by
        its owner (a VMM physical allocation, seen through `shadow`: `sim.vmm.Shadow`)."""
        starts, chunks = self._index
        i = bisect.bisect_left(starts, base)
        if (i > 0 and chunks[i - 1].end > base) or (i < len(starts) and starts[i] < base + size):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"sim: [{base:#x}, {base + size:#x}) is already mapped"
            )
        if buffer is None:
            device.charge(size)
        chunk = _Chunk(base, size, device, buffer, shadow)
        self._index = (starts[:i] + [base] + starts[i:], chunks[:i] + [chunk] + chunks[i:])
        return chunk

    def unmap(self, base: int) -> None:
        if self.closed:
            return  # the session is gone and took every chunk with it
        starts, chunks = self._index
        i = bisect.bisect_left(starts, base)
        if i == len(starts) or starts[i] != base:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"sim: no chunk mapped at {base:#x}")
        chunk = chunks[i]
        self._index = (starts[:i] + starts[i + 1 :], chunks[:i] + chunks[i + 1 :])
        if chunk.charged:
            chunk.device.refund(chunk.end - chunk.base)

    def close(self) -> None:
        """Unmap everything; later unmaps of the session's heaps are no-ops."""
        for base in list(self._index[0]):
            self.unmap(base)
        self.closed = True

    # -- access (any thread) ------------------------------------------------------------------
    def span(
        self, addr: int, size: int, code: int = CUDA_ERROR_INVALID_VALUE, what: str = "access"
    ) -> np.ndarray:
        """A writable uint8 view of [addr, addr+size); raises `code` unless it is all mapped."""
        starts, chunks = self._index
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr + size <= chunks[i].end and size >= 0:
            chunk = chunks[i]
            off = addr - chunk.base
            return chunk.buffer[off : off + size]
        return self._joined(addr, size, code, what)

    def _joined(self, addr: int, size: int, code: int, what: str) -> np.ndarray:
        """A range that crosses into adjacent chunks: a writable view when they are adjacent
        mappings of one host mirror (VMM), else a copy (read-only)."""
        shadowed = self._shadowed(addr, size)
        if shadowed is not None:
            return shadowed
        pieces = []
        pos, end = addr, addr + size
        starts, chunks = self._index
        while pos < end:
            i = bisect.bisect_right(starts, pos) - 1
            if i < 0 or pos >= chunks[i].end or size < 0:
                raise CudaError(
                    code,
                    f"{what}: [{addr:#x}, {end:#x}) is not device memory of this context "
                    f"(nothing mapped at {pos:#x})",
                )
            take = min(end, chunks[i].end) - pos
            pieces.append(chunks[i].buffer[pos - chunks[i].base : pos - chunks[i].base + take])
            pos += take
        joined = np.concatenate(pieces) if pieces else np.empty(0, np.uint8)
        joined.flags.writeable = False
        return joined

    def _shadowed(self, addr: int, size: int) -> np.ndarray | None:
        starts, chunks = self._index
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0 or size <= 0 or chunks[i].shadow is None or addr >= chunks[i].end:
            return None
        shadow, pos = chunks[i].shadow, chunks[i].end
        while pos < addr + size:
            i += 1
            if i >= len(chunks) or chunks[i].base != pos or chunks[i].shadow is not shadow:
                return None
            pos = chunks[i].end
        return shadow.view(addr, size)  # type: ignore[no-any-return]

    def read(
        self, addr: int, size: int, code: int = CUDA_ERROR_INVALID_VALUE, what: str = "read"
    ) -> bytes:
        return self.span(addr, size, code, what).tobytes()

    def write(
        self, addr: int, data, code: int = CUDA_ERROR_INVALID_VALUE, what: str = "write"
    ) -> None:
        src = (
            np.frombuffer(data, dtype=np.uint8)
            if not isinstance(data, np.ndarray)
            else data.view(np.uint8).reshape(-1)
        )
        view = self.span(addr, src.size, code, what)
        if view.flags.writeable:
            view[:] = src
            return
        pos = 0  # crosses chunks: write piece by piece
        starts, chunks = self._index
        while pos < src.size:
            i = bisect.bisect_right(starts, addr + pos) - 1
            chunk = chunks[i]
            off = addr + pos - chunk.base
            take = min(src.size - pos, chunk.end - (addr + pos))
            chunk.buffer[off : off + take] = src[pos : pos + take]
            pos += take

    def check(self, addr: int, size: int, what: str, code: int = CUDA_ERROR_INVALID_VALUE) -> None:
        """Raise unless [addr, addr+size) is mapped."""
        if size > 0:
            self.span(addr, size, code, what)


class SimChunkBacking:
    """The ChunkBacking of one device for one session."""

    granularity = GRANULARITY

    def __init__(
        self, memory: SimMemory, device: SimDevice, before_unmap: Callable[[], None]
    ) -> None:
        self.memory = memory
        self.device = device
        self._before_unmap = before_unmap

    def map_chunk(self, addr: int, size: int) -> object:
        return self.memory.map(addr, size, self.device)

    def unmap_chunk(self, addr: int, size: int, token: object) -> None:
        self._before_unmap()  # like cuMemFree: queued work that may use it finishes first
        self.memory.unmap(addr)


class KernelMemory:
    """The memory accessor a host kernel gets: errors are CUDA_ERROR_ILLEGAL_ADDRESS."""

    def __init__(self, memory: SimMemory, kernel: str) -> None:
        self._memory = memory
        self._what = f"kernel {kernel!r}"

    def array(self, addr: int, dtype, count: int) -> np.ndarray:
        """A writable numpy view of `count` elements of `dtype` at `addr`."""
        dtype = np.dtype(dtype)
        if addr % dtype.alignment:
            raise CudaError(
                716, f"{self._what}: misaligned {dtype} access at {addr:#x}"
            )  # CUDA_ERROR_MISALIGNED_ADDRESS
        view = self._memory.span(
            addr, count * dtype.itemsize, CUDA_ERROR_ILLEGAL_ADDRESS, self._what
        )
        if not view.flags.writeable:
            raise CudaError(
                CUDA_ERROR_ILLEGAL_ADDRESS,
                f"{self._what}: [{addr:#x}, +{count * dtype.itemsize}) spans two allocations' chunks",
            )
        return view.view(dtype)

    def read(self, addr: int, size: int) -> bytes:
        return self._memory.read(addr, size, CUDA_ERROR_ILLEGAL_ADDRESS, self._what)

    def write(self, addr: int, data) -> None:
        self._memory.write(addr, data, CUDA_ERROR_ILLEGAL_ADDRESS, self._what)

    def load(self, addr: int, dtype):
        """One scalar of `dtype` at `addr`."""
        return self.array(addr, dtype, 1)[0]

    def store(self, addr: int, dtype, value) -> None:
        self.array(addr, dtype, 1)[0] = value
