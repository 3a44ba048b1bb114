"""The cuda backend's launch attributes (cuLaunchKernelEx), cluster and dynamic shared memory
occupancy, stream attributes, cache configuration and peer access (a mixin of `CudaSession`).

Peer access is enabled between the session's real contexts of two devices; several virtual
contexts of one session share them, so each (device, peer) pair is counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import CUDA_ERROR_INVALID_VALUE, BackendSession, CudaError, LaunchConfig
from ._driver import call, driver, enum_value

# CUlaunchAttributeID -> how its (x, y, z) fills CUlaunchAttributeValue
_SCALARS: dict[int, tuple[str, Any]] = {
    2: ("cooperative", int),
    3: ("syncPolicy", lambda v: driver.CUsynchronizationPolicy(v)),
    5: ("clusterSchedulingPolicyPreference", lambda v: driver.CUclusterSchedulingPolicy(v)),
    6: ("programmaticStreamSerializationAllowed", int),
    8: ("priority", int),
    10: ("memSyncDomain", lambda v: driver.CUlaunchMemSyncDomain(v)),
    14: ("sharedMemCarveout", int),
}
_CLUSTER = (4, 11)  # CLUSTER_DIMENSION, PREFERRED_CLUSTER_DIMENSION


def _attribute(call_name: str, attr_id: int, x: int, y: int, z: int) -> Any:
    attr = driver.CUlaunchAttribute()
    attr.id = enum_value(driver.CUlaunchAttributeID, attr_id, call_name)
    if attr_id in _CLUSTER:
        dim = attr.value.clusterDim if attr_id == 4 else attr.value.preferredClusterDim
        dim.x, dim.y, dim.z = x, y, z
    elif attr_id in _SCALARS:
        name, convert = _SCALARS[attr_id]
        try:
            setattr(attr.value, name, convert(x))
        except ValueError:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call_name}: {x} is not a value of {name}"
            ) from None
    elif attr_id != 0:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE, f"{call_name}: launch attribute {attr_id} takes no scalar"
        )
    return attr


def launch_config(call_name: str, config: LaunchConfig, hstream: Any) -> Any:
    """A cuda-python CUlaunchConfig of `config` on stream `hstream`."""
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = config.grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = config.block
    cfg.sharedMemBytes = config.shared_mem
    cfg.hStream = hstream
    attrs = [_attribute(call_name, *a) for a in config.attrs]
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    return cfg


class CudaLaunchVariants(BackendSession):
    """See the module docstring."""

    # CudaSession's
    _dev: int
    _layouts: Any
    _state: Callable[..., Any]
    _stream: Callable[..., Any]
    stream_attributes_set: Callable[[object | None], None]

    def launch_ex(
        self, func: object, config: LaunchConfig, stream: object | None, params: memoryview
    ) -> None:
        self._state()
        address = self._layouts.buffer(func).fill(params)
        cfg = launch_config("cuLaunchKernelEx", config, self._stream(stream))
        call(driver.cuLaunchKernelEx, cfg, func, address, 0)

    def occupancy_available_dynamic_smem(self, func: object, blocks: int, block_size: int) -> int:
        self._state()
        return int(call(driver.cuOccupancyAvailableDynamicSMemPerBlock, func, blocks, block_size))

    def occupancy_max_active_clusters(self, func: object, config: LaunchConfig) -> int:
        self._state()
        cfg = launch_config("cuOccupancyMaxActiveClusters", config, driver.CUstream(0))
        return int(call(driver.cuOccupancyMaxActiveClusters, func, cfg))

    def occupancy_max_potential_cluster_size(self, func: object, config: LaunchConfig) -> int:
        self._state()
        cfg = launch_config("cuOccupancyMaxPotentialClusterSize", config, driver.CUstream(0))
        return int(call(driver.cuOccupancyMaxPotentialClusterSize, func, cfg))

    def ctx_set_cache_config(self, config: int) -> None:
        self._state()
        self.forget_repeated_batches()
        cfg = enum_value(driver.CUfunc_cache, config, "cuCtxSetCacheConfig")
        call(driver.cuCtxSetCacheConfig, cfg)

    def stream_set_attribute(self, stream: object | None, attr: int, value: int) -> None:
        self._state()
        name = "cuStreamSetAttribute"
        holder = _attribute(name, attr, value, 0, 0)
        attr_id = enum_value(driver.CUstreamAttrID, attr, name)
        val = driver.CUstreamAttrValue()
        if attr in _SCALARS:
            field = _SCALARS[attr][0]
            setattr(val, field, getattr(holder.value, field))
        call(driver.cuStreamSetAttribute, self._stream(stream), attr_id, val)
        self.stream_attributes_set(stream)

    # -- peers ------------------------------------------------------------------------------
    def _peer_counts(self) -> dict[tuple[int, int], int]:
        peers = self.__dict__.get("_peers")
        if peers is None:
            peers = self.__dict__["_peers"] = {}
        return peers

    def enable_peer_access(self, peer_dev: int) -> None:
        dev = self._dev
        counts = self._peer_counts()
        if counts.get((dev, peer_dev), 0) == 0:
            peer = self._state(peer_dev).context.handle
            self._state()
            call(driver.cuCtxEnablePeerAccess, peer, 0)
        counts[(dev, peer_dev)] = counts.get((dev, peer_dev), 0) + 1

    def disable_peer_access(self, peer_dev: int) -> None:
        dev = self._dev
        counts = self._peer_counts()
        left = counts.get((dev, peer_dev), 0) - 1
        if left > 0:
            counts[(dev, peer_dev)] = left
            return
        counts.pop((dev, peer_dev), None)
        peer = self._state(peer_dev).context.handle
        self._state()
        call(driver.cuCtxDisablePeerAccess, peer)

    def memcpy_peer(
        self, dst: int, dst_dev: int, src: int, src_dev: int, size: int, stream: object | None
    ) -> None:
        dst_ctx = self._state(dst_dev).context.handle
        src_ctx = self._state(src_dev).context.handle
        self._state()
        d, s = driver.CUdeviceptr(dst), driver.CUdeviceptr(src)
        if stream is None:
            call(driver.cuMemcpyPeer, d, dst_ctx, s, src_ctx, size)
        else:
            call(driver.cuMemcpyPeerAsync, d, dst_ctx, s, src_ctx, size, self._stream(stream))
