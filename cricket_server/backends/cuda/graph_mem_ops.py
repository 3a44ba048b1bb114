"""Batch memory operation nodes of graph execs on the cuda backend: the real graph gets a
cuGraphAddBatchMemOpNode with the node's operations (CUDA_BATCH_MEM_OP_NODE_PARAMS in the
exec's context), changed with cuGraphExecBatchMemOpNodeSetParams."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import stream_mem_ops as smo
from ._driver import call, driver

__all__ = ["CudaGraphMemOps", "batch_mem_op_params"]

_BATCH_MEM_OP = 12  # CU_GRAPH_NODE_TYPE_BATCH_MEM_OP


def batch_mem_op_params(ops: Sequence[Any], ctx: Any) -> Any:
    """CUDA_BATCH_MEM_OP_NODE_PARAMS of checked StreamMemOps, each in the arm its type names."""
    items = []
    for m in ops:
        p = driver.CUstreamBatchMemOpParams()
        kind = driver.CUstreamBatchMemOpType(m.op)
        p.operation = kind
        if smo.value_size(m.op):
            arm = p.waitValue if m.op in (smo.WAIT_32, smo.WAIT_64) else p.writeValue
            arm.operation = kind
            arm.address = driver.CUdeviceptr(m.address)
            if m.op in (smo.WAIT_64, smo.WRITE_64):
                arm.value64 = driver.cuuint64_t(m.value)
            else:
                arm.value = driver.cuuint32_t(m.value)
            arm.flags = m.flags
        else:
            arm = p.memoryBarrier if m.op == smo.BARRIER else p.flushRemoteWrites
            arm.operation = kind
            arm.flags = m.flags
        items.append(p)
    params = driver.CUDA_BATCH_MEM_OP_NODE_PARAMS()
    params.ctx = ctx
    params.count = len(items)
    params.paramArray = items
    params.flags = 0
    return params


class CudaGraphMemOps:
    """Batch memory operation nodes (mixed into CudaSession before CudaGraphs)."""

    _state: Any

    def _add_node(self, made: Any, graph: Any, deps: list[Any], node: Any, ctx: Any) -> Any:
        if node.type != _BATCH_MEM_OP:
            return super()._add_node(made, graph, deps, node, ctx)  # type: ignore[misc]
        params = batch_mem_op_params(node.mem_ops, ctx)
        return call(driver.cuGraphAddBatchMemOpNode, graph, deps, len(deps), params)

    def graph_exec_set_node(self, exec_: object, node: Any) -> None:
        if node.type != _BATCH_MEM_OP:
            super().graph_exec_set_node(exec_, node)  # type: ignore[misc]
            return
        made = self._exec_of(exec_)  # type: ignore[attr-defined]
        state = self._state()
        target = made.nodes[node.key]
        params = batch_mem_op_params(node.mem_ops, state.context.handle)
        call(driver.cuGraphExecBatchMemOpNodeSetParams, made.exec, target, params)
