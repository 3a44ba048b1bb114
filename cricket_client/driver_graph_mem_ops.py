"""Batch memory operation nodes and cuGraphAddNode_v3 of `cricket_client.driver`:
cuGraphAddBatchMemOpNode, cuGraphBatchMemOpNodeGetParams/SetParams,
cuGraphExecBatchMemOpNodeSetParams, and CU_GRAPH_NODE_TYPE_BATCH_MEM_OP in the polymorphic
node calls. The operations (wait/write value 32/64, flush remote writes, barrier) travel as
cuStreamBatchMemOp's do, each read from the arm its `operation` names; the server checks them
as it checks a stream's. cuGraphAddNode_v3 is cuGraphAddNode with default edges only (other
edge data is refused naming the call). Re-exported by `cricket_client.driver`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import driver_graphs as dg
from ._args import uint
from ._types import CUcontext, CUdeviceptr, as_int
from ._types_vmm import cuuint64_t
from .connection import Connection, get_connection
from .plain_types import CUDA_BATCH_MEM_OP_NODE_PARAMS, CUstreamBatchMemOpParams, cuuint32_t

__all__ = [
    "cuGraphAddBatchMemOpNode",
    "cuGraphBatchMemOpNodeGetParams",
    "cuGraphBatchMemOpNodeSetParams",
    "cuGraphExecBatchMemOpNodeSetParams",
    "cuGraphAddNode_v3",
]

BATCH_MEM_OP = 12  # CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
_WAIT_32, _WRITE_32, _FLUSH, _WAIT_64, _WRITE_64, _BARRIER = 1, 2, 3, 4, 5, 6


def wire_params(conn: Connection, call: str, p: Any) -> tuple[int, Any]:
    """(CUresult, graph_node_params) of a CUDA_BATCH_MEM_OP_NODE_PARAMS."""
    from .driver_tail import _mem_op

    if p is None:
        conn.set_local_error(f"{call}: nodeParams is None")
        return int(dg._INVALID_VALUE), None
    count = uint(p.count, f"{call}: count")
    items = list(p.paramArray or [])
    if len(items) < count:
        conn.set_local_error(f"{call}: count {count} but {len(items)} operations in paramArray")
        return int(dg._INVALID_VALUE), None
    ops = [
        conn.proto.graph_mem_op(op=o, flags=f, address=a, value=v)
        for o, f, a, v in (_mem_op(m) for m in items[:count])
    ]
    value = conn.proto.graph_batch_mem_op_params(
        ctx=as_int(p.ctx), flags=uint(p.flags, f"{call}: flags"), ops=ops
    )
    return 0, dg._node(conn, BATCH_MEM_OP, value)


def params_of(v: Any) -> CUDA_BATCH_MEM_OP_NODE_PARAMS:
    """The CUDA_BATCH_MEM_OP_NODE_PARAMS of the server's graph_batch_mem_op_params."""
    items = []
    for m in v.ops:
        item = CUstreamBatchMemOpParams()
        op = int(m.op)
        item.operation = op
        if op in (_WAIT_32, _WAIT_64, _WRITE_32, _WRITE_64):
            arm = item.waitValue if op in (_WAIT_32, _WAIT_64) else item.writeValue
            arm.address = CUdeviceptr(int(m.address))
            if op in (_WAIT_64, _WRITE_64):
                arm.value64 = cuuint64_t(int(m.value))
            else:
                arm.value = cuuint32_t(int(m.value))
            arm.flags = int(m.flags)
        else:
            (item.memoryBarrier if op == _BARRIER else item.flushRemoteWrites).flags = int(m.flags)
        items.append(item)
    return CUDA_BATCH_MEM_OP_NODE_PARAMS(
        ctx=CUcontext(int(v.ctx)), count=len(items), paramArray=items, flags=int(v.flags)
    )


def cuGraphAddBatchMemOpNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, nodeParams: Any
) -> tuple[Any, Any]:
    call = "cuGraphAddBatchMemOpNode"
    conn = get_connection()
    deps = dg._deps(call, dependencies, numDependencies)
    err, node = wire_params(conn, call, nodeParams)
    if err:
        return dg._out(err, None)
    return dg._add(conn, hGraph, deps, node)


def cuGraphBatchMemOpNodeGetParams(hNode: Any) -> tuple[Any, Any]:
    """The node's operations, as they were set."""
    from .driver_graph_access import _typed

    err, value, _conn = _typed("cuGraphBatchMemOpNodeGetParams", hNode, (BATCH_MEM_OP,))
    return dg._out(err, None if err else params_of(value))


def cuGraphBatchMemOpNodeSetParams(hNode: Any, nodeParams: Any) -> tuple[Any]:
    conn = get_connection()
    err, node = wire_params(conn, "cuGraphBatchMemOpNodeSetParams", nodeParams)
    if err:
        return dg._out(err)  # type: ignore[return-value]
    return dg._out(conn.sync("CU_GRAPH_NODE_SET_PARAMS", dg._u64(hNode, "hNode"), node)[0])  # type: ignore[return-value]


def cuGraphExecBatchMemOpNodeSetParams(hGraphExec: Any, hNode: Any, nodeParams: Any) -> tuple[Any]:
    """Addresses, values and wait conditions may change; the count, the operations' types and
    a wait's flush bit may not (the server refuses them, as CUDA does)."""
    conn = get_connection()
    err, node = wire_params(conn, "cuGraphExecBatchMemOpNodeSetParams", nodeParams)
    if err:
        return dg._out(err)  # type: ignore[return-value]
    exec_handle, node_handle = dg._u64(hGraphExec, "hGraphExec"), dg._u64(hNode, "hNode")
    return dg._out(conn.sync("CU_GRAPH_EXEC_NODE_SET_PARAMS", exec_handle, node_handle, node)[0])  # type: ignore[return-value]


def cuGraphAddNode_v3(
    hGraph: Any,
    dependencies: Sequence[Any] | None,
    dependencyData: Sequence[Any] | None,
    numDependencies: int,
    nodeParams: Any,
) -> tuple[Any, Any]:
    """cuGraphAddNode with default edges (dependencyData None or all zero)."""
    from .driver_graph_nodes import cuGraphAddNode

    if dg._edge_data_given(dependencyData):
        return dg._fail(
            get_connection(), dg._NOT_SUPPORTED, f"cuGraphAddNode_v3: {dg._EDGES_WHY}", 1
        )
    return cuGraphAddNode(hGraph, dependencies, None, numDependencies, nodeParams)  # type: ignore[no-any-return]
