"""Reading and changing what a graph already holds, for `cricket_client.driver`:
cuGraphNodeGetParams (a node as a CUgraphNodeParams), the typed getters and setters of
memcpy, memset, event and child-graph nodes, a node's dependents, cuGraphRemoveDependencies,
an exec's flags, uploads and cuGraphInstantiateWithParams, and the event of an exec's event
node. Most travel as the node calls do (CU_GRAPH_NODE_GET_PARAMS, CU_GRAPH_NODE_SET_PARAMS,
CU_GRAPH_EXEC_NODE_SET_PARAMS); procedures 800-839 carry the rest. Re-exported by
`cricket_client.driver`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from . import driver_graph_mem_cond as mc
from . import driver_graphs as dg
from ._args import size_t, uint
from ._enums import (
    CUgraphInstantiateResult,
    CUgraphNodeType,
    CUmemAllocationType,
    CUmemLocationType,
    CUmemorytype,
    CUresult,
)
from ._types import CUdeviceptr
from ._types_vmm import cuuint64_t
from .connection import Connection, get_connection
from .plain_types import (
    CUDA_CONDITIONAL_NODE_PARAMS,
    CUDA_MEM_ALLOC_NODE_PARAMS,
    CUDA_MEM_FREE_NODE_PARAMS,
    CUgraphNodeParams,
    ValueStruct,
)

__all__ = [
    "CUDA_GRAPH_INSTANTIATE_PARAMS",
    "CUDA_GRAPH_INSTANTIATE_PARAMS_st",
    "cuGraphNodeGetParams",
    "cuGraphNodeSetParams_v2",
    "cuGraphMemcpyNodeSetParams",
    "cuGraphMemsetNodeSetParams",
    "cuGraphEventRecordNodeGetEvent",
    "cuGraphEventRecordNodeSetEvent",
    "cuGraphEventWaitNodeGetEvent",
    "cuGraphEventWaitNodeSetEvent",
    "cuGraphExecEventRecordNodeSetEvent",
    "cuGraphExecEventWaitNodeSetEvent",
    "cuGraphChildGraphNodeGetGraph",
    "cuGraphNodeGetDependentNodes",
    "cuGraphRemoveDependencies",
    "cuGraphExecGetFlags",
    "cuGraphUpload",
    "cuGraphInstantiateWithParams",
    "cuGraphNodeSetEnabled",
    "cuGraphNodeGetEnabled",
    "cuGraphExecMemcpyNodeSetParams",
    "cuGraphDebugDotPrint",
    "cuGraphNodeFindInClone",
    "cuGraphExecChildGraphNodeSetParams",
]

_T = CUgraphNodeType
INSTANTIATE_FLAG_UPLOAD = 2  # CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD


class CUDA_GRAPH_INSTANTIATE_PARAMS(ValueStruct):
    """cuGraphInstantiateWithParams' in and out: flags and upload stream in, result out."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "flags": 0, "hUploadStream": 0, "hErrNode_out": 0,
        "result_out": CUgraphInstantiateResult(0),
    }  # fmt: skip


CUDA_GRAPH_INSTANTIATE_PARAMS_st = CUDA_GRAPH_INSTANTIATE_PARAMS


# -- reading nodes back -----------------------------------------------------------------------


def _wire_params(conn: Connection, hNode: Any) -> tuple[int, Any]:
    err, r = conn.sync("CU_GRAPH_NODE_GET_PARAMS", dg._u64(hNode, "hNode"))
    return err, None if err else r.value


def _typed(call: str, hNode: Any, kinds: tuple[int, ...]) -> tuple[int, Any, Connection]:
    """(CUresult, the node's wire value, connection) for a node of one of `kinds`."""
    conn = get_connection()
    err, params = _wire_params(conn, hNode)
    if err:
        return err, None, conn
    if int(params.type) not in kinds:
        conn.set_local_error(
            f"{call}: node {dg._u64(hNode, 'hNode'):#x} is a {_T(int(params.type)).name} node"
        )
        return int(dg._INVALID_VALUE), None, conn
    return 0, params.value, conn


