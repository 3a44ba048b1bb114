"""Per-session CUDA contexts and the per-thread record of which one is current.

Server threads serve one connection each, and a session may be touched from more than one
thread over its life, so "make this context current" is cheap when it already is: each thread
remembers the serial number of the context it last made current, and cuCtxSetCurrent runs only
when that differs. Serial numbers are never reused, so a destroyed context whose handle value
the driver hands out again cannot be mistaken for the new one.
"""

from __future__ import annotations

import itertools
import threading

from ._driver import call, driver

__all__ = ["DeviceContext", "forget_current"]

_serials = itertools.count(1)
_current = threading.local()


def forget_current() -> None:
    """Say that this thread's current context is unknown (after a direct cuCtxSetCurrent)."""
    _current.serial = None


class DeviceContext:
    """One real context (cuCtxCreate) on one device, owned by one session."""

    def __init__(self, dev: int) -> None:
        self.dev = dev
        device = call(driver.cuDeviceGet, dev, what=f"device {dev}")
        # CUDA 13: cuCtxCreate(ctxCreateParams, flags, dev); the new context becomes current.
        self.handle = call(driver.cuCtxCreate, None, 0, device, what=f"device {dev}")
        self.serial = next(_serials)
        _current.serial = self.serial

    def make_current(self) -> None:
        if getattr(_current, "serial", None) != self.serial:
            call(driver.cuCtxSetCurrent, self.handle)
            _current.serial = self.serial

    def destroy(self) -> None:
        if getattr(_current, "serial", None) == self.serial:
            _current.serial = None
        call(driver.cuCtxDestroy, self.handle, what=f"context of device {self.dev}")
