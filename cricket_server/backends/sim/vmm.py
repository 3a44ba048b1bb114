"""Virtual memory management on the sim.

A physical allocation (cuMemCreate) is a memfd charged to its device; a mapping (cuMemMap)
maps that file into a process-wide *shadow*: host address space mirroring the sim's client
device range, reserved inaccessible and without backing, so that the host bytes of device
address `a` are at `shadow + (a - base)`. Mappings adjacent on the device are then adjacent on
the host, and kernels, copies and memsets may run across them as across one allocation (as
on a GPU); one allocation may be mapped at several addresses and keeps its bytes between
mappings. Access rights are the session layer's business: the sim maps read/write.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading

import numpy as np

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    CudaError,
)
from cricket_server.backends.sim.device import SimDevice
from cricket_server.backends.sim.devmem import SimMemory

_PROT_NONE = 0
_MAP_NORESERVE = 0x4000
_MAP_FIXED = 0x10
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long,
]  # fmt: skip
_MMAP_FAILED = ctypes.c_void_p(-1).value


def _mmap(addr: int | None, size: int, prot: int, flags: int, fd: int, offset: int) -> int:
    got = _libc.mmap(addr, size, prot, flags, fd, offset)
    if got is None or got == _MMAP_FAILED:
        err = ctypes.get_errno()
        raise CudaError(
            CUDA_ERROR_OUT_OF_MEMORY, f"sim: mmap of {size:#x} bytes failed: {os.strerror(err)}"
        )
    return int(got)


class Shadow:
    """Host address space mirroring the device range [base, base + size)."""

    def __init__(self, base: int, size: int) -> None:
        self.base = base
        self.size = size
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
        self.host = _mmap(None, size, _PROT_NONE, flags, -1, 0)
        raw = (ctypes.c_uint8 * size).from_address(self.host)
        self.bytes = np.frombuffer(memoryview(raw).cast("B"), np.uint8)

    def view(self, addr: int, size: int) -> np.ndarray:
        off = addr - self.base
        return self.bytes[off : off + size]

    def map(self, addr: int, size: int, fd: int, offset: int) -> np.ndarray:
        self._check(addr, size)
        flags = mmap.MAP_SHARED | _MAP_FIXED
        prot = mmap.PROT_READ | mmap.PROT_WRITE
        _mmap(self.host + addr - self.base, size, prot, flags, fd, offset)
        return self.view(addr, size)

    def unmap(self, addr: int, size: int) -> None:
        self._check(addr, size)
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE | _MAP_FIXED
        _mmap(self.host + addr - self.base, size, _PROT_NONE, flags, -1, 0)

    def _check(self, addr: int, size: int) -> None:
        if not (self.base <= addr and addr + size <= self.base + self.size):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"sim: [{addr:#x}, {addr + size:#x}) is outside the client device range",
            )


_shadows: dict[tuple[int, int], Shadow] = {}
_shadows_lock = threading.Lock()


def shadow_of(base: int, size: int) -> Shadow:
    """The process's shadow of a device range (made on first use)."""
    with _shadows_lock:
        shadow = _shadows.get((base, size))
        if shadow is None:
            shadow = _shadows[(base, size)] = Shadow(base, size)
        return shadow


class SimPhysical:
    """One cuMemCreate: a memfd of `size` bytes charged to `device` until released."""

    def __init__(self, device: SimDevice, size: int) -> None:
        device.charge(size)
        self.device = device
        self.size = size
        try:
            self.fd = os.memfd_create("cricket-sim-vmm", os.MFD_CLOEXEC)
            os.ftruncate(self.fd, size)
        except OSError as e:
            device.refund(size)
            raise CudaError(CUDA_ERROR_OUT_OF_MEMORY, f"sim: cuMemCreate: {e}") from None
        self.released = False

    def release(self) -> None:
        """Mappings keep the memory until unmapped (the file lives on with them)."""
        if not self.released:
            self.released = True
            os.close(self.fd)
            self.device.refund(self.size)


class SimVmm:
    """The vmm_ methods of `SimSession` (which provides `memory`, `_drain`, `_sim_device` and
    `_client_range`)."""

    memory: SimMemory

    def _drain(self) -> None:
        raise NotImplementedError  # SimSession's

    def _sim_device(self, dev: int) -> SimDevice:
        raise NotImplementedError  # SimSession's

    def _client_range(self) -> tuple[int, int]:
        raise NotImplementedError  # SimSession's

    def vmm_create(self, dev: int, size: int) -> object:
        return SimPhysical(self._sim_device(dev), size)

    def vmm_release(self, phys: object) -> None:
        _physical(phys, "cuMemRelease").release()

    def vmm_map(self, addr: int, size: int, offset: int, phys: object) -> None:
        p = _physical(phys, "cuMemMap")
        if p.released or offset + size > p.size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuMemMap: bytes [{offset:#x}, {offset + size:#x}) of a released or "
                f"{p.size:#x}-byte allocation",
            )
        shadow = shadow_of(*self._client_range())
        view = shadow.map(addr, size, p.fd, offset)
        try:
            self.memory.map(addr, size, p.device, view, shadow)
        except BaseException:
            shadow.unmap(addr, size)
            raise

    def vmm_unmap(self, addr: int, size: int) -> None:
        self._drain()  # work queued before the unmap finishes first
        self.memory.unmap(addr)
        shadow_of(*self._client_range()).unmap(addr, size)

    def vmm_set_access(self, addr: int, size: int, dev: int, flags: int) -> None:
        self.memory.check(addr, size, "cuMemSetAccess")


def _physical(phys: object, call: str) -> SimPhysical:
    if isinstance(phys, SimPhysical):
        return phys
    raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {phys!r} is not a physical allocation")
