"""CRICKET_V1 procedures 800-839: reading and changing what graphs and execs hold.

Mixed into `CricketService`; the work is `Session`'s (`cricket_server.session_graph_access`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cricket_server.backends.base import CUDA_SUCCESS
from rpc_spec import cricket_rpc as proto

__all__ = ["GraphAccessProcedures"]


class GraphAccessProcedures:
    """The procedures of `CricketService` (which supplies `_status`, `_result`) for
    cuGraphExecGetFlags, cuGraphUpload, cuGraphRemoveDependencies, cuGraphNodeSet/GetEnabled,
    cuGraphNodeFindInClone and cuGraphDebugDotPrint."""

    _run: Callable[..., tuple[int, Any]]
    _status: Callable[..., int]
    _result: Callable[..., Any]

    def CU_GRAPH_EXEC_GET_FLAGS(self, ctx: Any, exec_: int) -> proto.u64_result:
        return self._result(
            proto.u64_result, ctx, "cuGraphExecGetFlags", lambda s: s.graph_exec_flags(exec_)
        )

    def CU_GRAPH_UPLOAD(self, ctx: Any, exec_: int, stream: int) -> int:
        return self._status(ctx, "cuGraphUpload", lambda s: s.graph_upload(exec_, stream))

    def CU_GRAPH_REMOVE_DEPENDENCIES(
        self, ctx: Any, graph: int, froms: list[int], tos: list[int]
    ) -> int:
        return self._status(
            ctx, "cuGraphRemoveDependencies",
            lambda s: s.graph_remove_dependencies(graph, froms, tos),
        )

    def CU_GRAPH_NODE_SET_ENABLED(self, ctx: Any, exec_: int, node: int, enabled: int) -> int:
        return self._status(
            ctx, "cuGraphNodeSetEnabled",
            lambda s: s.graph_node_set_enabled(exec_, node, enabled),
        )

    def CU_GRAPH_NODE_GET_ENABLED(self, ctx: Any, exec_: int, node: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuGraphNodeGetEnabled",
            lambda s: s.graph_node_get_enabled(exec_, node),
        )

    def CU_GRAPH_DEBUG_DOT(self, ctx: Any, graph: int, flags: int) -> proto.mem_result:
        code, data = self._run(
            ctx, "cuGraphDebugDotPrint", lambda s: s.graph_debug_dot(graph, flags)
        )
        return proto.mem_result(code, data if code == CUDA_SUCCESS else None)

    def CU_GRAPH_NODE_FIND_IN_CLONE(self, ctx: Any, node: int, graph: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuGraphNodeFindInClone",
            lambda s: s.node_find_in_clone(node, graph),
        )

    def CU_GRAPH_EXEC_CHILD_GRAPH_NODE_SET_PARAMS(
        self, ctx: Any, exec_: int, node: int, graph: int
    ) -> int:
        return self._status(
            ctx, "cuGraphExecChildGraphNodeSetParams",
            lambda s: s.graph_exec_child_set(exec_, node, graph),
        )
