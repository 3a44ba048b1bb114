"""CRICKET_V1 procedures 620-639: calls cuda-python's binding tests reach that the other
families leave out (cuGraphDestroyNode is the graphs family's: `graph_procedures`).

Mixed into `CricketService`; every procedure runs through its `_result` (errors as CUresults,
kept for GET_ERROR_MESSAGE). Names come from the session's records of the lookups
(cuModuleGetFunction, cuLibraryGetKernel); graph, exec and node ids and a node's graph from
the session's graph model (ids are the low 32 bits of the handles, unique in the session,
never 0): no backend work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cricket_server.graphs import GraphExecRecord, GraphNodeRecord, GraphRecord
from cricket_server.resources import HandleKind, KernelRecord
from rpc_spec import cricket_rpc as proto

__all__ = ["BindingProcedures"]


class BindingProcedures:
    """Procedures 621-627 of `CricketService` (which supplies `_result`)."""

    _result: Callable[..., Any]

    def CU_FUNC_GET_NAME(self, ctx: Any, func: int) -> proto.str_result:
        call = "cuFuncGetName"
        return self._result(proto.str_result, ctx, call, lambda s: s.function(call, func).name)

    def CU_KERNEL_GET_NAME(self, ctx: Any, kernel: int) -> proto.str_result:
        call = "cuKernelGetName"

        def name(s: Any) -> str:
            s.require_init(call)
            return str(s.handles.get(call, HandleKind.KERNEL, kernel, KernelRecord).name)

        return self._result(proto.str_result, ctx, call, name)

    def _id(
        self, ctx: Any, call: str, kind: HandleKind, record: type, handle: int, bits: int
    ) -> Any:
        def ident(s: Any) -> int:
            s.require_init(call)
            return int(s.handles.get(call, kind, handle, record).handle) & ((1 << bits) - 1)

        return self._result(proto.u64_result, ctx, call, ident)

    def CU_GRAPH_GET_ID(self, ctx: Any, graph: int) -> proto.u64_result:
        return self._id(ctx, "cuGraphGetId", HandleKind.GRAPH, GraphRecord, graph, 32)

    def CU_GRAPH_EXEC_GET_ID(self, ctx: Any, exec_: int) -> proto.u64_result:
        return self._id(ctx, "cuGraphExecGetId", HandleKind.GRAPH_EXEC, GraphExecRecord, exec_, 32)

    def CU_GRAPH_NODE_GET_LOCAL_ID(self, ctx: Any, node: int) -> proto.u64_result:
        call = "cuGraphNodeGetLocalId"
        return self._id(ctx, call, HandleKind.GRAPH_NODE, GraphNodeRecord, node, 32)

    def CU_GRAPH_NODE_GET_TOOLS_ID(self, ctx: Any, node: int) -> proto.u64_result:
        call = "cuGraphNodeGetToolsId"
        return self._id(ctx, call, HandleKind.GRAPH_NODE, GraphNodeRecord, node, 64)

    def CU_GRAPH_NODE_GET_CONTAINING_GRAPH(self, ctx: Any, node: int) -> proto.handle_result:
        call = "cuGraphNodeGetContainingGraph"

        def graph(s: Any) -> int:
            s.require_init(call)
            return int(s.handles.get(call, HandleKind.GRAPH_NODE, node, GraphNodeRecord).graph)

        return self._result(proto.handle_result, ctx, call, graph)
