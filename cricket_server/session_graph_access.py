"""Reading and changing what a session's graphs and execs hold (procedures 800-839): an
exec's flags, uploads, and edges leaving a graph. Node parameters are read and set with the
node calls of `session_graphs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.graphs import (
    NODE_EMPTY,
    NODE_GRAPH,
    NODE_KERNEL,
    NODE_MEMCPY,
    NODE_MEMSET,
    ExecNode,
    GraphExecRecord,
    GraphNodeRecord,
    HostCopy,
    flatten,
)
from cricket_server.resources import HandleKind
from cricket_server.session_graphs import EXEC_UPDATABLE, SessionGraphs
from rpc_spec import cricket_rpc as proto

__all__ = ["SessionGraphAccess"]


class SessionGraphAccess(SessionGraphs):
    """cuGraphExecGetFlags, cuGraphUpload, cuGraphRemoveDependencies, cuGraphNodeSetEnabled
    and GetEnabled, cuGraphNodeFindInClone, cuGraphExecChildGraphNodeSetParams,
    cuGraphDebugDotPrint."""

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

    def _flat_child(self, call: str, node: int, child: int) -> list[ExecNode]:
        """The exec nodes of child graph `child` under child-graph node `node`; refused when it
        moves client host memory or holds nodes an exec cannot update."""
        host: list[HostCopy] = []
        nodes, _ = flatten(
            call, self._copies(call, self._graph(call, child)),
            lambda h: self._copies(call, self._graph(call, h)), self._resolver(call),
            (node,), (), host,
        )  # fmt: skip
        if host:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: graph {child:#x} copies client host memory, which is fixed when the "
                "exec is made",
            )
        for n in nodes:
            if n.type not in EXEC_UPDATABLE:
                raise CudaError(
                    CUDA_ERROR_NOT_SUPPORTED,
                    f"{call}: graph {child:#x} holds a node of type {n.type}, which an exec "
                    "cannot update remotely",
                )
        return nodes

    def graph_exec_child_set(self, handle: int, node: int, child: int) -> None:
        """The exec's child-graph node does the work of `child` (same nodes and edges, other
        parameters); the exec keeps a clone of it, as CUDA copies it."""
        call = "cuGraphExecChildGraphNodeSetParams"
        self.current(call)
        record, kind = self._exec_node(call, handle, node)
        if kind != NODE_GRAPH:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: node {node:#x} is no child-graph node")
        i = next(j for j, n in enumerate(record.nodes) if n.handle == node)
        held = int(record.nodes[i].params.value)
        old, new = self._flat_child(call, node, held), self._flat_child(call, node, child)
        at_old = {n.key: j for j, n in enumerate(old)}
        at_new = {n.key: j for j, n in enumerate(new)}
        if len(old) != len(new) or any(
            o.type != n.type
            or sorted(at_old[d] for d in o.deps if d in at_old)
            != sorted(at_new[d] for d in n.deps if d in at_new)
            for o, n in zip(old, new, strict=False)
        ):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: graph {child:#x} differs from the exec's child graph in its nodes or "
                "edges (only parameters can change)",
            )
        clone = self.graph_clone(child, call)
        for o, n in zip(old, new, strict=True):
            if n.type != NODE_EMPTY:
                self.bsession.graph_exec_set_node(
                    record.obj, dataclasses.replace(n, key=o.key, deps=o.deps)
                )
        current = record.nodes[i]
        graph_node = self.handles.get(call, HandleKind.GRAPH_NODE, node, GraphNodeRecord)
        if held != int(graph_node.params.value) and held in self.handles:
            self._drop_graph(self._graph(call, held))  # the clone an earlier call gave the exec
        record.nodes[i] = GraphNodeRecord(
            handle=current.handle, ctx=current.ctx, graph=current.graph,
            params=proto.graph_node_params(NODE_GRAPH, clone), deps=list(current.deps),
        )