def node_params_of(conn: Connection, wire: Any) -> Any:
    """A CUgraphNodeParams of the server's graph_node_params (host sides of a memcpy node as
    the host objects the client named)."""
    from .driver import CUevent, CUfunction

    kind = int(wire.type)
    p: Any = CUgraphNodeParams()
    p.type = _T(kind)
    v = wire.value
    if kind == dg._KERNEL:
        k = p.kernel
        k.func = CUfunction(v.function)
        k.gridDimX, k.gridDimY, k.gridDimZ = v.grid_x, v.grid_y, v.grid_z
        k.blockDimX, k.blockDimY, k.blockDimZ = v.block_x, v.block_y, v.block_z
        k.sharedMemBytes, k.kernelParams = v.shared_mem_bytes, bytes(v.params)
    elif kind == dg._MEMCPY:
        p.memcpy.copyParams = memcpy3d_of(conn, v)
    elif kind == dg._MEMSET:
        m = p.memset
        m.dst, m.pitch, m.value = CUdeviceptr(int(v.dst)), int(v.pitch), int(v.value)
        m.elementSize, m.width, m.height = int(v.element_size), int(v.width), int(v.height)
    elif kind == dg._CHILD:
        p.graph.graph = dg.CUgraph(int(v))
    elif kind == dg._WAIT:
        p.eventWait.event = CUevent(int(v))
    elif kind == dg._RECORD:
        p.eventRecord.event = CUevent(int(v))
    elif kind == mc.MEM_ALLOC:
        p.alloc = mc.alloc_node_params(
            v, CUDA_MEM_ALLOC_NODE_PARAMS(), CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE,
            CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED,
        )  # fmt: skip
    elif kind == mc.MEM_FREE:
        p.free = CUDA_MEM_FREE_NODE_PARAMS(dptr=CUdeviceptr(int(v)))
    elif kind == 12:  # CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
        from .driver_graph_mem_ops import params_of

        p.memOp = params_of(v)
    elif kind == mc.CONDITIONAL:
        c = CUDA_CONDITIONAL_NODE_PARAMS()
        c.handle, c.type, c.size = v.handle, v.type, int(v.size)
        c.phGraph_out = [dg.CUgraph(b) for b in v.bodies]
        p.conditional = c
    return p


def memcpy3d_of(conn: Connection, copy: Any) -> Any:
    """A 1D CUDA_MEMCPY3D of a graph_memcpy_params: device sides as CUdeviceptr, host sides as
    the host object the client named."""
    from .array_types import CUDA_MEMCPY3D

    p = CUDA_MEMCPY3D(WidthInBytes=int(copy.size), Height=1, Depth=1)
    slots = dg._state(conn).slots
    for side, is_host, value in (("dst", copy.dst_host, copy.dst), ("src", copy.src_host, copy.src)):
        if is_host:
            slot = slots.get(int(value))
            setattr(p, f"{side}MemoryType", CUmemorytype.CU_MEMORYTYPE_HOST)
            setattr(p, f"{side}Host", None if slot is None else slot.obj)
        else:
            setattr(p, f"{side}MemoryType", CUmemorytype.CU_MEMORYTYPE_DEVICE)
            setattr(p, f"{side}Device", CUdeviceptr(int(value)))
    return p


def cuGraphNodeGetParams(hNode: Any) -> tuple[Any, Any]:
    """The node as a CUgraphNodeParams, `type` naming the arm that holds it."""
    conn = get_connection()
    err, wire = _wire_params(conn, hNode)
    return dg._out(err, None if err else node_params_of(conn, wire))  # type: ignore[return-value]


def cuGraphNodeSetParams_v2(hNode: Any, nodeParams: Any) -> tuple[Any]:
    from .driver_graph_nodes import cuGraphNodeSetParams

    return cuGraphNodeSetParams(hNode, nodeParams)


def _set(conn: Connection, hNode: Any, node: Any) -> tuple[Any]:
    return dg._out(conn.sync("CU_GRAPH_NODE_SET_PARAMS", dg._u64(hNode, "hNode"), node)[0])  # type: ignore[return-value]


