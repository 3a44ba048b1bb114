"""Reading and changing what a session's graphs and execs hold (procedures 800-839): an
exec's flags, uploads, and edges leaving a graph. Node parameters are read and set with the
node calls of `session_graphs`.
"""

from __future__ import annotations

from collections.abc import Sequence

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.session_graphs import SessionGraphs

__all__ = ["SessionGraphAccess"]


class SessionGraphAccess(SessionGraphs):
    """cuGraphExecGetFlags, cuGraphUpload, cuGraphRemoveDependencies."""

    def graph_exec_flags(self, handle: int) -> int:
        call = "cuGraphExecGetFlags"
        self.require_init(call)
        return self._exec(call, handle).flags

    def graph_upload(self, handle: int, stream: int) -> None:
        call = "cuGraphUpload"
        self.current(call)
        record = self._exec(call, handle)
        if self._capture_of(stream) is not None:
            raise self._unsupported_in_capture(call, stream)
        self.bsession.graph_upload(record.obj, self._stream(call, stream))

    def graph_remove_dependencies(
        self, handle: int, froms: Sequence[int], tos: Sequence[int]
    ) -> None:
        """Each edge froms[i] -> tos[i] leaves the graph; an edge that is not there is
        CUDA_ERROR_INVALID_VALUE and then none leaves."""
        call = "cuGraphRemoveDependencies"
        self.require_init(call)
        graph = self._graph(call, handle)
        if len(froms) != len(tos):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {len(froms)} 'from' nodes and {len(tos)} 'to' nodes",
            )
        pairs: list[tuple[int, int]] = []
        for f, t in zip(froms, tos, strict=True):
            self._deps(call, graph, [f, t] if f != t else [f])
            if f not in self._node(call, t).deps or (f, t) in pairs:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"{call}: there is no edge {f:#x} -> {t:#x}"
                )
            pairs.append((f, t))
        for f, t in pairs:
            self._node(call, t).deps.remove(f)
