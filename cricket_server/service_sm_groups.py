"""Procedures 940-979: a stream's device resources, the structured SM split, wide im2col
tensor maps and tensor-map allocation classes, recapture into a graph."""

from __future__ import annotations

from typing import Any

from cricket_server.tensor_maps import IM2COL_WIDE, TensorMapRequest
from rpc_spec import cricket_rpc as proto

__all__ = ["SmGroupProcedures"]


class SmGroupProcedures:
    """CU_STREAM_GET_DEV_RESOURCE, CU_DEV_SM_RESOURCE_SPLIT, CU_TENSOR_MAP_ENCODE_IM2COL_WIDE,
    CU_TENSOR_MAP_SET_ALLOCATION_CLASS, CU_STREAM_BEGIN_RECAPTURE_TO_GRAPH."""

    _status: Any
    _result: Any

    def CU_STREAM_GET_DEV_RESOURCE(
        self, ctx: Any, stream: int, rtype: int
    ) -> proto.dev_resource_result:
        return self._result(
            proto.dev_resource_result, ctx, "cuStreamGetDevResource",
            lambda s: s.stream_get_dev_resource(stream, rtype),
        )  # fmt: skip

    def CU_DEV_SM_RESOURCE_SPLIT(
        self, ctx: Any, groups: int, res: proto.dev_resource, flags: int, params: list[Any]
    ) -> proto.sm_group_split_result:
        def split(s: Any) -> Any:
            if groups != len(params):
                from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError

                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"cuDevSmResourceSplit: nbGroups {groups} with {len(params)} groupParams",
                )
            return s.sm_resource_split_groups(res, flags, params)

        return self._result(proto.sm_group_split_result, ctx, "cuDevSmResourceSplit", split)

    def CU_TENSOR_MAP_ENCODE_IM2COL_WIDE(
        self, ctx: Any, a: Any, mode: int
    ) -> proto.tensor_map_result:
        request = TensorMapRequest(
            kind=IM2COL_WIDE, data_type=int(a.data_type), rank=int(a.rank),
            address=int(a.address), global_dim=tuple(a.global_dim),
            global_strides=tuple(a.global_strides), box_dim=(),
            lower_corner=tuple(a.lower_corner), upper_corner=tuple(a.upper_corner),
            channels_per_pixel=int(a.channels_per_pixel),
            pixels_per_column=int(a.pixels_per_column), element_strides=tuple(a.element_strides),
            interleave=int(a.interleave), swizzle=int(a.swizzle),
            l2_promotion=int(a.l2_promotion), oob_fill=int(a.oob_fill), mode=int(mode),
        )  # fmt: skip
        return self._result(
            proto.tensor_map_result, ctx, request.call, lambda s: s.tensor_map_encode_wide(request)
        )

    def CU_STREAM_BEGIN_RECAPTURE_TO_GRAPH(self, ctx: Any, stream: int, mode: int, graph: int) -> int:
        return self._status(
            ctx, "cuStreamBeginRecaptureToGraph",
            lambda s: s.stream_begin_recapture_to_graph(stream, mode, graph),
        )  # fmt: skip

    def CU_TENSOR_MAP_SET_ALLOCATION_CLASS(
        self, ctx: Any, tensor_map: bytes, alloc_class: int
    ) -> proto.tensor_map_class_result:
        def set_class(s: Any) -> proto.tensor_map_class:
            made, effect = s.tensor_map_set_alloc_class(tensor_map, alloc_class)
            return proto.tensor_map_class(map=made, alloc_class=effect)

        return self._result(
            proto.tensor_map_class_result, ctx, "cuTensorMapSetAllocationClass", set_class
        )
