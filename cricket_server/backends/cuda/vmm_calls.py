"""The client's own virtual memory management calls on the GPU (cuMemCreate, cuMemMap,
cuMemSetAccess, cuMemUnmap, cuMemRelease): the session layer has checked everything and
chosen every address inside the server's reservation (D4); these only call the driver."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base import CUDA_ERROR_INVALID_VALUE, CudaError
from ._driver import call, driver
from .vmm import _access_desc, _allocation_prop


@dataclass
class CudaPhysical:
    """One cuMemCreate of a client: the driver's handle and its device."""

    handle: Any
    dev: int
    size: int


class CudaVmm:
    """The vmm_ methods of `CudaSession` (which provides `_activate(dev)`, making the
    session's context on `dev` current, and `_dev`, the current device)."""

    _activate: Callable[[int], None]
    _dev: int

    def vmm_create(self, dev: int, size: int) -> object:
        self._activate(dev)
        what = f"{size:#x} bytes on device {dev}"
        handle = call(driver.cuMemCreate, size, _allocation_prop(dev), 0, what=what)
        return CudaPhysical(handle, dev, size)

    def vmm_release(self, phys: object) -> None:
        p = _physical(phys, "cuMemRelease")
        self._activate(p.dev)
        call(driver.cuMemRelease, p.handle, what=f"{p.size:#x} bytes on device {p.dev}")

    def vmm_map(self, addr: int, size: int, offset: int, phys: object) -> None:
        p = _physical(phys, "cuMemMap")
        self._activate(p.dev)
        what = f"{size:#x} bytes at {addr:#x}, offset {offset:#x}"
        call(driver.cuMemMap, driver.CUdeviceptr(addr), size, offset, p.handle, 0, what=what)

    def vmm_unmap(self, addr: int, size: int) -> None:
        self._activate(self._dev)
        call(driver.cuMemUnmap, driver.CUdeviceptr(addr), size, what=f"{size:#x} bytes at {addr:#x}")

    def vmm_set_access(self, addr: int, size: int, dev: int, flags: int) -> None:
        self._activate(dev)
        desc = _access_desc(dev)
        desc.flags = driver.CUmemAccess_flags(flags)
        what = f"{size:#x} bytes at {addr:#x} for device {dev}"
        call(driver.cuMemSetAccess, driver.CUdeviceptr(addr), size, [desc], 1, what=what)


def _physical(phys: object, call_name: str) -> CudaPhysical:
    if isinstance(phys, CudaPhysical):
        return phys
    raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call_name}: {phys!r} is not a physical allocation")
