"""The procedures of mipmapped and sparse arrays (520-539 of cricket.x) and of device
resources and green contexts (660-669)."""

from __future__ import annotations

from typing import Any

from rpc_spec import cricket_rpc as proto

__all__ = ["MipmapProcedures", "DevResourceProcedures"]


class MipmapProcedures:
    """MIPMAP_*, ARRAY_GET_SPARSE_PROPERTIES, ARRAY_GET_MEMORY_REQUIREMENTS; needs
    `CricketService._status` and `_result`."""

    _status: Any
    _result: Any

    def MIPMAP_CREATE(self, ctx: Any, desc: proto.array_desc, levels: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuMipmappedArrayCreate",
            lambda s: s.mipmap_create(desc, levels),
        )  # fmt: skip

    def MIPMAP_DESTROY(self, ctx: Any, handle: int) -> int:
        return self._status(ctx, "cuMipmappedArrayDestroy", lambda s: s.mipmap_destroy(handle))

    def MIPMAP_GET_LEVEL(self, ctx: Any, handle: int, level: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuMipmappedArrayGetLevel",
            lambda s: s.mipmap_get_level(handle, level),
        )  # fmt: skip

    def MIPMAP_GET_SPARSE_PROPERTIES(self, ctx: Any, handle: int) -> proto.sparse_properties_result:
        return self._result(
            proto.sparse_properties_result, ctx, "cuMipmappedArrayGetSparseProperties",
            lambda s: s.sparse_properties(handle, True),
        )  # fmt: skip

    def ARRAY_GET_SPARSE_PROPERTIES(self, ctx: Any, handle: int) -> proto.sparse_properties_result:
        return self._result(
            proto.sparse_properties_result, ctx, "cuArrayGetSparseProperties",
            lambda s: s.sparse_properties(handle, False),
        )  # fmt: skip

    def MIPMAP_GET_MEMORY_REQUIREMENTS(
        self, ctx: Any, handle: int, dev: int
    ) -> proto.memory_requirements_result:
        return self._result(
            proto.memory_requirements_result, ctx, "cuMipmappedArrayGetMemoryRequirements",
            lambda s: s.memory_requirements(handle, True, dev),
        )  # fmt: skip

    def ARRAY_GET_MEMORY_REQUIREMENTS(
        self, ctx: Any, handle: int, dev: int
    ) -> proto.memory_requirements_result:
        return self._result(
            proto.memory_requirements_result, ctx, "cuArrayGetMemoryRequirements",
            lambda s: s.memory_requirements(handle, False, dev),
        )  # fmt: skip

    def MIPMAP_GET_DESCRIPTOR(self, ctx: Any, handle: int) -> proto.array_desc_result:
        return self._result(
            proto.array_desc_result, ctx, "cuMipmappedArrayGetDescriptor",
            lambda s: s.mipmap_get_descriptor(handle),
        )  # fmt: skip


class DevResourceProcedures:
    """CU_DEVICE_GET_DEV_RESOURCE, CU_DEV_SM_RESOURCE_SPLIT_BY_COUNT, CU_GREEN_CTX_*,
    CU_CTX_FROM_GREEN_CTX, CU_CTX_GET_DEV_RESOURCE, CU_STREAM_GET_GREEN_CTX."""

    _status: Any
    _result: Any

    def CU_DEVICE_GET_DEV_RESOURCE(self, ctx: Any, dev: int, rtype: int) -> proto.dev_resource_result:
        return self._result(
            proto.dev_resource_result, ctx, "cuDeviceGetDevResource",
            lambda s: s.device_get_dev_resource(dev, rtype),
        )  # fmt: skip

    def CU_DEV_SM_RESOURCE_SPLIT_BY_COUNT(
        self, ctx: Any, wanted: int, res: proto.dev_resource, flags: int, min_count: int
    ) -> proto.sm_split_result:
        return self._result(
            proto.sm_split_result, ctx, "cuDevSmResourceSplitByCount",
            lambda s: s.sm_resource_split(wanted, res, flags, min_count),
        )  # fmt: skip

    def CU_GREEN_CTX_CREATE(
        self, ctx: Any, resources: list[proto.dev_resource], dev: int, flags: int
    ) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuGreenCtxCreate",
            lambda s: s.green_ctx_create(resources, dev, flags),
        )  # fmt: skip

    def CU_GREEN_CTX_DESTROY(self, ctx: Any, handle: int) -> int:
        return self._status(ctx, "cuGreenCtxDestroy", lambda s: s.green_ctx_destroy(handle))

    def CU_GREEN_CTX_GET_DEV_RESOURCE(
        self, ctx: Any, handle: int, rtype: int
    ) -> proto.dev_resource_result:
        return self._result(
            proto.dev_resource_result, ctx, "cuGreenCtxGetDevResource",
            lambda s: s.green_ctx_get_dev_resource(handle, rtype),
        )  # fmt: skip

    def CU_CTX_FROM_GREEN_CTX(self, ctx: Any, handle: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuCtxFromGreenCtx", lambda s: s.ctx_from_green_ctx(handle)
        )

    def CU_CTX_GET_DEV_RESOURCE(self, ctx: Any, handle: int, rtype: int) -> proto.dev_resource_result:
        return self._result(
            proto.dev_resource_result, ctx, "cuCtxGetDevResource",
            lambda s: s.ctx_get_dev_resource(handle, rtype),
        )  # fmt: skip

    def CU_GREEN_CTX_EVENT(self, ctx: Any, handle: int, event: int, wait: bool) -> int:
        call = "cuGreenCtxWaitEvent" if wait else "cuGreenCtxRecordEvent"
        return self._status(ctx, call, lambda s: s.green_ctx_event(handle, event, wait))

    def CU_GREEN_CTX_STREAM_CREATE(
        self, ctx: Any, handle: int, flags: int, priority: int
    ) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuGreenCtxStreamCreate",
            lambda s: s.green_ctx_stream_create(handle, flags, priority),
        )  # fmt: skip

    def CU_STREAM_GET_GREEN_CTX(self, ctx: Any, stream: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuStreamGetGreenCtx",
            lambda s: s.stream_get_green_ctx(stream),
        )  # fmt: skip
