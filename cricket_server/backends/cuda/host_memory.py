"""Host memory page-locked in place (cuMemHostRegister) so copies DMA straight from and to it.

A same-host client's shared segment (`cricket_server.datapath.shm`) is mapped for the life of
its connection; registered once, every copy through it runs at pinned-memory speed with no
staging copy. `HostRegistrations` is one session's book of such ranges: it registers with
the context of the device named (CU_MEMHOSTREGISTER_PORTABLE: pinned for every context),
unregisters with that context current again, and releases whatever is left when the session
closes, before its contexts are destroyed. The owner of the memory must unregister before it
unmaps it.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..base import CUDA_ERROR_INVALID_VALUE, CudaError
from ._driver import call, driver

__all__ = ["HostRegistration", "HostRegistrations", "buffer_address"]


def buffer_address(view: memoryview) -> int:
    """The address of the first byte of a writable, contiguous buffer (TypeError otherwise).
    Holds no export of `view` afterwards, so its owner can still release and unmap it."""
    holder = (ctypes.c_char * view.nbytes).from_buffer(view)
    try:
        return ctypes.addressof(holder)
    finally:
        del holder


@dataclass(frozen=True, eq=False)
class HostRegistration:
    """One registered range: the token `CudaSession.register_host` hands out."""

    address: int
    size: int
    dev: int  # the device whose context registered it (and unregisters it)


class HostRegistrations:
    """The ranges one session has registered. `activate(dev)` makes that device's context of
    the session current on the calling thread."""

    def __init__(self, activate: Callable[[int], None]) -> None:
        self._activate = activate
        self._live: dict[int, HostRegistration] = {}  # by address
        self._lock = threading.Lock()  # the connection's end may race the session's close

    def __len__(self) -> int:
        return len(self._live)

    def register(self, view: memoryview, dev: int) -> HostRegistration:
        """Page-lock `view` (writable and contiguous); CudaError when the driver refuses."""
        size = view.nbytes
        try:
            address = buffer_address(view)
        except TypeError as exc:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuMemHostRegister: host memory not usable: {exc}"
            ) from None
        self._activate(dev)
        flags = driver.CU_MEMHOSTREGISTER_PORTABLE
        call(driver.cuMemHostRegister, address, size, flags, what=f"{size} bytes at {address:#x}")
        registration = HostRegistration(address, size, dev)
        with self._lock:
            self._live[address] = registration
        return registration

    def unregister(self, token: object) -> None:
        """cuMemHostUnregister; nothing for a token not (or no longer) registered here."""
        with self._lock:
            registration = self._take(token)
        if registration is not None:
            self._release(registration)

    def release_all(self) -> list[CudaError]:
        """Unregister everything left (the session closes); the failures, after trying all."""
        with self._lock:
            left = list(self._live.values())
            self._live.clear()
        errors: list[CudaError] = []
        for registration in left:
            try:
                self._release(registration)
            except CudaError as exc:
                errors.append(exc)
        return errors

    def address(self, call_name: str, token: object, offset: int, size: int) -> int:
        """The host address of bytes [offset, offset + size) of a live registration."""
        registration = (
            self._live.get(token.address) if isinstance(token, HostRegistration) else None
        )
        if registration is not token or registration is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call_name}: host memory {token!r} is not registered with this session",
            )
        if offset < 0 or size < 0 or offset + size > registration.size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call_name}: bytes {offset}..{offset + size} outside the "
                f"{registration.size}-byte registered host range",
            )
        return registration.address + offset

    def _take(self, token: object) -> HostRegistration | None:
        if not isinstance(token, HostRegistration) or self._live.get(token.address) is not token:
            return None
        return self._live.pop(token.address)

    def _release(self, registration: HostRegistration) -> None:
        self._activate(registration.dev)
        call(
            driver.cuMemHostUnregister,
            registration.address,
            what=f"{registration.size} bytes at {registration.address:#x}",
        )
