"""What the sim device does for launch attributes, occupancy of clusters and dynamic shared
memory, and several devices (a mixin of `SimSession`; the numbers are the H200 model's).

Clusters: a cluster's blocks must all be resident at once within one GPC; the model counts a
GPC as 132 / 8 SMs (rounded down) and allows 8 blocks a cluster (16 when the function allows
non-portable sizes), as an sm_90 part does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    BackendSession,
    CudaError,
    LaunchConfig,
)
from cricket_server.backends.sim import device as dv

CUDA_ERROR_INVALID_CLUSTER_SIZE = 912
GPCS = 8
PORTABLE_CLUSTER = 8
NON_PORTABLE_CLUSTER = 16
FA_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 16  # CUfunction_attribute

# CUlaunchAttributeID
LA_IGNORE = 0
LA_COOPERATIVE = 2
LA_SYNCHRONIZATION_POLICY = 3
LA_CLUSTER_DIMENSION = 4
LA_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5
LA_PROGRAMMATIC_STREAM_SERIALIZATION = 6
LA_PRIORITY = 8
LA_MEM_SYNC_DOMAIN = 10
LA_PREFERRED_SHARED_MEMORY_CARVEOUT = 14
HINTS = frozenset(
    {
        LA_IGNORE,
        LA_SYNCHRONIZATION_POLICY,
        LA_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        LA_PROGRAMMATIC_STREAM_SERIALIZATION,
        LA_PRIORITY,
        LA_MEM_SYNC_DOMAIN,
        LA_PREFERRED_SHARED_MEMORY_CARVEOUT,
    }
)


def cluster_of(config: LaunchConfig) -> tuple[int, int, int] | None:
    """The CLUSTER_DIMENSION attribute's (x, y, z), if given."""
    for attr_id, x, y, z in config.attrs:
        if attr_id == LA_CLUSTER_DIMENSION:
            return (x, y, z)
    return None


class SimLaunchVariants(BackendSession):
    """cuLaunchKernelEx, cuOccupancyAvailableDynamicSMemPerBlock/MaxActiveClusters on sim."""

    _function: Callable[..., Any]  # SimSession's

    def _cluster_size(self, call: str, func: object, config: LaunchConfig) -> int:
        dims = cluster_of(config) or (1, 1, 1)
        if min(dims) <= 0:
            raise CudaError(CUDA_ERROR_INVALID_CLUSTER_SIZE, f"{call}: cluster {dims} has a zero")
        if any(g % c for g, c in zip(config.grid, dims, strict=True)):
            raise CudaError(
                CUDA_ERROR_INVALID_CLUSTER_SIZE,
                f"{call}: grid {config.grid} is not a multiple of cluster {dims}",
            )
        size = dims[0] * dims[1] * dims[2]
        fn = self._function(func, call)
        most = (
            NON_PORTABLE_CLUSTER
            if fn.attrs.get(FA_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
            else PORTABLE_CLUSTER
        )
        if size > most:
            raise CudaError(
                CUDA_ERROR_INVALID_CLUSTER_SIZE,
                f"{call}: a cluster of {size} blocks, at most {most}",
            )
        return size

    def launch_ex(
        self, func: object, config: LaunchConfig, stream: object | None, params: memoryview
    ) -> None:
        call = "cuLaunchKernelEx"
        cooperative = False
        for attr_id, x, _y, _z in config.attrs:
            if attr_id == LA_COOPERATIVE:
                cooperative = bool(x)
            elif attr_id != LA_CLUSTER_DIMENSION and attr_id not in HINTS:
                raise CudaError(
                    CUDA_ERROR_NOT_SUPPORTED,
                    f"{call}: launch attribute {attr_id} is not supported by the sim backend",
                )
        if cluster_of(config) is not None:
            self._cluster_size(call, func, config)
        self.launch(func, config.grid, config.block, config.shared_mem, stream, params, cooperative)

    def occupancy_available_dynamic_smem(self, func: object, blocks: int, block_size: int) -> int:
        call = "cuOccupancyAvailableDynamicSMemPerBlock"
        fn = self._function(func, call)
        if blocks <= 0 or block_size <= 0:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {blocks} blocks of {block_size} threads"
            )
        if dv.max_active_blocks(block_size, fn.info.num_regs, fn.info.shared_bytes) < blocks:
            return 0
        per_block = dv.SHARED_PER_SM // blocks - dv.RESERVED_SHARED_PER_BLOCK
        per_block -= fn.info.shared_bytes
        most = dv.SHARED_PER_BLOCK_OPTIN - fn.info.shared_bytes
        return max(0, min(per_block, most))

    def occupancy_max_potential_cluster_size(self, func: object, config: LaunchConfig) -> int:
        call = "cuOccupancyMaxPotentialClusterSize"
        fn = self._function(func, call)
        most = (
            NON_PORTABLE_CLUSTER
            if fn.attrs.get(FA_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
            else PORTABLE_CLUSTER
        )
        threads = config.block[0] * config.block[1] * config.block[2]
        per_sm = dv.max_active_blocks(
            threads, fn.info.num_regs, fn.info.shared_bytes + config.shared_mem
        )
        return min(most, per_sm * (dv.SM_COUNT // GPCS))

    def occupancy_max_active_clusters(self, func: object, config: LaunchConfig) -> int:
        call = "cuOccupancyMaxActiveClusters"
        size = self._cluster_size(call, func, config)
        fn = self._function(func, call)
        threads = config.block[0] * config.block[1] * config.block[2]
        per_sm = dv.max_active_blocks(
            threads, fn.info.num_regs, fn.info.shared_bytes + config.shared_mem
        )
        per_gpc = per_sm * (dv.SM_COUNT // GPCS)
        return GPCS * (per_gpc // size)
