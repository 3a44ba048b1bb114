"""The procedures of flags, attributes and launch variants (560-579) and of several devices
(580-599); a mixin of `CricketService`, delegating to `SessionFlags`/`SessionPeers`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cricket_server.session_flags import launch_config
from rpc_spec import cricket_rpc as proto

if TYPE_CHECKING:
    from cricket_server.session import Session


class FlagsProcedures:
    """Needs `CricketService._status`/`_result`."""

    _status: Any
    _result: Any

    # -- contexts ---------------------------------------------------------------------------
    def CU_CTX_GET_FLAGS(self, ctx: Any) -> proto.int_result:
        return self._result(proto.int_result, ctx, "cuCtxGetFlags", lambda s: s.ctx_get_flags())

    def CU_CTX_SET_FLAGS(self, ctx: Any, flags: int) -> int:
        return self._status(ctx, "cuCtxSetFlags", lambda s: s.ctx_set_flags(flags))

    def CU_CTX_GET_CACHE_CONFIG(self, ctx: Any) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuCtxGetCacheConfig", lambda s: s.ctx_get_cache_config()
        )

    def CU_CTX_SET_CACHE_CONFIG(self, ctx: Any, config: int) -> int:
        return self._status(ctx, "cuCtxSetCacheConfig", lambda s: s.ctx_set_cache_config(config))

    # -- occupancy and launches -------------------------------------------------------------
    def CU_OCCUPANCY_AVAILABLE_DYNAMIC_SMEM_PER_BLOCK(
        self, ctx: Any, func: int, blocks: int, block_size: int
    ) -> proto.u64_result:
        return self._result(
            proto.u64_result,
            ctx,
            "cuOccupancyAvailableDynamicSMemPerBlock",
            lambda s: s.occupancy_available_dynamic_smem(func, blocks, block_size),
        )

    def CU_OCCUPANCY_MAX_ACTIVE_CLUSTERS(
        self, ctx: Any, func: int, cfg: proto.cluster_config
    ) -> proto.int_result:
        config = launch_config(
            (cfg.grid_x, cfg.grid_y, cfg.grid_z),
            (cfg.block_x, cfg.block_y, cfg.block_z),
            cfg.shared_mem_bytes,
            cfg.attrs,
        )
        return self._result(
            proto.int_result,
            ctx,
            "cuOccupancyMaxActiveClusters",
            lambda s: s.occupancy_max_active_clusters(func, config),
        )

    def CU_OCCUPANCY_MAX_POTENTIAL_CLUSTER_SIZE(
        self, ctx: Any, func: int, cfg: proto.cluster_config
    ) -> proto.int_result:
        config = launch_config(
            (cfg.grid_x, cfg.grid_y, cfg.grid_z),
            (cfg.block_x, cfg.block_y, cfg.block_z),
            cfg.shared_mem_bytes,
            cfg.attrs,
        )
        return self._result(
            proto.int_result,
            ctx,
            "cuOccupancyMaxPotentialClusterSize",
            lambda s: s.occupancy_max_potential_cluster_size(func, config),
        )

    def CU_LAUNCH_KERNEL_EX(self, ctx: Any, args: proto.launch_ex_args) -> int:
        a = args.launch
        config = launch_config(
            (a.grid_x, a.grid_y, a.grid_z),
            (a.block_x, a.block_y, a.block_z),
            a.shared_mem_bytes,
            args.attrs,
        )

        def run(s: Session) -> None:
            s.launch_ex(a.function, config, a.stream, memoryview(a.params))

        return self._status(ctx, "cuLaunchKernelEx", run)

    # -- streams ----------------------------------------------------------------------------
    def CU_STREAM_GET_PRIORITY(self, ctx: Any, stream: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuStreamGetPriority", lambda s: s.stream_get_priority(stream)
        )

    def CU_STREAM_GET_FLAGS(self, ctx: Any, stream: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuStreamGetFlags", lambda s: s.stream_get_flags(stream)
        )

    def CU_STREAM_GET_ATTRIBUTE(self, ctx: Any, stream: int, attr: int) -> proto.int_result:
        return self._result(
            proto.int_result,
            ctx,
            "cuStreamGetAttribute",
            lambda s: s.stream_get_attribute(stream, attr),
        )

    def CU_STREAM_SET_ATTRIBUTE(self, ctx: Any, stream: int, attr: int, value: int) -> int:
        return self._status(
            ctx, "cuStreamSetAttribute", lambda s: s.stream_set_attribute(stream, attr, value)
        )

    # -- several devices --------------------------------------------------------------------
    def CU_DEVICE_CAN_ACCESS_PEER(self, ctx: Any, dev: int, peer: int) -> proto.int_result:
        return self._result(
            proto.int_result,
            ctx,
            "cuDeviceCanAccessPeer",
            lambda s: int(s.device_can_access_peer(dev, peer)),
        )

    def CU_DEVICE_GET_P2P_ATTRIBUTE(
        self, ctx: Any, attrib: int, src: int, dst: int
    ) -> proto.int_result:
        return self._result(
            proto.int_result,
            ctx,
            "cuDeviceGetP2PAttribute",
            lambda s: s.device_p2p_attribute(attrib, src, dst),
        )

    def CU_CTX_ENABLE_PEER_ACCESS(self, ctx: Any, peer: int, flags: int) -> int:
        return self._status(
            ctx, "cuCtxEnablePeerAccess", lambda s: s.ctx_enable_peer_access(peer, flags)
        )

    def CU_CTX_DISABLE_PEER_ACCESS(self, ctx: Any, peer: int) -> int:
        return self._status(ctx, "cuCtxDisablePeerAccess", lambda s: s.ctx_disable_peer_access(peer))

    def CU_MEMCPY_PEER(
        self, ctx: Any, dst: int, dst_ctx: int, src: int, src_ctx: int, size: int
    ) -> int:
        return self._status(
            ctx, "cuMemcpyPeer", lambda s: s.memcpy_peer(dst, dst_ctx, src, src_ctx, size, None)
        )

    def CU_MEMCPY_PEER_ASYNC(
        self, ctx: Any, dst: int, dst_ctx: int, src: int, src_ctx: int, size: int, stream: int
    ) -> int:
        return self._status(
            ctx,
            "cuMemcpyPeerAsync",
            lambda s: s.memcpy_peer(dst, dst_ctx, src, src_ctx, size, stream),
        )
