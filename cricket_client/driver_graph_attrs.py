"""A kernel node's launch attributes in `cricket_client.driver` (re-exported there):
cuGraphKernelNodeGetAttribute, cuGraphKernelNodeSetAttribute and
cuGraphKernelNodeCopyAttributes, with cuda-python's names, arguments and types.

Values travel as cuLaunchKernelEx's attributes do (`cricket_client.launch_types`): cluster
dimensions, or one scalar. Attributes that hold host memory or events of this process (access
policy window, programmatic and completion events, memory sync domain map, device-updatable
node) are refused here with CUDA_ERROR_NOT_SUPPORTED naming them.
"""

from __future__ import annotations

from typing import Any

from ._enums import (
    CUclusterSchedulingPolicy,
    CUlaunchMemSyncDomain,
    CUresult,
    CUsynchronizationPolicy,
)
from .connection import get_connection
from .driver_graphs import _fail, _out, _u64
from .launch_types import (
    CLUSTER_DIMENSION,
    PREFERRED_CLUSTER_DIMENSION,
    SCALAR_FIELDS,
    CUlaunchAttributeValue,
    LaunchAttributeError,
    attribute_values,
)

__all__ = [
    "CUkernelNodeAttrValue",
    "CUkernelNodeAttrValue_v1",
    "cuGraphKernelNodeCopyAttributes",
    "cuGraphKernelNodeGetAttribute",
    "cuGraphKernelNodeSetAttribute",
    "fill_value",
]

_ENUM_FIELDS = {
    "syncPolicy": CUsynchronizationPolicy,
    "clusterSchedulingPolicyPreference": CUclusterSchedulingPolicy,
    "memSyncDomain": CUlaunchMemSyncDomain,
}


class CUkernelNodeAttrValue(CUlaunchAttributeValue):
    """A kernel node attribute's value (only the field of its id is read or filled)."""


CUkernelNodeAttrValue_v1 = CUkernelNodeAttrValue


def fill_value(out: Any, attr: Any, enums: dict[str, Any] = _ENUM_FIELDS) -> Any:
    """`out` with the field of wire attribute `attr` (launch_attribute) set."""
    if attr.id in (CLUSTER_DIMENSION, PREFERRED_CLUSTER_DIMENSION):
        dim = out.clusterDim if attr.id == CLUSTER_DIMENSION else out.preferredClusterDim
        dim.x, dim.y, dim.z = attr.x, attr.y, attr.z
        return out
    field = SCALAR_FIELDS.get(attr.id)
    if field is not None:
        kind = enums.get(field)
        try:
            setattr(out, field, kind(attr.x) if kind is not None else attr.x)
        except ValueError:  # a value this client's enum does not name
            setattr(out, field, attr.x)
    return out


def cuGraphKernelNodeGetAttribute(hNode: Any, attr: Any) -> tuple[Any, Any]:
    conn = get_connection()
    err, r = conn.sync(
        "CU_GRAPH_KERNEL_NODE_GET_ATTRIBUTE", _u64(hNode, "hNode"), int(attr)
    )
    if err:
        return _out(err, None)  # type: ignore[return-value]
    return (CUresult.CUDA_SUCCESS, fill_value(CUkernelNodeAttrValue(), r.value))


def cuGraphKernelNodeSetAttribute(hNode: Any, attr: Any, value: Any) -> tuple[Any]:
    call = "cuGraphKernelNodeSetAttribute"
    conn = get_connection()
    attr_id = int(attr)
    if value is None:
        return _fail(conn, CUresult.CUDA_ERROR_INVALID_VALUE, f"{call}: value is None", 0)  # type: ignore[return-value]
    try:
        x, y, z = attribute_values(attr_id, value)
    except LaunchAttributeError as exc:
        return _fail(conn, CUresult.CUDA_ERROR_NOT_SUPPORTED, f"{call}: {exc}", 0)  # type: ignore[return-value]
    wire = conn.proto.launch_attribute(id=attr_id, x=x, y=y, z=z)
    err, _ = conn.sync("CU_GRAPH_KERNEL_NODE_SET_ATTRIBUTE", _u64(hNode, "hNode"), wire)
    return _out(err)  # type: ignore[return-value]


def cuGraphKernelNodeCopyAttributes(dst: Any, src: Any) -> tuple[Any]:
    err, _ = get_connection().sync(
        "CU_GRAPH_KERNEL_NODE_COPY_ATTRIBUTES", _u64(dst, "dst"), _u64(src, "src")
    )
    return _out(err)  # type: ignore[return-value]
