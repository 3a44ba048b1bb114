"""The procedures of device facts, array planes, pointer attributes and library modules
(900-939); a mixin of `CricketService`, delegating to `SessionDeviceFacts` and
`SessionLibraryModules`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rpc_spec import cricket_rpc as proto

if TYPE_CHECKING:
    from cricket_server.session import Session


class DeviceFactProcedures:
    """Needs `CricketService._status`/`_result`."""

    _status: Any
    _result: Any

    # -- device facts -----------------------------------------------------------------------
    def CU_DEVICE_GET_LUID(self, ctx: Any, dev: int) -> proto.luid_result:
        def luid(s: Session) -> proto.luid_info:
            value, mask = s.device_luid(dev)
            return proto.luid_info(luid=value, node_mask=mask)

        return self._result(proto.luid_result, ctx, "cuDeviceGetLuid", luid)

    def CU_DEVICE_GET_HOST_ATOMIC_CAPABILITIES(
        self, ctx: Any, operations: list[int], dev: int
    ) -> proto.capability_list_result:
        return self._result(
            proto.capability_list_result, ctx, "cuDeviceGetHostAtomicCapabilities",
            lambda s: s.host_atomic_capabilities(operations, dev),
        )  # fmt: skip

    def CU_DEVICE_GET_P2P_ATOMIC_CAPABILITIES(
        self, ctx: Any, operations: list[int], src: int, dst: int
    ) -> proto.capability_list_result:
        return self._result(
            proto.capability_list_result, ctx, "cuDeviceGetP2PAtomicCapabilities",
            lambda s: s.p2p_atomic_capabilities(operations, src, dst),
        )  # fmt: skip

    def CU_DEVICE_GET_EXEC_AFFINITY_SUPPORT(
        self, ctx: Any, typename: int, dev: int
    ) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuDeviceGetExecAffinitySupport",
            lambda s: s.exec_affinity_support(typename, dev),
        )  # fmt: skip

    def CU_CTX_GET_EXEC_AFFINITY(self, ctx: Any, typename: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuCtxGetExecAffinity", lambda s: s.ctx_exec_affinity(typename)
        )

    def CU_DEVICE_GET_FABRIC_CLUSTER_UUID(self, ctx: Any, dev: int) -> proto.uuid_result:
        return self._result(
            proto.uuid_result, ctx, "cuDeviceGetFabricClusterUuid",
            lambda s: s.fabric_cluster_uuid(dev),
        )  # fmt: skip

    def CU_DEVICE_GET_CLIQUE_COUNT(self, ctx: Any, dev: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuDeviceGetCliqueCount", lambda s: s.clique_count(dev)
        )

    def CU_DEVICE_GET_CLIQUE_INFO(
        self, ctx: Any, count: int, dev: int
    ) -> proto.clique_list_result:
        def cliques(s: Session) -> list[proto.clique_info]:
            return [proto.clique_info(type=t, id=i) for t, i in s.clique_info(count, dev)]

        return self._result(proto.clique_list_result, ctx, "cuDeviceGetCliqueInfo", cliques)

    def CU_GREEN_CTX_GET_ID(self, ctx: Any, green: int) -> proto.u64_result:
        return self._result(
            proto.u64_result, ctx, "cuGreenCtxGetId", lambda s: s.green_ctx_get_id(green)
        )

    # -- arrays and pointers ----------------------------------------------------------------
    def CU_ARRAY_GET_PLANE(self, ctx: Any, array: int, plane: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuArrayGetPlane", lambda s: s.array_get_plane(array, plane)
        )

    def CU_POINTER_SET_ATTRIBUTE(self, ctx: Any, attribute: int, ptr: int, value: int) -> int:
        return self._status(
            ctx, "cuPointerSetAttribute", lambda s: s.pointer_set_attribute(attribute, ptr, value)
        )

    # -- library modules --------------------------------------------------------------------
    def CU_LIBRARY_GET_MODULE(self, ctx: Any, library: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuLibraryGetModule", lambda s: s.library_get_module(library)
        )

    def CU_LIBRARY_GET_UNIFIED_FUNCTION(
        self, ctx: Any, library: int, symbol: str
    ) -> proto.ptr_result:
        return self._result(
            proto.ptr_result, ctx, "cuLibraryGetUnifiedFunction",
            lambda s: s.library_get_unified_function(library, symbol),
        )  # fmt: skip
