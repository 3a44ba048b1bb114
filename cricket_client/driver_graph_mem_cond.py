"""Graph memory nodes and conditional nodes of `cricket_client.driver` (procedures 681-684 and
CU_GRAPH_ADD_NODE's alloc, free and conditional node types). Re-exported by
`cricket_client.driver`.

What CUDA returns in the caller's parameters is written back into them, as cuda-python does:
cuGraphAddMemAllocNode sets `nodeParams.dptr` (the allocation's address, fixed for the node's
life and across checkpoint/restore), cuGraphAddNode sets `alloc.dptr` or
`conditional.phGraph_out` (the body graphs the conditional node owns). The server makes them
when the node is added; the client reads them back with the node's parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import driver_graphs as dg
from ._args import c_int, size_t, u64, uint
from ._enums import (
    CUgraphMem_attribute,
    CUmemAllocationType,
    CUmemLocationType,
)
from ._types import CUdeviceptr, Handle, as_int
from ._types_vmm import cuuint64_t
from .connection import Connection, get_connection
from .plain_types import (
    CUDA_MEM_ALLOC_NODE_PARAMS,
    CUgraphConditionalHandle,
)

__all__ = [  # their types (CUDA_MEM_ALLOC_NODE_PARAMS, ...) are `plain_types`'
    "cuGraphAddMemAllocNode",
    "cuGraphAddMemFreeNode",
    "cuGraphMemAllocNodeGetParams",
    "cuGraphMemFreeNodeGetParams",
    "cuDeviceGetGraphMemAttribute",
    "cuDeviceSetGraphMemAttribute",
    "cuDeviceGraphMemTrim",
    "cuGraphConditionalHandleCreate",
]

MEM_ALLOC, MEM_FREE, CONDITIONAL = 10, 11, 13


# -- the node parameters on the wire, and what the server filled in -------------------------


def alloc_params(conn: Connection, call: str, p: Any) -> Any:
    """graph_mem_alloc_params of a CUDA_MEM_ALLOC_NODE_PARAMS, or a str saying why not."""
    location = p.poolProps.location
    if int(location.type) != CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE:
        return "poolProps.location.type must be CU_MEM_LOCATION_TYPE_DEVICE"
    if int(p.poolProps.allocType) != CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED:
        return "poolProps.allocType must be CU_MEM_ALLOCATION_TYPE_PINNED"
    return conn.proto.graph_mem_alloc_params(
        device=c_int(location.id, f"{call}: poolProps.location.id"),
        bytesize=size_t(p.bytesize, f"{call}: bytesize"),
        dptr=0,
    )


def conditional_params(conn: Connection, call: str, p: Any) -> Any:
    return conn.proto.graph_conditional_params(
        handle=dg._u64(p.handle, f"{call}: conditional.handle"),
        type=c_int(int(p.type), f"{call}: conditional.type"),
        size=uint(p.size, f"{call}: conditional.size"),
        bodies=[],
        default_value=0,
        flags=0,
    )


def wire_params(conn: Connection, call: str, p: Any) -> tuple[int, Any] | None:
    """(CUresult, graph_node_params) of a CUgraphNodeParams of the types here; None for others."""
    kind = int(p.type)
    if kind == MEM_ALLOC:
        alloc = alloc_params(conn, call, p.alloc)
        if isinstance(alloc, str):
            conn.set_local_error(f"{call}: alloc.{alloc}")
            return int(dg._INVALID_VALUE), None
        return 0, dg._node(conn, MEM_ALLOC, alloc)
    if kind == MEM_FREE:
        return 0, dg._node(conn, MEM_FREE, dg._u64(p.free.dptr, f"{call}: free.dptr"))
    if kind == CONDITIONAL:
        return 0, dg._node(conn, CONDITIONAL, conditional_params(conn, call, p.conditional))
    return None


def node_params(conn: Connection, node: int) -> tuple[int, Any]:
    """(CUresult, graph_node_params) of a node, as the server keeps them."""
    err, r = conn.sync("CU_GRAPH_NODE_GET_PARAMS", node)
    return err, None if err else r.value


def fill_outputs(conn: Connection, node: Any, p: Any, graph_type: type[Handle]) -> int:
    """Write what the server made for node `node` into the CUgraphNodeParams `p` (the
    allocation's address, the body graphs); a CUresult."""
    kind = int(p.type)
    if kind not in (MEM_ALLOC, CONDITIONAL):
        return 0
    err, params = node_params(conn, int(node))
    if err:
        return err
    if kind == MEM_ALLOC:
        p.alloc.dptr = params.value.dptr
    else:
        p.conditional.phGraph_out = [graph_type(b) for b in params.value.bodies]
    return 0


# -- memory nodes -----------------------------------------------------------------------------


def cuGraphAddMemAllocNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, nodeParams: Any
) -> tuple[Any, Any]:
    """Sets nodeParams.dptr to the allocation's address, as CUDA does."""
    call = "cuGraphAddMemAllocNode"
    conn = get_connection()
    deps = dg._deps(call, dependencies, numDependencies)
    if not hasattr(nodeParams, "poolProps"):
        return dg._fail(conn, dg._INVALID_VALUE, f"{call}: nodeParams is not a CUDA_MEM_ALLOC_NODE_PARAMS", 1)  # fmt: skip
    alloc = alloc_params(conn, call, nodeParams)
    if isinstance(alloc, str):
        return dg._fail(conn, dg._INVALID_VALUE, f"{call}: nodeParams.{alloc}", 1)
    err, node = dg._add(conn, hGraph, deps, dg._node(conn, MEM_ALLOC, alloc))
    if err:
        return err, None
    err, params = node_params(conn, int(node))
    if err:
        return dg._out(err, None)
    nodeParams.dptr = params.value.dptr
    return err, node


def cuGraphAddMemFreeNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, dptr: Any
) -> tuple[Any, Any]:
    call = "cuGraphAddMemFreeNode"
    conn = get_connection()
    deps = dg._deps(call, dependencies, numDependencies)
    return dg._add(conn, hGraph, deps, dg._node(conn, MEM_FREE, dg._u64(dptr, f"{call}: dptr")))


def _params_of(call: str, hNode: Any, kind: int) -> tuple[int, Any]:
    conn = get_connection()
    err, params = node_params(conn, dg._u64(hNode, f"{call}: hNode"))
    if err:
        return err, None
    if int(params.type) != kind:
        conn.set_local_error(f"{call}: node {dg._u64(hNode, 'hNode'):#x} is not of this type")
        return int(dg._INVALID_VALUE), None
    return 0, params.value


def alloc_node_params(p: Any, out: Any, location_device: Any, pinned: Any) -> Any:
    """`out` (a CUDA_MEM_ALLOC_NODE_PARAMS or the runtime's) filled from graph_mem_alloc_params."""
    out.poolProps.location.type = location_device
    out.poolProps.location.id = int(p.device)
    out.poolProps.allocType = pinned
    out.bytesize = int(p.bytesize)
    out.dptr = int(p.dptr)
    return out


def cuGraphMemAllocNodeGetParams(hNode: Any) -> tuple[Any, Any]:
    err, p = _params_of("cuGraphMemAllocNodeGetParams", hNode, MEM_ALLOC)
    if err:
        return dg._out(err, None)  # type: ignore[return-value]
    out = alloc_node_params(
        p, CUDA_MEM_ALLOC_NODE_PARAMS(), CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE,
        CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED,
    )  # fmt: skip
    return dg._SUCCESS, out


def cuGraphMemFreeNodeGetParams(hNode: Any) -> tuple[Any, Any]:
    err, p = _params_of("cuGraphMemFreeNodeGetParams", hNode, MEM_FREE)
    if err:
        return dg._out(err, None)  # type: ignore[return-value]
    return dg._SUCCESS, CUdeviceptr(int(p))


def cuDeviceGetGraphMemAttribute(device: Any, attr: Any) -> tuple[Any, Any]:
    err, r = get_connection().sync(
        "CU_DEVICE_GET_GRAPH_MEM_ATTRIBUTE",
        c_int(as_int(device), "cuDeviceGetGraphMemAttribute: device"),
        int(CUgraphMem_attribute(int(attr))),
    )
    return dg._out(err, None if err else cuuint64_t(int(r.value)))  # type: ignore[return-value]


def cuDeviceSetGraphMemAttribute(device: Any, attr: Any, value: Any) -> tuple[Any]:
    err, _ = get_connection().sync(
        "CU_DEVICE_SET_GRAPH_MEM_ATTRIBUTE",
        c_int(as_int(device), "cuDeviceSetGraphMemAttribute: device"),
        int(CUgraphMem_attribute(int(attr))),
        u64(as_int(value), "cuDeviceSetGraphMemAttribute: value"),
    )
    return dg._out(err)  # type: ignore[return-value]


def cuDeviceGraphMemTrim(device: Any) -> tuple[Any]:
    err, _ = get_connection().sync(
        "CU_DEVICE_GRAPH_MEM_TRIM", c_int(as_int(device), "cuDeviceGraphMemTrim: device")
    )
    return dg._out(err)  # type: ignore[return-value]


# -- conditional nodes ------------------------------------------------------------------------


def cuGraphConditionalHandleCreate(
    hGraph: Any, ctx: Any, defaultLaunchValue: int, flags: int
) -> tuple[Any, Any]:
    """A handle of `hGraph` (the context is the graph's: the current one)."""
    call = "cuGraphConditionalHandleCreate"
    err, r = get_connection().sync(
        "CU_GRAPH_CONDITIONAL_HANDLE_CREATE",
        dg._u64(hGraph, f"{call}: hGraph"),
        uint(defaultLaunchValue, f"{call}: defaultLaunchValue"),
        uint(flags, f"{call}: flags"),
    )
    return dg._out(err, None if err else CUgraphConditionalHandle(int(r.value)))  # type: ignore[return-value]