def _memcpy_node(conn: Connection, call: str, p: Any, name: str) -> tuple[Any, Any]:
    """(None, memcpy graph_node_params) of a CUDA_MEMCPY3D, or (the error's answer, None)."""
    if not hasattr(p, "WidthInBytes"):
        return dg._fail(conn, dg._INVALID_VALUE, f"{call}: {name} is not a CUDA_MEMCPY3D", 0), None
    copy = dg.memcpy_node_params(conn, call, p)
    if isinstance(copy, str):
        return dg._fail(conn, dg._NOT_SUPPORTED, f"{call}: {copy}", 0), None
    return None, dg._node(conn, dg._MEMCPY, copy)


def cuGraphMemcpyNodeSetParams(hNode: Any, nodeParams: Any) -> tuple[Any]:
    conn = get_connection()
    failed, node = _memcpy_node(conn, "cuGraphMemcpyNodeSetParams", nodeParams, "nodeParams")
    return failed if failed is not None else _set(conn, hNode, node)  # type: ignore[no-any-return]


def cuGraphExecMemcpyNodeSetParams(
    hGraphExec: Any, hNode: Any, copyParams: Any, ctx: Any
) -> tuple[Any]:
    """The exec's copy of a memcpy node copies between other device addresses (client host
    memory sides are fixed when the exec is made: NOT_SUPPORTED)."""
    conn = get_connection()
    failed, node = _memcpy_node(conn, "cuGraphExecMemcpyNodeSetParams", copyParams, "copyParams")
    if failed is not None:
        return failed  # type: ignore[no-any-return]
    exec_handle, node_handle = dg._u64(hGraphExec, "hGraphExec"), dg._u64(hNode, "hNode")
    return dg._out(conn.sync("CU_GRAPH_EXEC_NODE_SET_PARAMS", exec_handle, node_handle, node)[0])  # type: ignore[return-value]


def cuGraphMemsetNodeSetParams(hNode: Any, nodeParams: Any) -> tuple[Any]:
    call = "cuGraphMemsetNodeSetParams"
    conn = get_connection()
    if not hasattr(nodeParams, "elementSize"):
        return dg._fail(
            conn, dg._INVALID_VALUE, f"{call}: nodeParams is not a CUDA_MEMSET_NODE_PARAMS", 0
        )  # type: ignore[return-value]
    return _set(conn, hNode, dg._node(conn, dg._MEMSET, dg.memset_node_params(conn, call, nodeParams)))


# -- event and child-graph nodes --------------------------------------------------------------


def _get_event(call: str, hNode: Any, kind: int) -> tuple[Any, Any]:
    from .driver import CUevent

    err, event, _ = _typed(call, hNode, (kind,))
    return dg._out(err, None if err else CUevent(int(event)))  # type: ignore[return-value]


def _set_event(call: str, hNode: Any, kind: int, event: Any) -> tuple[Any]:
    conn = get_connection()
    return _set(conn, hNode, dg._node(conn, kind, dg._u64(event, f"{call}: event")))


def cuGraphEventRecordNodeGetEvent(hNode: Any) -> tuple[Any, Any]:
    return _get_event("cuGraphEventRecordNodeGetEvent", hNode, dg._RECORD)


def cuGraphEventRecordNodeSetEvent(hNode: Any, event: Any) -> tuple[Any]:
    return _set_event("cuGraphEventRecordNodeSetEvent", hNode, dg._RECORD, event)


def cuGraphEventWaitNodeGetEvent(hNode: Any) -> tuple[Any, Any]:
    return _get_event("cuGraphEventWaitNodeGetEvent", hNode, dg._WAIT)


def cuGraphEventWaitNodeSetEvent(hNode: Any, event: Any) -> tuple[Any]:
    return _set_event("cuGraphEventWaitNodeSetEvent", hNode, dg._WAIT, event)


def _exec_set_event(call: str, hGraphExec: Any, hNode: Any, kind: int, event: Any) -> tuple[Any]:
    conn = get_connection()
    node = dg._node(conn, kind, dg._u64(event, f"{call}: event"))
    exec_handle, node_handle = dg._u64(hGraphExec, "hGraphExec"), dg._u64(hNode, "hNode")
    return dg._out(conn.sync("CU_GRAPH_EXEC_NODE_SET_PARAMS", exec_handle, node_handle, node)[0])  # type: ignore[return-value]


