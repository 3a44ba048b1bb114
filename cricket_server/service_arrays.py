"""The procedures of arrays, 3D copies, texture and surface objects (500-549 of cricket.x)."""

from __future__ import annotations

from typing import Any

from cricket_server.session import Session
from rpc_spec import cricket_rpc as proto

__all__ = ["ArrayProcedures"]


class ArrayProcedures:
    """ARRAY_*, MEMCPY_3D_*, TEX_OBJECT_*, SURF_OBJECT_*; needs `CricketService._status` and
    `_result`, so every call is counted and its error kept."""

    _status: Any
    _result: Any

    def ARRAY_CREATE(self, ctx: Any, desc: proto.array_desc) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuArray3DCreate", lambda s: s.array_create(desc)
        )

    def ARRAY_DESTROY(self, ctx: Any, handle: int) -> int:
        return self._status(ctx, "cuArrayDestroy", lambda s: s.array_destroy(handle))

    def ARRAY_GET_DESCRIPTOR(self, ctx: Any, handle: int) -> proto.array_desc_result:
        return self._result(
            proto.array_desc_result,
            ctx,
            "cuArray3DGetDescriptor",
            lambda s: s.array_get_descriptor(handle),
        )

    def MEMCPY_3D_FROM_HOST(self, ctx: Any, copy: proto.copy_3d, data: Any) -> int:
        return self._status(
            ctx, "cuMemcpy3D", lambda s: s.memcpy_3d_from_host(copy, memoryview(data))
        )

    def MEMCPY_3D_TO_HOST(self, ctx: Any, copy: proto.copy_3d) -> proto.mem_result:
        return self._result(
            proto.mem_result, ctx, "cuMemcpy3D", lambda s: s.memcpy_3d_to_host(copy)
        )

    def MEMCPY_3D_ON_DEVICE(self, ctx: Any, copy: proto.copy_3d) -> int:
        return self._status(ctx, "cuMemcpy3D", lambda s: s.memcpy_3d_on_device(copy))

    def TEX_OBJECT_CREATE(self, ctx: Any, descs: proto.texture_descs) -> proto.u64_result:
        def create(s: Session) -> int:
            view = descs.view[0] if descs.view else None
            return s.make_object(False, descs.res, descs.tex, view)

        return self._result(proto.u64_result, ctx, "cuTexObjectCreate", create)

    def TEX_OBJECT_DESTROY(self, ctx: Any, value: int) -> int:
        return self._status(ctx, "cuTexObjectDestroy", lambda s: s.destroy_object(value, False))

    def TEX_OBJECT_GET_DESCS(self, ctx: Any, value: int) -> proto.texture_descs_result:
        return self._result(
            proto.texture_descs_result,
            ctx,
            "cuTexObjectGetResourceDesc",
            lambda s: s.texture_descs(value),
        )

    def SURF_OBJECT_CREATE(self, ctx: Any, res: proto.resource_desc) -> proto.u64_result:
        return self._result(
            proto.u64_result, ctx, "cuSurfObjectCreate", lambda s: s.make_object(True, res)
        )

    def SURF_OBJECT_DESTROY(self, ctx: Any, value: int) -> int:
        return self._status(ctx, "cuSurfObjectDestroy", lambda s: s.destroy_object(value, True))

    def SURF_OBJECT_GET_RESOURCE_DESC(self, ctx: Any, value: int) -> proto.resource_desc_result:
        return self._result(
            proto.resource_desc_result,
            ctx,
            "cuSurfObjectGetResourceDesc",
            lambda s: s.surface_resource(value),
        )
