"""Reading and changing what a session's graphs and execs hold (procedures 800-839): an
exec's flags, uploads, and edges leaving a graph. Node parameters are read and set with the
node calls of `session_graphs`.
"""

from __future__ import annotations

from collections.abc import Sequence

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.graphs import (
    NODE_KERNEL,
    NODE_MEMCPY,
    NODE_MEMSET,
    GraphExecRecord,
    flatten,
)
from cricket_server.session_graphs import SessionGraphs

__all__ = ["SessionGraphAccess"]


class SessionGraphAccess(SessionGraphs):
    """cuGraphExecGetFlags, cuGraphUpload, cuGraphRemoveDependencies, cuGraphNodeSetEnabled
    and GetEnabled, cuGraphNodeFindInClone, cuGraphDebugDotPrint."""

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

    def _exec_node(self, call: str, handle: int, node: int) -> tuple[GraphExecRecord, int]:
        """The exec and the type of its copy of `node` (a node of the graph it was made from)."""
        record = self._exec(call, handle)
        self._node(call, node)  # a live node of this session
        kind = next((n.type for n in record.nodes if n.handle == node), None)
        if kind is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: node {node:#x} is not in the graph exec {handle:#x} was made from",
            )
        return record, kind

    def graph_node_set_enabled(self, handle: int, node: int, enabled: int) -> None:
        """Turn a kernel, memset or memcpy node of the exec off (0) or on; a memcpy node with
        client host memory stays on (its bytes travel with every launch)."""
        call = "cuGraphNodeSetEnabled"
        self.current(call)
        record, kind = self._exec_node(call, handle, node)
        if kind not in (NODE_KERNEL, NODE_MEMSET, NODE_MEMCPY):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: only kernel, memset and memcpy nodes can be disabled; node {node:#x} "
                f"is of type {kind}",
            )
        params = next(n.params.value for n in record.nodes if n.handle == node)
        if kind == NODE_MEMCPY and (params.dst_host or params.src_host):
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: memcpy node {node:#x} copies client host memory, whose bytes travel "
                "with every launch; it cannot be disabled remotely",
            )
        self.bsession.graph_exec_set_enabled(record.obj, node, bool(enabled))
        if enabled:
            record.disabled.discard(node)
        else:
            record.disabled.add(node)

    def graph_node_get_enabled(self, handle: int, node: int) -> int:
        call = "cuGraphNodeGetEnabled"
        self.require_init(call)
        record, _ = self._exec_node(call, handle, node)
        return 0 if node in record.disabled else 1

    def graph_debug_dot(self, handle: int, flags: int) -> bytes:
        """The backend's DOT text of the graph (child graphs expanded, as instantiated)."""
        call = "cuGraphDebugDotPrint"
        self.current(call)
        nodes = self._copies(call, self._graph(call, handle))
        exec_nodes, _ = flatten(
            call, nodes, lambda h: self._copies(call, self._graph(call, h)), self._resolver(call)
        )
        return self.bsession.graph_debug_dot(exec_nodes, flags).encode()

    def node_find_in_clone(self, node: int, clone: int) -> int:
        """The node of graph `clone` that was cloned from `node`."""
        call = "cuGraphNodeFindInClone"
        self.require_init(call)
        self._node(call, node)
        for h in self._graph(call, clone).nodes:
            if self._node(call, h).origin == node:
                return h
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE, f"{call}: graph {clone:#x} holds no clone of node {node:#x}"
        )