def cuGraphExecEventRecordNodeSetEvent(hGraphExec: Any, hNode: Any, event: Any) -> tuple[Any]:
    """The event the exec's record node records (the graph's node keeps its own)."""
    return _exec_set_event("cuGraphExecEventRecordNodeSetEvent", hGraphExec, hNode, dg._RECORD, event)


def cuGraphExecEventWaitNodeSetEvent(hGraphExec: Any, hNode: Any, event: Any) -> tuple[Any]:
    return _exec_set_event("cuGraphExecEventWaitNodeSetEvent", hGraphExec, hNode, dg._WAIT, event)


def cuGraphExecChildGraphNodeSetParams(hGraphExec: Any, hNode: Any, childGraph: Any) -> tuple[Any]:
    """The exec's child-graph node does `childGraph`'s work: a graph of the same nodes and
    edges (procedure 807)."""
    conn = get_connection()
    exec_handle, node_handle = dg._u64(hGraphExec, "hGraphExec"), dg._u64(hNode, "hNode")
    graph = dg._u64(childGraph, "childGraph")
    err, _ = conn.sync("CU_GRAPH_EXEC_CHILD_GRAPH_NODE_SET_PARAMS", exec_handle, node_handle, graph)
    return dg._out(err)  # type: ignore[return-value]


def cuGraphChildGraphNodeGetGraph(hNode: Any) -> tuple[Any, Any]:
    """The graph the node holds (the clone CUDA made when the node was added)."""
    err, graph, _ = _typed("cuGraphChildGraphNodeGetGraph", hNode, (dg._CHILD,))
    return dg._out(err, None if err else dg.CUgraph(int(graph)))  # type: ignore[return-value]


# -- structure --------------------------------------------------------------------------------


def cuGraphNodeGetDependentNodes(hNode: Any, numDependentNodes: int = 0) -> tuple[Any, ...]:
    """(err, dependentNodes, edgeData, numDependentNodes), as cuda-python 13: the nodes of
    the node's graph that depend on it, in the order they were added."""
    count = size_t(numDependentNodes, "cuGraphNodeGetDependentNodes: numDependentNodes")
    conn = get_connection()
    node = dg._u64(hNode, "hNode")
    err, r = conn.sync("CU_GRAPH_NODE_GET_CONTAINING_GRAPH", node)
    if err:
        return dg._out(err, None, None, None)
    err, e = conn.sync("CU_GRAPH_GET_EDGES", int(r.value))
    if err:
        return dg._out(err, None, None, None)
    dependents = [t for f, t in zip(e.value.from_nodes, e.value.to_nodes, strict=True) if f == node]
    _, items, n = dg._listed(0, dependents, count, dg.CUgraphNode)
    assert items is not None
    return (dg._SUCCESS, items, [dg.CUgraphEdgeData() for _ in items], n)


def cuGraphRemoveDependencies(
    hGraph: Any,
    from_: Sequence[Any] | None,
    to: Sequence[Any] | None,
    edgeData: Any,
    numDependencies: int,
) -> tuple[Any]:
    """Each edge from_[i] -> to[i] leaves the graph (procedure 802); all or none."""
    call = "cuGraphRemoveDependencies"
    n = size_t(numDependencies, f"{call}: numDependencies")
    froms, tos = dg._deps(call, from_, n), dg._deps(call, to, n)
    conn = get_connection()
    err, _ = conn.sync("CU_GRAPH_REMOVE_DEPENDENCIES", dg._u64(hGraph, "hGraph"), froms, tos)
    return dg._out(err)  # type: ignore[return-value]


def cuGraphNodeFindInClone(hOriginalNode: Any, hClonedGraph: Any) -> tuple[Any, Any]:
    """The node of the cloned graph made from `hOriginalNode` (procedure 806)."""
    conn = get_connection()
    node, graph = dg._u64(hOriginalNode, "hOriginalNode"), dg._u64(hClonedGraph, "hClonedGraph")
    err, r = conn.sync("CU_GRAPH_NODE_FIND_IN_CLONE", node, graph)
    return dg._out(err, None if err else dg.CUgraphNode(r.value))  # type: ignore[return-value]


# -- execs ------------------------------------------------------------------------------------


