"""`CudaBackend`: the process-wide part of the `cuda` backend (device queries, the address
reservation) and the factory of `CudaSession`s."""

from __future__ import annotations

from typing import Any

from ..base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    Backend,
    BackendSession,
    CudaError,
)
from . import fast_launch
from ._driver import CudaUnavailable, call, driver, enum_value
from .context import forget_current
from .device_facts import CudaDeviceFacts
from .queries import texture_1d_linear_max_width
from .session import CudaSession
from .vmm import (
    DEFAULT_RESERVE_BASE,
    DEFAULT_RESERVE_SIZE,
    AddressReservation,
    allocation_granularity,
)

__all__ = ["DEFAULT_STAGING_LIMIT", "CudaBackend"]

DEFAULT_STAGING_LIMIT = 256 << 20  # pinned staging memory per session and device


class CudaBackend(CudaDeviceFacts, Backend):
    """The GPUs of this machine through cuda-python's driver API.

    `reserve_base`/`reserve_size`: the device virtual address range to reserve for client
    memory. The driver may place it elsewhere: a fresh server adopts that base; with
    `require_base=True` (restore) that is an error. Raises `CudaUnavailable` when no GPU
    answers."""

    name = "cuda"

    def __init__(
        self,
        *,
        reserve_base: int = DEFAULT_RESERVE_BASE,
        reserve_size: int = DEFAULT_RESERVE_SIZE,
        require_base: bool = False,
        staging_limit: int = DEFAULT_STAGING_LIMIT,
    ) -> None:
        self._count = _probe()
        # Per-call lookups done once: CUdevice of each ordinal, cuda-python's enum of each
        # attribute asked for (both fixed for the process's life).
        self._devices: dict[int, Any] = {}
        self._attributes: dict[int, Any] = {}
        self._staging_limit = staging_limit
        self._granularity: dict[int, int] = {}
        self._primary: Any = None
        try:
            self.reservation = self._reserve(reserve_base, reserve_size, require_base)
        except CudaError as exc:
            if exc.code != CUDA_ERROR_INVALID_CONTEXT:
                raise
            # This driver wants a context for VMM queries: use device 0's primary context.
            self._primary = call(driver.cuDevicePrimaryCtxRetain, self.device_handle(0))
            call(driver.cuCtxSetCurrent, self._primary)
            forget_current()
            self.reservation = self._reserve(reserve_base, reserve_size, require_base)
        fast_launch.load()  # the C launch loops built and opened now, not in a first batch

    def _reserve(self, base: int, size: int, require_base: bool) -> AddressReservation:
        alignment = max(self.granularity(dev) for dev in range(self._count))
        return AddressReservation.reserve(base, size, alignment, require_base=require_base)

    # -- what the session layer needs for its AddressArena -------------------------------
    def granularity(self, dev: int) -> int:
        """VMM allocation granularity of `dev` (2 MiB on an H200)."""
        g = self._granularity.get(dev)
        if g is None:
            self.device_handle(dev)
            g = self._granularity[dev] = allocation_granularity(dev)
        return g

    def address_space(self) -> tuple[int, int, int]:
        """(base, size, granularity) of the reserved range: `AddressArena(*address_space())`."""
        granularity = max(self.granularity(dev) for dev in range(self._count))
        return self.reservation.base, self.reservation.size, granularity

    def device_handle(self, dev: int) -> Any:
        handle = self._devices.get(dev)
        if handle is None:
            if not 0 <= dev < self._count:
                raise CudaError(
                    CUDA_ERROR_INVALID_DEVICE,
                    f"cuDeviceGet: device {dev} does not exist ({self._count} devices)",
                )
            handle = self._devices[dev] = call(driver.cuDeviceGet, dev, what=f"device {dev}")
        return handle

    # -- Backend --------------------------------------------------------------------------
    def driver_version(self) -> int:
        return int(call(driver.cuDriverGetVersion))

    def runtime_version(self) -> int:
        return int(driver.CUDA_VERSION)

    def device_count(self) -> int:
        return self._count

    def device_name(self, dev: int) -> str:
        raw = call(driver.cuDeviceGetName, 256, self.device_handle(dev))
        return bytes(raw).split(b"\0", 1)[0].decode()

    def device_attribute(self, attrib: int, dev: int) -> int:
        attr = self._attributes.get(attrib)
        if attr is None:
            attr = enum_value(driver.CUdevice_attribute, attrib, "cuDeviceGetAttribute")
            self._attributes[attrib] = attr
        return int(call(driver.cuDeviceGetAttribute, attr, self.device_handle(dev)))

    def device_total_mem(self, dev: int) -> int:
        return int(call(driver.cuDeviceTotalMem, self.device_handle(dev)))

    def device_uuid(self, dev: int) -> bytes:
        return bytes(call(driver.cuDeviceGetUuid, self.device_handle(dev)).bytes)

    def device_pci_bus_id(self, dev: int) -> str:
        raw = call(driver.cuDeviceGetPCIBusId, 64, self.device_handle(dev))
        return bytes(raw).split(b"\0", 1)[0].decode()

    def texture_1d_linear_max_width(self, fmt: int, channels: int, dev: int) -> int:
        return texture_1d_linear_max_width(self.device_handle(dev), fmt, channels)

    def can_access_peer(self, dev: int, peer: int) -> bool:
        handles = self.device_handle(dev), self.device_handle(peer)
        return bool(call(driver.cuDeviceCanAccessPeer, *handles))

    def p2p_attribute(self, attrib: int, src: int, dst: int) -> int:
        attr = enum_value(driver.CUdevice_P2PAttribute, attrib, "cuDeviceGetP2PAttribute")
        handles = self.device_handle(src), self.device_handle(dst)
        return int(call(driver.cuDeviceGetP2PAttribute, attr, *handles))

    def open_session(self, *, staging_limit: int | None = None) -> BackendSession:
        limit = self._staging_limit if staging_limit is None else staging_limit
        return CudaSession(self, limit)

    def close(self) -> None:
        """Free the address reservation (every session's memory must be unmapped by now)."""
        self.reservation.free()
        if self._primary is not None:
            call(driver.cuDevicePrimaryCtxRelease, self.device_handle(0))
            self._primary = None


def _probe() -> int:
    """cuInit and the device count; CudaUnavailable when there is no driver or no GPU."""
    try:
        call(driver.cuInit, 0)
        count = int(call(driver.cuDeviceGetCount))
    except CudaError as exc:
        raise CudaUnavailable(f"cuda backend: no GPU answers: {exc}") from exc
    except Exception as exc:  # no libcuda: cuda-python raises DynamicLibNotFoundError
        raise CudaUnavailable(f"cuda backend: the CUDA driver cannot be loaded: {exc}") from exc
    if count == 0:
        raise CudaUnavailable("cuda backend: the CUDA driver sees no GPU")
    return count


def gpu_available() -> bool:
    """True when the CUDA driver loads and sees at least one GPU."""
    try:
        _probe()
    except CudaUnavailable:
        return False
    return True
