"""Virtual memory management on the sim: physical allocations are host RAM (an anonymous
mmap charged to the device when created), mapped into the session's address space as views,
so one allocation may appear at several addresses and keeps its bytes between mappings.
Access rights are the session layer's business: the sim maps everything read/write."""

from __future__ import annotations

import mmap

import numpy as np

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.backends.sim.device import SimDevice
from cricket_server.backends.sim.devmem import SimMemory


class SimPhysical:
    """One cuMemCreate: `size` bytes of host RAM charged to `device` until released."""

    def __init__(self, device: SimDevice, size: int) -> None:
        device.charge(size)
        self.device = device
        self.size = size
        self.mm = mmap.mmap(-1, size)
        self.buffer = np.frombuffer(self.mm, dtype=np.uint8)
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.device.refund(self.size)


class SimVmm:
    """The vmm_ methods of `SimSession` (which provides `memory`, `backend` and `_drain`)."""

    memory: SimMemory

    def _drain(self) -> None:
        raise NotImplementedError  # SimSession's

    def _sim_device(self, dev: int) -> SimDevice:
        raise NotImplementedError  # SimSession's

    def vmm_create(self, dev: int, size: int) -> object:
        return SimPhysical(self._sim_device(dev), size)

    def vmm_release(self, phys: object) -> None:
        _physical(phys, "cuMemRelease").release()

    def vmm_map(self, addr: int, size: int, offset: int, phys: object) -> None:
        p = _physical(phys, "cuMemMap")
        if offset + size > p.size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuMemMap: bytes [{offset:#x}, {offset + size:#x}) of a {p.size:#x}-byte "
                "allocation",
            )
        self.memory.map(addr, size, p.device, p.buffer[offset : offset + size])

    def vmm_unmap(self, addr: int, size: int) -> None:
        self._drain()  # work queued before the unmap finishes first
        self.memory.unmap(addr)

    def vmm_set_access(self, addr: int, size: int, dev: int, flags: int) -> None:
        self.memory.check(addr, size, "cuMemSetAccess")


def _physical(phys: object, call: str) -> SimPhysical:
    if isinstance(phys, SimPhysical):
        return phys
    raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {phys!r} is not a physical allocation")
