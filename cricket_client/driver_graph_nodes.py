"""The polymorphic graph node calls of `cricket_client.driver`, cuGraphDestroyNode (procedure
620), and the ids of graphs, execs and nodes and a node's graph (623-627): cuGraphAddNode, cuGraphNodeSetParams, cuGraphExecNodeSetParams take a CUgraphNodeParams
and travel as the typed node calls do (the same node parameters on the wire: kernel, memcpy, memset, child
graph, empty, event record and wait); cuGraphMemcpyNodeGetParams and
cuGraphMemsetNodeGetParams read a node back. Memory alloc and free and conditional nodes are
`driver_graph_mem_cond`'s, batch memory operation nodes `driver_graph_mem_ops`'. Node types
the server does not build (host, external semaphores)
answer CUDA_ERROR_NOT_SUPPORTED naming the type. Re-exported by `cricket_client.driver`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import driver_graph_mem_cond
from . import driver_graphs as dg
from ._enums import CUgraphNodeType
from ._types import CUdeviceptr
from .array_types import CUDA_MEMCPY3D
from .connection import Connection, get_connection
from .driver_graph_access import memcpy3d_of

__all__ = [
    "cuGraphDestroyNode",
    "cuGraphGetId",
    "cuGraphExecGetId",
    "cuGraphNodeGetLocalId",
    "cuGraphNodeGetToolsId",
    "cuGraphNodeGetContainingGraph",
    "cuGraphAddNode",
    "cuGraphNodeSetParams",
    "cuGraphExecNodeSetParams",
    "cuGraphMemcpyNodeGetParams",
    "cuGraphMemsetNodeGetParams",
]

_T = CUgraphNodeType


def _wire_node(conn: Connection, call: str, p: Any) -> tuple[int, Any]:
    """(CUresult, graph_node_params) of a CUgraphNodeParams; an error sets the message."""
    kind = int(p.type)
    if kind == _T.CU_GRAPH_NODE_TYPE_KERNEL:
        err, kernel = dg._kernel_params(conn, call, p.kernel)
        return (err, None) if err else (0, dg._node(conn, dg._KERNEL, kernel))
    if kind == _T.CU_GRAPH_NODE_TYPE_MEMCPY:
        copy = dg.memcpy_node_params(conn, call, p.memcpy.copyParams)
        if isinstance(copy, str):
            conn.set_local_error(f"{call}: {copy}")
            return int(dg._NOT_SUPPORTED), None
        return 0, dg._node(conn, dg._MEMCPY, copy)
    if kind == _T.CU_GRAPH_NODE_TYPE_MEMSET:
        return 0, dg._node(conn, dg._MEMSET, dg.memset_node_params(conn, call, p.memset))
    if kind == _T.CU_GRAPH_NODE_TYPE_GRAPH:
        return 0, dg._node(conn, dg._CHILD, dg._u64(p.graph.graph, f"{call}: graph.graph"))
    if kind == _T.CU_GRAPH_NODE_TYPE_EMPTY:
        return 0, dg._node(conn, dg._EMPTY)
    if kind == _T.CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return 0, dg._node(conn, dg._WAIT, dg._u64(p.eventWait.event, f"{call}: eventWait.event"))
    if kind == _T.CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        event = dg._u64(p.eventRecord.event, f"{call}: eventRecord.event")
        return 0, dg._node(conn, dg._RECORD, event)
    if kind == _T.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        from .driver_graph_mem_ops import wire_params

        return wire_params(conn, call, p.memOp)
    more = driver_graph_mem_cond.wire_params(conn, call, p)
    if more is not None:
        return more
    try:
        name = _T(kind).name
    except ValueError:
        name = f"node type {kind}"
    conn.set_local_error(f"{call}: {name} nodes are not supported remotely")
    return int(dg._NOT_SUPPORTED), None


def cuGraphAddNode(
    hGraph: Any,
    dependencies: Sequence[Any] | None,
    dependencyData: Sequence[Any] | None,
    numDependencies: int,
    nodeParams: Any,
) -> tuple[Any, Any]:
    call = "cuGraphAddNode"
    conn = get_connection()
    deps = dg._deps(call, dependencies, numDependencies)
    if any(int(getattr(e, "type", 0) or 0) for e in dependencyData or ()):
        return dg._fail(conn, dg._NOT_SUPPORTED, f"{call}: edge data is not supported remotely", 1)
    err, node = _wire_node(conn, call, nodeParams)
    if err:
        return dg._out(err, None)
    err, added = dg._add(conn, hGraph, deps, node)
    if not err:  # what CUDA returns in nodeParams: an allocation's address, body graphs
        err = driver_graph_mem_cond.fill_outputs(conn, added, nodeParams, dg.CUgraph)
    return dg._out(err, added if not err else None)


def cuGraphNodeSetParams(hNode: Any, nodeParams: Any) -> tuple[Any]:
    call = "cuGraphNodeSetParams"
    conn = get_connection()
    err, node = _wire_node(conn, call, nodeParams)
    if err:
        return dg._out(err)  # type: ignore[return-value]
    return dg._out(conn.sync("CU_GRAPH_NODE_SET_PARAMS", dg._u64(hNode, "hNode"), node)[0])  # type: ignore[return-value]


def cuGraphExecNodeSetParams(hGraphExec: Any, hNode: Any, nodeParams: Any) -> tuple[Any]:
    call = "cuGraphExecNodeSetParams"
    conn = get_connection()
    err, node = _wire_node(conn, call, nodeParams)
    if err:
        return dg._out(err)  # type: ignore[return-value]
    exec_handle, node_handle = dg._u64(hGraphExec, "hGraphExec"), dg._u64(hNode, "hNode")
    return dg._out(conn.sync("CU_GRAPH_EXEC_NODE_SET_PARAMS", exec_handle, node_handle, node)[0])  # type: ignore[return-value]


def cuGraphDestroyNode(hNode: Any) -> tuple[Any]:
    """The node leaves its graph with its edges (procedure 620)."""
    conn = get_connection()
    return dg._out(conn.sync("CU_GRAPH_DESTROY_NODE", dg._u64(hNode, "hNode"))[0])  # type: ignore[return-value]


def _ident(procedure: str, handle: Any, what: str) -> tuple[Any, int | None]:
    err, r = get_connection().sync(procedure, dg._u64(handle, what))
    return dg._out(err, None if err else int(r.value))  # type: ignore[return-value]


def cuGraphGetId(hGraph: Any) -> tuple[Any, int | None]:
    """An id of the graph, unique in the session (procedure 623)."""
    return _ident("CU_GRAPH_GET_ID", hGraph, "hGraph")


def cuGraphExecGetId(hGraphExec: Any) -> tuple[Any, int | None]:
    return _ident("CU_GRAPH_EXEC_GET_ID", hGraphExec, "hGraphExec")


def cuGraphNodeGetLocalId(hNode: Any) -> tuple[Any, int | None]:
    return _ident("CU_GRAPH_NODE_GET_LOCAL_ID", hNode, "hNode")


def cuGraphNodeGetToolsId(hNode: Any) -> tuple[Any, int | None]:
    return _ident("CU_GRAPH_NODE_GET_TOOLS_ID", hNode, "hNode")


def cuGraphNodeGetContainingGraph(hNode: Any) -> tuple[Any, Any]:
    err, r = get_connection().sync("CU_GRAPH_NODE_GET_CONTAINING_GRAPH", dg._u64(hNode, "hNode"))
    return dg._out(err, None if err else dg.CUgraph(r.value))  # type: ignore[return-value]


def _params_of(call: str, hNode: Any, kind: int) -> tuple[int, Any, Connection]:
    conn = get_connection()
    err, r = conn.sync("CU_GRAPH_NODE_GET_PARAMS", dg._u64(hNode, "hNode"))
    if err:
        return err, None, conn
    if r.value.type != kind:
        conn.set_local_error(f"{call}: node {dg._u64(hNode, 'hNode'):#x} is not of this type")
        return int(dg._INVALID_VALUE), None, conn
    return 0, r.value.value, conn


def cuGraphMemcpyNodeGetParams(hNode: Any) -> tuple[Any, CUDA_MEMCPY3D | None]:
    """A 1D CUDA_MEMCPY3D: device sides as CUdeviceptr, host sides as the host object set."""
    err, copy, conn = _params_of("cuGraphMemcpyNodeGetParams", hNode, dg._MEMCPY)
    if err:
        return dg._out(err, None)  # type: ignore[return-value]
    return (dg._SUCCESS, memcpy3d_of(conn, copy))


def cuGraphMemsetNodeGetParams(hNode: Any) -> tuple[Any, Any]:
    err, s, _ = _params_of("cuGraphMemsetNodeGetParams", hNode, dg._MEMSET)
    if err:
        return dg._out(err, None)  # type: ignore[return-value]
    return (
        dg._SUCCESS,
        dg.CUDA_MEMSET_NODE_PARAMS(
            dst=CUdeviceptr(int(s.dst)), pitch=int(s.pitch), value=int(s.value),
            elementSize=int(s.element_size), width=int(s.width), height=int(s.height),
        ),
    )  # fmt: skip
