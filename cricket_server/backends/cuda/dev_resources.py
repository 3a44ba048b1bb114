"""Device resources and green contexts on the cuda backend (cuda-python 13).

Resources are the driver's CUdevResource structs (kept by the session: they hold more than
their visible fields); splits and green contexts are the driver's. A green context is made
with cuDevResourceGenerateDesc and cuGreenCtxCreate and answers cuGreenCtxGetDevResource;
the session runs the work of its context on the device's context, like any context of the
session (modules and memory are the session's on that device), so its streams are not held to
the green context's SMs on this backend (docs/internals.md).
"""

from __future__ import annotations

from typing import Any

from ..base import CudaError
from ..dev_resources import DevResource
from ._driver import call, driver

__all__ = ["CudaDevResources"]

_SM = driver.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM


def _resource(r: Any) -> DevResource:
    sm = r.sm
    return DevResource(
        int(r.type), int(sm.smCount), int(getattr(sm, "minSmPartitionSize", 0)),
        int(getattr(sm, "smCoscheduledAlignment", 0)), int(getattr(sm, "flags", 0)), obj=r,
    )  # fmt: skip


class CudaDevResources:
    """The device-resource and green-context methods of `CudaSession`."""

    _state: Any

    def _greens(self) -> dict[int, Any]:
        made = self.__dict__.get("_green_objects")
        if made is None:
            made = self.__dict__["_green_objects"] = {}
        return made

    def dev_resource(self, dev: int) -> DevResource:
        self._state()
        return _resource(call(driver.cuDeviceGetDevResource, driver.CUdevice(dev), _SM))

    def sm_split(
        self, res: DevResource, wanted: int, flags: int, min_count: int
    ) -> tuple[list[DevResource], int, DevResource]:
        self._state()
        groups, count, remainder = call(
            driver.cuDevSmResourceSplitByCount, wanted, res.obj, flags, min_count
        )
        # the bindings' list may be longer than what the driver wrote (count groups, none
        # for a count query)
        made = list(groups or [])[: min(int(wanted), int(count))]
        return [_resource(g) for g in made], int(count), _resource(remainder)

    def green_ctx_create(self, resources: list[DevResource], dev: int, flags: int) -> object:
        self._state()
        try:
            desc = call(
                driver.cuDevResourceGenerateDesc, [r.obj for r in resources], len(resources)
            )
            green = call(driver.cuGreenCtxCreate, desc, driver.CUdevice(dev), flags)
        finally:
            self._state()
        self._greens()[int(green)] = green
        return green

    def green_ctx_destroy(self, green: object) -> None:
        try:
            call(driver.cuGreenCtxDestroy, green)
        finally:
            self._greens().pop(int(green), None)  # type: ignore[call-overload]
            self._state()

    def green_ctx_resource(self, green: object) -> DevResource:
        return _resource(call(driver.cuGreenCtxGetDevResource, green, _SM))

    def release_green_ctxs(self) -> list[CudaError]:
        errors: list[CudaError] = []
        for green in list(self._greens().values()):
            try:
                call(driver.cuGreenCtxDestroy, green)
            except CudaError as exc:
                errors.append(exc)
        self._greens().clear()
        return errors