def cuGraphExecGetFlags(hGraphExec: Any) -> tuple[Any, Any]:
    """The flags the exec was instantiated with, a cuuint64_t (procedure 800)."""
    err, r = get_connection().sync("CU_GRAPH_EXEC_GET_FLAGS", dg._u64(hGraphExec, "hGraphExec"))
    return dg._out(err, None if err else cuuint64_t(int(r.value)))  # type: ignore[return-value]


def cuGraphUpload(hGraphExec: Any, hStream: Any) -> tuple[Any]:
    """The exec made ready to launch, in stream order (procedure 801)."""
    conn = get_connection()
    handle = dg._u64(hGraphExec, "hGraphExec")
    return dg._out(conn.sync("CU_GRAPH_UPLOAD", handle, dg._stream(hStream))[0])  # type: ignore[return-value]


def cuGraphInstantiateWithParams(hGraph: Any, instantiateParams: Any) -> tuple[Any, Any]:
    """cuGraphInstantiate with the params' flags, then an upload to hUploadStream when the
    flags ask for one; result_out (and hErrNode_out, none here) written back."""
    call = "cuGraphInstantiateWithParams"
    if not hasattr(instantiateParams, "hUploadStream"):
        conn = get_connection()
        return dg._fail(
            conn, dg._INVALID_VALUE,
            f"{call}: instantiateParams is not a CUDA_GRAPH_INSTANTIATE_PARAMS", 1,
        )  # type: ignore[return-value]
    p = instantiateParams
    flags = size_t(p.flags, f"{call}: flags")
    err, exec_ = dg.cuGraphInstantiate(hGraph, flags)
    p.hErrNode_out = dg.CUgraphNode(0)
    p.result_out = CUgraphInstantiateResult(0 if not err else 1)
    if err:
        return (err, None)
    if flags & INSTANTIATE_FLAG_UPLOAD:
        (err,) = cuGraphUpload(exec_, p.hUploadStream)
        if err:
            dg.cuGraphExecDestroy(exec_)
            return (err, None)
    return (dg._SUCCESS, exec_)




def cuGraphNodeSetEnabled(hGraphExec: Any, hNode: Any, isEnabled: int) -> tuple[Any]:
    """Turn the exec's kernel, memset or memcpy node off (0) or on (procedure 803)."""
    enabled = uint(isEnabled, "cuGraphNodeSetEnabled: isEnabled")
    exec_handle, node_handle = dg._u64(hGraphExec, "hGraphExec"), dg._u64(hNode, "hNode")
    err, _ = get_connection().sync("CU_GRAPH_NODE_SET_ENABLED", exec_handle, node_handle, enabled)
    return dg._out(err)  # type: ignore[return-value]


def cuGraphNodeGetEnabled(hGraphExec: Any, hNode: Any) -> tuple[Any, int | None]:
    exec_handle, node_handle = dg._u64(hGraphExec, "hGraphExec"), dg._u64(hNode, "hNode")
    err, r = get_connection().sync("CU_GRAPH_NODE_GET_ENABLED", exec_handle, node_handle)
    return dg._out(err, None if err else int(r.value))  # type: ignore[return-value]


def cuGraphDebugDotPrint(hGraph: Any, path: Any, flags: int) -> tuple[Any]:
    """The server's DOT description of the graph (its driver's on cuda, sim's own model on
    sim), written to `path` on the client (procedure 805)."""
    call = "cuGraphDebugDotPrint"
    flags = uint(flags, f"{call}: flags")
    if not isinstance(path, str | bytes | os.PathLike):
        raise TypeError(f"{call}: path must be a str or bytes, got {type(path).__name__}")
    conn = get_connection()
    err, r = conn.sync("CU_GRAPH_DEBUG_DOT", dg._u64(hGraph, "hGraph"), flags)
    if err:
        return dg._out(err)  # type: ignore[return-value]
    try:
        with open(path, "wb") as f:
            f.write(bytes(r.value))
    except OSError as exc:
        return dg._fail(
            conn, CUresult.CUDA_ERROR_OPERATING_SYSTEM, f"{call}: cannot write {path!r}: {exc}", 0
        )  # type: ignore[return-value]
    return (dg._SUCCESS,)
