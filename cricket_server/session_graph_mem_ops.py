"""Batch memory operation nodes of a session's graphs (cuGraphAddBatchMemOpNode,
cuGraphBatchMemOpNodeGetParams/SetParams, cuGraphExecBatchMemOpNodeSetParams, and the
polymorphic calls with CU_GRAPH_NODE_TYPE_BATCH_MEM_OP).

A node holds its operations (wait/write value 32/64, flush remote writes, barrier: cricket.x's
graph_mem_op) checked as cuStreamBatchMemOp's are (`cricket_server.stream_mem_ops`: known
operation and flags, aligned address, a value no wider than the operation, the address in the
session's memory) and its context (the current one when 0). It is cloned, instantiated and
checkpointed as other nodes are (its parameters are graph_node_params' arm 12); a backend gets
the operations in `ExecNode.mem_ops`. An exec's node may change what CUDA lets it change: the
addresses, values and wait conditions, not the count, the operations' types or a wait's flush
bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.graphs import NODE_BATCH_MEM_OP, ExecNode, GraphExecRecord, GraphNodeRecord
from cricket_server.session_graphs import SessionGraphs
from cricket_server.stream_mem_ops import (
    WAIT_32,
    WAIT_64,
    WAIT_FLUSH,
    StreamMemOp,
    check_op,
    value_size,
)
from rpc_spec import cricket_rpc as proto

__all__ = ["SessionGraphMemOps", "mem_ops_of"]


def mem_ops_of(params: Any) -> tuple[StreamMemOp, ...]:
    """The operations of a batch memory operation node's graph_node_params."""
    return tuple(
        StreamMemOp(int(m.op), int(m.flags), int(m.address), int(m.value)) for m in params.value.ops
    )


class SessionGraphMemOps(SessionGraphs):
    """Batch memory operation nodes: checked when added or set, resolved for backends."""

    def _checked_params(self, call: str, params: Any, graph: int) -> Any:
        if int(params.type) != NODE_BATCH_MEM_OP:
            return super()._checked_params(call, params, graph)
        call = "cuGraphAddBatchMemOpNode" if call == "cuGraphAddNode" else call
        p = params.value
        current = self.current(call)
        if int(p.flags):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: flags {int(p.flags):#x} (must be 0)"
            )
        if not p.ops:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: count is 0")
        ctx = self._ctx(call, int(p.ctx)).handle if int(p.ctx) else current.handle
        ops = mem_ops_of(params)
        for m in ops:
            check_op(call, m)
            size = value_size(m.op)
            if size:
                self.memory.span(call, m.address, size)
        return proto.graph_node_params(
            NODE_BATCH_MEM_OP,
            proto.graph_batch_mem_op_params(
                ctx=ctx, flags=0, ops=[proto.graph_mem_op(*m) for m in ops]
            ),
        )

    def _resolver(self, call: str) -> Any:
        inner = super()._resolver(call)

        def resolve(
            node: GraphNodeRecord, key: object, deps: tuple[object, ...], host: list[Any]
        ) -> ExecNode:
            if node.type == NODE_BATCH_MEM_OP:
                return ExecNode(key, NODE_BATCH_MEM_OP, deps, mem_ops=mem_ops_of(node.params))
            return inner(node, key, deps, host)  # type: ignore[no-any-return]

        return resolve

    def _exec_update(self, call: str, record: GraphExecRecord, i: int, params: Any) -> None:
        old = record.nodes[i]
        if old.type != NODE_BATCH_MEM_OP or int(params.type) != NODE_BATCH_MEM_OP:
            super()._exec_update(call, record, i, params)
            return
        call = "cuGraphExecBatchMemOpNodeSetParams"
        params = self._checked_params(call, params, old.graph)
        _check_exec_change(call, old.handle, mem_ops_of(old.params), mem_ops_of(params))
        new = GraphNodeRecord(
            handle=old.handle,
            ctx=old.ctx,
            graph=old.graph,
            params=params,
            deps=list(old.deps),
            attrs=dict(old.attrs),
        )
        self.bsession.graph_exec_set_node(record.obj, self._resolver(call)(new, new.handle, (), []))
        record.nodes[i] = new


def _check_exec_change(
    call: str, node: int, old: Sequence[StreamMemOp], new: Sequence[StreamMemOp]
) -> None:
    """What an exec's batch memory operation node may change (CUDA's list)."""
    if len(old) != len(new):
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: node {node:#x} has {len(old)} operations; an exec's count cannot change",
        )
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        if a.op != b.op:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: operation {i} of node {node:#x} is of type {a.op}; an exec's types cannot change",
            )
        wait = a.op in (WAIT_32, WAIT_64)
        if (a.flags ^ b.flags) & (WAIT_FLUSH if wait else ~0):
            what = "the wait's flush bit" if wait else "the flags"
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: operation {i} of node {node:#x}: {what} cannot change in an exec",
            )
