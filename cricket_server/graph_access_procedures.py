"""CRICKET_V1 procedures 800-839: reading and changing what graphs and execs hold.

Mixed into `CricketService`; the work is `Session`'s (`cricket_server.session_graph_access`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rpc_spec import cricket_rpc as proto

__all__ = ["GraphAccessProcedures"]


class GraphAccessProcedures:
    """The procedures of `CricketService` (which supplies `_status`, `_result`) for
    cuGraphExecGetFlags, cuGraphUpload and cuGraphRemoveDependencies."""

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
