"""Device resources and green contexts on the sim backend.

A device's SM resource is its MULTIPROCESSOR_COUNT SMs (132 on the modelled H200) with the
split rule of its compute capability (`cricket_server.backends.dev_resources`). A green
context is bookkeeping: the SMs it was given; work in it runs like work in any context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)
from cricket_server.backends.dev_resources import (
    RESOURCE_TYPE_SM,
    DevResource,
    partition_rule,
    split_by_count,
)

__all__ = ["SimGreenCtx", "SimDevResources"]

ATTR_SM_COUNT, ATTR_CC_MAJOR = 16, 75
GREEN_CTX_FLAGS = 0x1  # CU_GREEN_CTX_DEFAULT_STREAM


@dataclass
class SimGreenCtx:
    dev: int
    resource: DevResource
    live: bool = True


class SimDevResources:
    """The device-resource and green-context methods of `SimSession`."""

    backend: Any

    def dev_resource(self, dev: int) -> DevResource:
        device = self.backend.device(dev)
        minimum, alignment = partition_rule(device.attribute(ATTR_CC_MAJOR))
        return DevResource(
            RESOURCE_TYPE_SM, device.attribute(ATTR_SM_COUNT), minimum, alignment, 0, obj=dev
        )

    def sm_split(
        self, res: DevResource, wanted: int, flags: int, min_count: int
    ) -> tuple[list[DevResource], int, DevResource]:
        count, size, left = split_by_count(
            res.sm_count, res.min_partition, res.alignment, wanted, flags, min_count
        )
        def part(n: int) -> DevResource:
            return DevResource(RESOURCE_TYPE_SM, n, res.min_partition, res.alignment, 0, res.obj)

        groups = [part(size) for _ in range(count)] if wanted else []
        return groups, count, part(left)

    def green_ctx_create(self, resources: list[DevResource], dev: int, flags: int) -> object:
        call = "cuGreenCtxCreate"
        if flags != GREEN_CTX_FLAGS:  # as the driver: the default stream flag is required
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: flags must be CU_GREEN_CTX_DEFAULT_STREAM"
            )
        self.backend.device(dev)
        if any(r.obj != dev for r in resources):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: the resources are not all of device {dev}"
            )
        first = resources[0]
        total = sum(r.sm_count for r in resources)
        return SimGreenCtx(
            dev, DevResource(RESOURCE_TYPE_SM, total, first.min_partition, first.alignment, 0, dev)
        )

    def green_ctx_destroy(self, green: object) -> None:
        self._green(green, "cuGreenCtxDestroy").live = False

    def green_ctx_resource(self, green: object) -> DevResource:
        return self._green(green, "cuGreenCtxGetDevResource").resource

    @staticmethod
    def _green(green: object, call: str) -> SimGreenCtx:
        if isinstance(green, SimGreenCtx) and green.live:
            return green
        raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {green!r} is not a live green context")
