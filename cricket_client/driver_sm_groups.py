"""A stream's device resources, the structured SM split and the newer tensor-map calls of
`cuda.bindings.driver`, remote: cuStreamGetDevResource (the resources of the stream's
context or green context), cuDevSmResourceSplit (groups as CU_DEV_SM_RESOURCE_GROUP_PARAMS
ask; discovered SM counts written back into the caller's parameters, as the driver writes
them), cuTensorMapEncodeIm2colWide and cuTensorMapSetAllocationClass (the caller's map
changed in place)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ._args import uint
from ._enums import CUdevResourceType, CUresult, CUtensorMapAllocClass
from ._types import as_int
from .connection import get_connection
from .driver_green_ctx import _out, from_wire, resource_call, to_wire
from .plain_types import ValueStruct
from .resource_types import CUdevResource

__all__ = [
    "CU_DEV_SM_RESOURCE_GROUP_PARAMS",
    "CU_DEV_SM_RESOURCE_GROUP_PARAMS_st",
    "cuStreamGetDevResource",
    "cuDevSmResourceSplit",
    "cuTensorMapEncodeIm2colWide",
    "cuTensorMapSetAllocationClass",
]

_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE
_IM2COL_WIDE = 2  # tensor_map_args.kind


class CU_DEV_SM_RESOURCE_GROUP_PARAMS(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "smCount": 0, "coscheduledSmCount": 0, "preferredCoscheduledSmCount": 0, "flags": 0,
        "localityDomainId": 0,
    }  # fmt: skip


CU_DEV_SM_RESOURCE_GROUP_PARAMS_st = CU_DEV_SM_RESOURCE_GROUP_PARAMS


def cuStreamGetDevResource(hStream: Any, typename: Any) -> tuple[Any, Any]:
    from .driver_arrays import wire_stream

    return _out(*resource_call("CU_STREAM_GET_DEV_RESOURCE", wire_stream(hStream), int(typename)))


def sm_split_groups(
    call: str, nbGroups: int, input_: Any, flags: int, groupParams: Sequence[Any] | None,
    make: type, kind: Any,
) -> tuple[int, Any, Any]:  # fmt: skip
    """(CUresult, groups, remainder) of cuDevSmResourceSplit; discovered counts are written
    into `groupParams`."""
    from rpc_spec import cricket_rpc as proto

    conn = get_connection()
    n = uint(nbGroups, f"{call}: nbGroups")
    params = list(groupParams or [])
    if input_ is None or len(params) < n:
        conn.set_local_error(
            f"{call}: input_ is None" if input_ is None
            else f"{call}: nbGroups {n} but {len(params)} groupParams given"
        )  # fmt: skip
        return int(_INVALID_VALUE), None, None
    params = params[:n]
    wire = [
        proto.sm_group_params(
            sm_count=uint(p.smCount, f"{call}: smCount"),
            coscheduled=uint(p.coscheduledSmCount, f"{call}: coscheduledSmCount"),
            preferred=uint(p.preferredCoscheduledSmCount, f"{call}: preferredCoscheduledSmCount"),
            flags=uint(p.flags, f"{call}: flags"),
            locality=uint(p.localityDomainId, f"{call}: localityDomainId"),
        )
        for p in params
    ]
    err, r = conn.sync(
        "CU_DEV_SM_RESOURCE_SPLIT", n, to_wire(input_), uint(flags, f"{call}: flags"), wire
    )
    if err:
        return err, None, None
    v = r.value
    for p, done in zip(params, v.params, strict=True):
        p.smCount = done.sm_count
    return 0, [from_wire(g, make, kind) for g in v.groups], from_wire(v.remainder, make, kind)


def cuDevSmResourceSplit(
    nbGroups: int, input_: Any, flags: int, groupParams: Sequence[Any] | None
) -> tuple[Any, Any, Any]:
    err, groups, remainder = sm_split_groups(
        "cuDevSmResourceSplit", nbGroups, input_, flags, groupParams, CUdevResource,
        CUdevResourceType,
    )  # fmt: skip
    return _out(err, groups, remainder)


def cuTensorMapEncodeIm2colWide(
    tensorDataType: Any, tensorRank: Any, globalAddress: Any, globalDim: Any, globalStrides: Any,
    pixelBoxLowerCornerWidth: int, pixelBoxUpperCornerWidth: int, channelsPerPixel: Any,
    pixelsPerColumn: Any, elementStrides: Any, interleave: Any, mode: Any, swizzle: Any,
    l2Promotion: Any, oobFill: Any,
) -> tuple[Any, Any]:  # fmt: skip
    """A tensor map whose rows are loaded along W (the W corners are the box's)."""
    from .driver_tail import CUtensorMap, _handle, _ints

    call = "cuTensorMapEncodeIm2colWide"
    conn = get_connection()
    args = conn.proto.tensor_map_args(
        kind=_IM2COL_WIDE, data_type=int(tensorDataType),
        rank=uint(as_int(tensorRank), f"{call}: tensorRank"),
        address=_handle(globalAddress, "globalAddress"), global_dim=_ints(globalDim),
        global_strides=_ints(globalStrides), box_dim=[],
        lower_corner=[int(pixelBoxLowerCornerWidth)], upper_corner=[int(pixelBoxUpperCornerWidth)],
        channels_per_pixel=uint(as_int(channelsPerPixel), f"{call}: channelsPerPixel"),
        pixels_per_column=uint(as_int(pixelsPerColumn), f"{call}: pixelsPerColumn"),
        element_strides=_ints(elementStrides), interleave=int(interleave), swizzle=int(swizzle),
        l2_promotion=int(l2Promotion), oob_fill=int(oobFill),
    )  # fmt: skip
    err, r = conn.sync("CU_TENSOR_MAP_ENCODE_IM2COL_WIDE", args, int(mode))
    if err:
        return _out(err, None)
    made = CUtensorMap()
    made._set(bytes(r.value))
    return _out(0, made)


def cuTensorMapSetAllocationClass(tensorMap: Any, allocClass: Any) -> tuple[Any, Any]:
    """The caller's CUtensorMap is changed in place, as locally; the class in effect comes
    back (SMALL or LARGE)."""
    from .driver_tail import CUtensorMap

    call = "cuTensorMapSetAllocationClass"
    conn = get_connection()
    if not isinstance(tensorMap, CUtensorMap):
        conn.set_local_error(f"{call}: tensorMap is not a CUtensorMap")
        return (_INVALID_VALUE, None)
    err, r = conn.sync("CU_TENSOR_MAP_SET_ALLOCATION_CLASS", bytes(tensorMap), int(allocClass))
    if err:
        return _out(err, None)
    tensorMap._set(bytes(r.value.map))
    return _out(0, CUtensorMapAllocClass(r.value.alloc_class))
