"""Device memory through the CUDA virtual memory API (D4).

`AddressReservation` is the process-wide virtual address range (cuMemAddressReserve) inside
which the server places every client allocation. The driver treats the requested base as a
hint, so the returned base is always compared: a fresh server adopts whatever it got, a
restoring server (`require_base=True`) fails loudly, because its allocations must come back at
their old addresses.

`VmmBacking` is the `ChunkBacking` of one session on one device: physical memory from
cuMemCreate mapped at a server-chosen address of the reservation, read/write for the device
(and so for every context on that device).
"""

from __future__ import annotations

from collections.abc import Callable

from ..base import CUDA_ERROR_INVALID_VALUE, CudaError
from ._driver import call, driver

__all__ = [
    "DEFAULT_RESERVE_BASE",
    "DEFAULT_RESERVE_SIZE",
    "AddressReservation",
    "VmmBacking",
    "allocation_granularity",
]

# Measured on the H200 machine (driver 580): 1 TiB reservations fail with OUT_OF_MEMORY;
# bases near 0x7f.. collide with host mappings and are honoured only sometimes (64 and 256 GiB
# yes, 128 and 512 GiB no); 256 GiB at 0x600000000000 was honoured. 256 GiB exceeds the
# device memory (141 GB), so every client allocation fits.
DEFAULT_RESERVE_BASE = 0x600000000000
DEFAULT_RESERVE_SIZE = 1 << 38  # 256 GiB


def _allocation_prop(dev: int) -> driver.CUmemAllocationProp:
    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = dev
    return prop


def _access_desc(dev: int) -> driver.CUmemAccessDesc:
    desc = driver.CUmemAccessDesc()
    desc.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    desc.location.id = dev
    desc.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    return desc


def allocation_granularity(dev: int) -> int:
    """The minimum VMM granularity of pinned device memory on `dev` (2 MiB on an H200)."""
    return int(
        call(
            driver.cuMemGetAllocationGranularity,
            _allocation_prop(dev),
            driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            what=f"device {dev}",
        )
    )


class AddressReservation:
    """A reserved device virtual address range [base, base + size)."""

    def __init__(self, base: int, size: int) -> None:
        self.base = base
        self.size = size
        self._freed = False

    @classmethod
    def reserve(
        cls, base: int, size: int, alignment: int, *, require_base: bool = False
    ) -> AddressReservation:
        """cuMemAddressReserve at `base` (a hint); with `require_base`, anything else is an
        error (CUDA_ERROR_INVALID_VALUE) and the range the driver gave is freed again."""
        got = int(
            call(
                driver.cuMemAddressReserve,
                size,
                alignment,
                driver.CUdeviceptr(base),
                0,
                what=f"{size:#x} bytes at {base:#x}",
            )
        )
        if require_base and got != base:
            call(driver.cuMemAddressFree, driver.CUdeviceptr(got), size)
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuMemAddressReserve: asked for {size:#x} bytes at {base:#x}, the driver "
                f"offered {got:#x}; a restore needs the original addresses",
            )
        return cls(got, size)

    def contains(self, addr: int, size: int) -> bool:
        return self.base <= addr and addr + size <= self.base + self.size

    def free(self) -> None:
        if not self._freed:
            self._freed = True
            call(driver.cuMemAddressFree, driver.CUdeviceptr(self.base), self.size)


class VmmBacking:
    """Maps physical memory of one device into the reservation (one per session and device).

    `activate` makes the session's context for the device current before each driver call."""

    def __init__(
        self,
        dev: int,
        reservation: AddressReservation,
        granularity: int,
        activate: Callable[[], None],
    ) -> None:
        self.dev = dev
        self.granularity = granularity
        self._reservation = reservation
        self._activate = activate
        self._prop = _allocation_prop(dev)
        self._access = _access_desc(dev)

    def map_chunk(self, addr: int, size: int) -> object:
        self._check_range("map_chunk", addr, size)
        self._activate()
        what = f"{size:#x} bytes at {addr:#x} on device {self.dev}"
        handle = call(driver.cuMemCreate, size, self._prop, 0, what=what)
        try:
            call(driver.cuMemMap, driver.CUdeviceptr(addr), size, 0, handle, 0, what=what)
        except CudaError:
            call(driver.cuMemRelease, handle)
            raise
        try:
            call(
                driver.cuMemSetAccess, driver.CUdeviceptr(addr), size, [self._access], 1, what=what
            )
        except CudaError:
            call(driver.cuMemUnmap, driver.CUdeviceptr(addr), size)
            call(driver.cuMemRelease, handle)
            raise
        return handle

    def unmap_chunk(self, addr: int, size: int, token: object) -> None:
        self._activate()
        what = f"{size:#x} bytes at {addr:#x} on device {self.dev}"
        call(driver.cuMemUnmap, driver.CUdeviceptr(addr), size, what=what)
        call(driver.cuMemRelease, token, what=what)

    def _check_range(self, op: str, addr: int, size: int) -> None:
        g = self.granularity
        if size <= 0 or addr % g or size % g:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{op}: {size:#x} bytes at {addr:#x} is not a multiple of the granularity {g:#x}",
            )
        if not self._reservation.contains(addr, size):
            r = self._reservation
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{op}: {size:#x} bytes at {addr:#x} lie outside the reserved range "
                f"{r.base:#x}..{r.base + r.size:#x}",
            )
