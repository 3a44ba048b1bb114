"""The CUDA graph calls of a session: graphs, nodes, execs, launches and stream capture.

Graphs and their nodes live here (`cricket_server.graphs`); a backend only instantiates
(flattened, topologically ordered `ExecNode`s) and launches. Stream capture is the session's
too: while a stream captures, the pipelined work sent for it (launches, device copies,
memsets, captured host copies, event waits) becomes nodes of its graph instead of running;
an event recorded on a capturing stream carries the capture's position to the streams that
wait for it (fork and join, as CUDA does).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.graphs import (
    CAPTURE_ACTIVE,
    CAPTURE_INVALIDATED,
    CAPTURE_NONE,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
    CUDA_ERROR_ILLEGAL_STATE,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    NODE_EMPTY,
    NODE_EVENT_RECORD,
    NODE_GRAPH,
    NODE_KERNEL,
    NODE_MEMCPY,
    NODE_MEMSET,
    NODE_WAIT_EVENT,
    ExecNode,
    GraphExecRecord,
    GraphNodeRecord,
    GraphRecord,
    HostCopy,
    flatten,
)
from cricket_server.resources import EventRecord, HandleKind
from cricket_server.session_contexts import SessionContexts
from cricket_server.session_core import STREAM_LEGACY
from cricket_server.session_memcalls import SessionMemoryCalls
from cricket_server.session_mempools import SessionMemPools
from cricket_server.session_modules import SessionModules
from cricket_server.session_runtime import SessionRuntime
from cricket_server.session_streams import SessionStreams
from rpc_spec import cricket_rpc as proto

if TYPE_CHECKING:
    from cricket_server.launch_batch import Launch

_capture_ids = itertools.count(1)
CAPTURE_MODE_RELAXED = 2  # CUstreamCaptureMode  # capture sequence ids, unique in the process
# the potentially unsafe calls a thread's capture mode governs (CU_STREAM_CAPTURE_PROHIBIT)
PROHIBITED_CALLS = ("cuMemAlloc", "cuMemFree")
# node types whose parameters an exec can change (cuGraphExec*NodeSetParams, cuGraphExecUpdate)
EXEC_UPDATABLE = (
    NODE_KERNEL, NODE_MEMSET, NODE_MEMCPY, NODE_EMPTY, NODE_WAIT_EVENT, NODE_EVENT_RECORD
)
_NODE_NAMES = {
    NODE_KERNEL: "kernel",
    NODE_MEMCPY: "memcpy",
    NODE_MEMSET: "memset",
    NODE_GRAPH: "child graph",
    NODE_EMPTY: "empty",
    NODE_WAIT_EVENT: "event wait",
    NODE_EVENT_RECORD: "event record",
}


@dataclass
class CaptureSequence:
    """One capture: begun on `origin`, recording into `graph`."""

    graph: int
    id: int
    mode: int
    origin: int
    invalid: str = ""  # why it was invalidated
    owned: bool = True  # the capture made the graph (cuStreamBeginCaptureToGraph: the caller's)


@dataclass
class StreamCapture:
    """A stream taking part in a capture, and the nodes its next work depends on."""

    seq: CaptureSequence
    tail: list[int] = field(default_factory=list)


class SessionGraphs(
    SessionContexts,
    SessionMemPools,
    SessionMemoryCalls,
    SessionModules,
    SessionStreams,
    SessionRuntime,
):
    """cuGraph*, cuStreamBeginCapture/EndCapture/GetCaptureInfo, and capture of the
    pipelined calls of the other domains (this mixin comes first in `Session`)."""

    _captures: dict[int, StreamCapture]
    _event_marks: dict[int, tuple[CaptureSequence, list[int]]]

    def _capture_of(self, stream: int) -> StreamCapture | None:
        captures = self.__dict__.get("_captures")
        return captures.get(stream) if captures else None

    # -- graphs -----------------------------------------------------------------------------
    def _graph(self, call: str, handle: int) -> GraphRecord:
        return self.handles.get(call, HandleKind.GRAPH, handle, GraphRecord)

    def _node(self, call: str, handle: int) -> GraphNodeRecord:
        return self.handles.get(call, HandleKind.GRAPH_NODE, handle, GraphNodeRecord)

    def _exec(self, call: str, handle: int) -> GraphExecRecord:
        return self.handles.get(call, HandleKind.GRAPH_EXEC, handle, GraphExecRecord)

    def graph_create(self, flags: int) -> int:
        call = "cuGraphCreate"
        ctx = self.current(call)
        if flags:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: flags must be 0, got {flags}")
        return self.handles.add(HandleKind.GRAPH, GraphRecord, ctx=ctx.handle, flags=0).handle

    def graph_destroy(self, handle: int, call: str = "cuGraphDestroy") -> None:
        self.require_init(call)
        graph = self._graph(call, handle)
        for capture in (self.__dict__.get("_captures") or {}).values():
            if capture.seq.graph == handle:
                raise CudaError(
                    CUDA_ERROR_ILLEGAL_STATE,
                    f"{call}: graph {handle:#x} is being captured into (end the capture first)",
                )
        self._drop_graph(graph)

    def _drop_graph(self, graph: GraphRecord) -> None:
        for nh in graph.nodes:
            node = self.handles.get("cuGraphDestroy", HandleKind.GRAPH_NODE, nh, GraphNodeRecord)
            if node.type == NODE_GRAPH and int(node.params.value) in self.handles:
                # the child graph a child-graph node owns (cloned when it was added)
                self._drop_graph(self._graph("cuGraphDestroy", int(node.params.value)))
            self.handles.remove(nh)
        self.handles.remove(graph.handle)

    def graph_add_node(self, graph_handle: int, deps: Sequence[int], params: Any) -> int:
        call = f"cuGraphAdd{_add_name(int(params.type))}Node"
        ctx = self.current(call)
        graph = self._graph(call, graph_handle)
        deps = self._deps(call, graph, deps)
        params = self._checked_params(call, params, graph_handle)
        return self._add_node(graph, ctx.handle, params, deps)

    def _add_node(
        self, graph: GraphRecord, ctx: int, params: Any, deps: list[int], origin: int = 0
    ) -> int:
        node = self.handles.add(
            HandleKind.GRAPH_NODE, GraphNodeRecord, ctx=ctx, graph=graph.handle,
            params=params, deps=list(deps), origin=origin,
        )
        graph.nodes.append(node.handle)
        return node.handle

    def _deps(self, call: str, graph: GraphRecord, deps: Sequence[int]) -> list[int]:
        out: list[int] = []
        for h in deps:
            node = self._node(call, h)
            if node.graph != graph.handle:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: dependency {h:#x} is a node of graph {node.graph:#x}, not of "
                    f"graph {graph.handle:#x}",
                )
            if h in out:
                raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: dependency {h:#x} given twice")
            out.append(h)
        return out

    def _checked_params(self, call: str, params: Any, graph: int) -> Any:
        """Check what a node refers to (functions, memory, events, graphs) is the session's;
        a child graph is cloned, as CUDA does, and the node refers to the clone."""
        kind = int(params.type)
        if kind == NODE_KERNEL:
            self._check_kernel(call, params.value)
        elif kind == NODE_MEMCPY:
            self._check_memcpy(call, params.value)
        elif kind == NODE_MEMSET:
            self._check_memset(call, params.value)
        elif kind == NODE_GRAPH:
            child = int(params.value)
            if child == graph:
                raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: a graph cannot contain itself")
            clone = self.graph_clone(child, call)
            params = proto.graph_node_params(NODE_GRAPH, clone)
        elif kind in (NODE_WAIT_EVENT, NODE_EVENT_RECORD):
            self._event(call, int(params.value))
        elif kind != NODE_EMPTY:
            raise CudaError(CUDA_ERROR_NOT_SUPPORTED, f"{call}: node type {kind} is not supported")
        return params

    def _check_kernel(self, call: str, k: Any) -> None:
        _, need, name = self._launch_target(call, k.function)
        if len(k.params) < need:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: function {k.function:#x} takes {need} bytes of parameters, got "
                f"{len(k.params)} (kernel {name})",
            )
        if min(k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z) == 0:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: grid and block dimensions must be >= 1"
            )

    def _check_memcpy(self, call: str, c: Any) -> None:
        if c.dst_host and c.src_host:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: host-to-host memcpy nodes are not supported remotely (copy on the "
                "client)",
            )
        if c.size == 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: a memcpy node of 0 bytes")
        if not c.dst_host:
            self.memory.span(call, c.dst, c.size)
        if not c.src_host:
            self.memory.span(call, c.src, c.size)

    def _check_memset(self, call: str, m: Any) -> None:
        if m.element_size not in (1, 2, 4):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: elementSize must be 1, 2 or 4, got {m.element_size}",
            )
        if m.width == 0 or m.height == 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: width and height must be >= 1")
        row = m.width * m.element_size
        if m.height > 1 and m.pitch < row:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: pitch {m.pitch} is below a row ({row} bytes)"
            )
        if m.dst % m.element_size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {m.dst:#x} is not {m.element_size}-byte aligned",
            )
        self.memory.span(call, m.dst, (m.height - 1) * m.pitch + row)

    def graph_nodes(self, handle: int) -> list[int]:
        return list(self._graph("cuGraphGetNodes", handle).nodes)

    def graph_root_nodes(self, handle: int) -> list[int]:
        call = "cuGraphGetRootNodes"
        graph = self._graph(call, handle)
        return [h for h in graph.nodes if not self._node(call, h).deps]

    def graph_edges(self, handle: int) -> tuple[list[int], list[int]]:
        call = "cuGraphGetEdges"
        graph = self._graph(call, handle)
        froms: list[int] = []
        tos: list[int] = []
        for h in graph.nodes:
            for d in self._node(call, h).deps:
                froms.append(d)
                tos.append(h)
        return froms, tos

    def graph_add_dependencies(self, handle: int, froms: Sequence[int], tos: Sequence[int]) -> None:
        call = "cuGraphAddDependencies"
        self.require_init(call)
        graph = self._graph(call, handle)
        if len(froms) != len(tos):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {len(froms)} 'from' nodes and {len(tos)} 'to' nodes",
            )
        pairs = [
            (self._deps(call, graph, [f])[0], self._node(call, self._deps(call, graph, [t])[0]))
            for f, t in zip(froms, tos, strict=True)
        ]
        for f, to in pairs:
            if f == to.handle or f in to.deps:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"{call}: edge {f:#x} -> {to.handle:#x} is invalid"
                )
        for f, to in pairs:
            to.deps.append(f)

    def graph_destroy_node(self, handle: int) -> None:
        """The node leaves its graph with its edges (execs made before keep their copy); a
        child-graph node takes the clone it owns along."""
        call = "cuGraphDestroyNode"
        self.require_init(call)
        node = self._node(call, handle)
        graph = self._graph(call, node.graph)
        for capture in (self.__dict__.get("_captures") or {}).values():
            if capture.seq.graph == graph.handle:
                raise CudaError(
                    CUDA_ERROR_ILLEGAL_STATE,
                    f"{call}: graph {graph.handle:#x} is being captured into (end the capture first)",
                )
        for other in graph.nodes:
            if other != handle:
                deps = self._node(call, other).deps
                deps[:] = [d for d in deps if d != handle]
        graph.nodes.remove(handle)
        if node.type == NODE_GRAPH and int(node.params.value) in self.handles:
            self._drop_graph(self._graph(call, int(node.params.value)))
        self.handles.remove(handle)

    def graph_clone(self, handle: int, call: str = "cuGraphClone") -> int:
        ctx = self.current(call)
        graph = self._graph(call, handle)
        clone = self.handles.add(HandleKind.GRAPH, GraphRecord, ctx=ctx.handle, flags=graph.flags)
        mapping: dict[int, int] = {}
        for h in graph.nodes:  # edges after: one added later may point to an earlier node
            params = self._clone_params(call, self._node(call, h))
            mapping[h] = self._add_node(clone, ctx.handle, params, [], origin=h)
            self._node(call, mapping[h]).attrs = dict(self._node(call, h).attrs)
        for h in graph.nodes:
            deps = [mapping[d] for d in self._node(call, h).deps]
            self._node(call, mapping[h]).deps.extend(deps)
        return clone.handle

    def _clone_params(self, call: str, node: GraphNodeRecord) -> Any:
        """A clone's copy of `node`'s parameters (a child graph is cloned too)."""
        if node.type == NODE_GRAPH:
            return proto.graph_node_params(NODE_GRAPH, self.graph_clone(int(node.params.value)))
        return node.params

    def node_type(self, handle: int) -> int:
        return self._node("cuGraphNodeGetType", handle).type

    def node_dependencies(self, handle: int) -> list[int]:
        return list(self._node("cuGraphNodeGetDependencies", handle).deps)

    def node_params(self, handle: int) -> Any:
        return self._node("cuGraphNodeGetParams", handle).params

    def node_set_params(self, handle: int, params: Any) -> None:
        call = "cuGraphNodeSetParams"
        self.current(call)
        node = self._node(call, handle)
        if int(params.type) != node.type or node.type == NODE_GRAPH:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: node {handle:#x} is a {_NODE_NAMES.get(node.type)} node; its parameters "
                "cannot become another type's",
            )
        node.params = self._checked_params(call, params, node.graph)

    # -- execs ------------------------------------------------------------------------------
    def graph_instantiate(self, handle: int, flags: int) -> tuple[int, list[HostCopy]]:
        call = "cuGraphInstantiate"
        ctx = self.current(call)
        graph = self._graph(call, handle)
        nodes = self._copies(call, graph)
        obj, host = self.instantiate_nodes(call, nodes)
        record = self.handles.add(
            HandleKind.GRAPH_EXEC, GraphExecRecord, ctx=ctx.handle, obj=obj, flags=flags,
            nodes=nodes, host_copies=host,
        )
        return record.handle, host

    def _copies(self, call: str, graph: GraphRecord) -> list[GraphNodeRecord]:
        return [
            GraphNodeRecord(
                handle=n.handle, ctx=n.ctx, graph=n.graph, params=n.params, deps=list(n.deps),
                attrs=dict(n.attrs),
            )
            for n in (self._node(call, h) for h in graph.nodes)
        ]

    def instantiate_nodes(
        self, call: str, nodes: Sequence[GraphNodeRecord]
    ) -> tuple[object, list[HostCopy]]:
        """A backend exec of `nodes` (child graphs expanded) and its host copies."""

        def children(h: int) -> list[GraphNodeRecord]:
            return self._copies(call, self._graph(call, h))

        exec_nodes, host = flatten(call, nodes, children, self._resolver(call))
        return self.bsession.graph_instantiate(exec_nodes), host

    def _resolver(self, call: str) -> Any:
        def resolve(
            node: GraphNodeRecord, key: object, deps: tuple[object, ...], host: list[HostCopy]
        ) -> ExecNode:
            p = node.params.value
            kind = node.type
            if kind == NODE_KERNEL:
                fn_obj, _, _ = self._launch_target(call, p.function)
                return ExecNode(
                    key, kind, deps,
                    kernel=(
                        fn_obj, (p.grid_x, p.grid_y, p.grid_z), (p.block_x, p.block_y, p.block_z),
                        p.shared_mem_bytes, bytes(p.params),
                    ),
                    attrs=tuple((a, *v) for a, v in sorted(node.attrs.items())),
                )
            if kind == NODE_MEMCPY:
                dst, src = p.dst, p.src
                if p.src_host:
                    src = sum(1 for c in host if c.to_device)
                    host.append(HostCopy(p.src, p.size, True))
                if p.dst_host:
                    dst = sum(1 for c in host if not c.to_device)
                    host.append(HostCopy(p.dst, p.size, False))
                return ExecNode(key, kind, deps, copy=(p.dst_host, dst, p.src_host, src, p.size))
            if kind == NODE_MEMSET:
                return ExecNode(
                    key, kind, deps,
                    set=(p.dst, p.pitch, p.value, p.element_size, p.width, p.height),
                )
            if kind in (NODE_WAIT_EVENT, NODE_EVENT_RECORD):
                event = self.handles.get(call, HandleKind.EVENT, int(p), EventRecord)
                return ExecNode(key, kind, deps, event=event.obj)
            return ExecNode(key, kind, deps)

        return resolve

    def graph_exec_destroy(self, handle: int) -> None:
        call = "cuGraphExecDestroy"
        self.require_init(call)
        record = self._exec(call, handle)
        self.bsession.graph_exec_destroy(record.obj)
        self.handles.remove(handle)

    def graph_launch(self, handle: int, stream: int, host_in: memoryview) -> bytes | memoryview:
        """Launch; returns the bytes of the exec's device-to-host slots (then it waited)."""
        call = "cuGraphLaunch"
        self.current(call)
        record = self._exec(call, handle)
        if self._capture_of(stream) is not None:
            raise self._unsupported_in_capture(call, stream)
        obj = self._stream(call, stream)
        sizes = record.in_sizes
        if record.in_total != len(host_in):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: exec {handle:#x} reads {record.in_total} bytes of client host memory "
                f"per launch, got {len(host_in)}",
            )
        if len(sizes) == 1:
            inputs = [host_in]
        else:
            inputs, offset = [], 0
            for size in sizes:
                inputs.append(host_in[offset : offset + size])
                offset += size
        outputs = self.bsession.graph_launch(record.obj, obj, inputs)
        if not outputs:
            return b""
        return outputs[0] if len(outputs) == 1 else b"".join(bytes(o) for o in outputs)

    def graph_exec_node_set_params(self, handle: int, node: int, params: Any) -> None:
        call = "cuGraphExecKernelNodeSetParams"
        self.current(call)
        record = self._exec(call, handle)
        self._node(call, node)  # a live node of this session
        i = next((i for i, n in enumerate(record.nodes) if n.handle == node), None)
        if i is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: node {node:#x} is not in the graph exec {handle:#x} was made from",
            )
        self._exec_update(call, record, i, params)

    def _exec_update(self, call: str, record: GraphExecRecord, i: int, params: Any) -> None:
        old = record.nodes[i]
        if int(params.type) != old.type or old.type not in EXEC_UPDATABLE:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: only kernel, memset, memcpy and event nodes of an exec can be updated; node "
                f"{old.handle:#x} is a {_NODE_NAMES.get(old.type)} node",
            )
        params = self._checked_params(call, params, old.graph)
        if old.type == NODE_MEMCPY and any(
            p.value.dst_host or p.value.src_host for p in (old.params, params)
        ):
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: memcpy node {old.handle:#x} of an exec can change between device "
                "addresses only (client host memory is fixed when the exec is made)",
            )
        new = GraphNodeRecord(
            handle=old.handle, ctx=old.ctx, graph=old.graph, params=params, deps=list(old.deps),
            attrs=dict(old.attrs),
        )
        exec_node = self._resolver(call)(new, new.handle, (), [])
        self.bsession.graph_exec_set_node(record.obj, exec_node)
        record.nodes[i] = new

    def graph_exec_update(self, handle: int, graph_handle: int) -> None:
        call = "cuGraphExecUpdate"
        self.current(call)
        record = self._exec(call, handle)
        nodes = self._copies(call, self._graph(call, graph_handle))
        if len(nodes) != len(record.nodes):
            raise CudaError(
                CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
                f"{call}: the graph has {len(nodes)} nodes, the exec {len(record.nodes)}",
            )
        index = {n.handle: i for i, n in enumerate(nodes)}
        for old, new in zip(record.nodes, nodes, strict=True):
            same_deps = sorted(index.get(d, -1) for d in new.deps) == sorted(
                next((i for i, n in enumerate(record.nodes) if n.handle == d), -2)
                for d in old.deps
            )
            if old.type != new.type or not same_deps:
                raise CudaError(
                    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
                    f"{call}: node {new.handle:#x} differs from the exec's in type or "
                    "dependencies (only parameters can change)",
                )
        for i, (old, new) in enumerate(zip(record.nodes, nodes, strict=True)):
            if new.params != old.params:
                self._exec_update(call, record, i, new.params)

    # -- stream capture ---------------------------------------------------------------------
    def stream_begin_capture(self, stream: int, mode: int) -> None:
        call = "cuStreamBeginCapture"
        ctx = self._check_capture_start(call, stream, mode)
        graph = self.handles.add(HandleKind.GRAPH, GraphRecord, ctx=ctx.handle, flags=0)
        seq = CaptureSequence(graph.handle, next(_capture_ids), mode, stream)
        self.__dict__.setdefault("_captures", {})[stream] = StreamCapture(seq)

    def stream_begin_capture_to_graph(
        self, stream: int, graph: int, deps: Sequence[int], mode: int
    ) -> None:
        """Capture into the caller's graph, the first work depending on `deps` (its nodes);
        the graph stays the caller's, also when the capture is invalidated."""
        call = "cuStreamBeginCaptureToGraph"
        self._check_capture_start(call, stream, mode)
        record = self._graph(call, graph)
        tail = self._nodes_of(call, record, deps)
        seq = CaptureSequence(record.handle, next(_capture_ids), mode, stream, owned=False)
        self.__dict__.setdefault("_captures", {})[stream] = StreamCapture(seq, tail)

    def stream_update_capture_dependencies(
        self, stream: int, deps: Sequence[int], flags: int
    ) -> None:
        """The nodes the stream's next captured work depends on: `deps` added to them (flags
        CU_STREAM_ADD_CAPTURE_DEPENDENCIES, 0) or in their place (..._SET_..., 1)."""
        call = "cuStreamUpdateCaptureDependencies"
        self.current(call)
        self._stream(call, stream)
        if flags not in (0, 1):
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: flags {flags} (0: add, 1: set)")
        capture = self._capture_of(stream)
        if capture is None:
            raise CudaError(CUDA_ERROR_ILLEGAL_STATE, f"{call}: stream {stream:#x} is not capturing")
        if capture.seq.invalid:
            raise CudaError(
                CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                f"{call}: the capture was invalidated: {capture.seq.invalid}",
            )
        nodes = self._nodes_of(call, self._graph(call, capture.seq.graph), deps)
        capture.tail = list(dict.fromkeys([*capture.tail, *nodes])) if flags == 0 else nodes

    def _nodes_of(self, call: str, graph: GraphRecord, deps: Sequence[int]) -> list[int]:
        """`deps`, each a node of `graph` (else CUDA_ERROR_INVALID_VALUE), without repeats."""
        for dep in deps:
            if self._node(call, dep).graph != graph.handle:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"{call}: node {dep:#x} is not in graph {graph.handle:#x}"
                )
        return list(dict.fromkeys(deps))

    def _check_capture_start(self, call: str, stream: int, mode: int) -> Any:
        """The current context, once `stream` may begin a capture in `mode`."""
        ctx = self.current(call)
        if stream == STREAM_LEGACY:
            raise CudaError(
                CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                f"{call}: the legacy default stream cannot be captured",
            )
        self._stream(call, stream)
        if mode not in (0, 1, 2):
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {mode} is not a capture mode")
        if self._capture_of(stream) is not None:
            raise CudaError(
                CUDA_ERROR_ILLEGAL_STATE, f"{call}: stream {stream:#x} is already capturing"
            )
        return ctx

    def stream_end_capture(self, stream: int) -> int:
        call = "cuStreamEndCapture"
        self.current(call)
        self._stream(call, stream)
        capture = self._capture_of(stream)
        if capture is None:
            raise CudaError(
                CUDA_ERROR_ILLEGAL_STATE, f"{call}: stream {stream:#x} is not capturing"
            )
        seq = capture.seq
        if seq.origin != stream:
            raise CudaError(
                CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                f"{call}: the capture began on stream {seq.origin:#x}, not {stream:#x}",
            )
        captures = self._captures
        for s in [s for s, c in captures.items() if c.seq is seq]:
            del captures[s]
        marks = self.__dict__.get("_event_marks") or {}
        for e in [e for e, (q, _) in marks.items() if q is seq]:
            del marks[e]
        if seq.invalid:
            if seq.owned:
                self.graph_destroy(seq.graph, call)
            raise CudaError(
                CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                f"{call}: the capture was invalidated: {seq.invalid}",
            )
        return seq.graph

    def stream_capture_info(self, stream: int) -> tuple[int, int, int, list[int]]:
        call = "cuStreamGetCaptureInfo"
        self.current(call)
        self._stream(call, stream)
        capture = self._capture_of(stream)
        if capture is None:
            return CAPTURE_NONE, 0, 0, []
        if capture.seq.invalid:
            return CAPTURE_INVALIDATED, capture.seq.id, 0, []
        return CAPTURE_ACTIVE, capture.seq.id, capture.seq.graph, list(capture.tail)

    def stream_capture_prohibit(self, stream: int, which: int) -> None:
        """A potentially unsafe call (`PROHIBITED_CALLS[which]`) that the calling thread's
        capture mode prohibits while the capture on `stream` is under way (the client keeps
        the thread modes and decides): the capture is invalidated, the call refused."""
        if not 0 <= which < len(PROHIBITED_CALLS):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuStreamCaptureProhibit: {which} names no call (0-{len(PROHIBITED_CALLS) - 1})",
            )
        call = PROHIBITED_CALLS[which]
        self.current(call)
        self._stream(call, stream)
        if self._capture_of(stream) is None:
            raise CudaError(
                CUDA_ERROR_ILLEGAL_STATE, f"{call}: stream {stream:#x} is not capturing"
            )
        error = self._unsupported_in_capture(call, stream)
        raise CudaError(
            error.code,
            f"{error.message}; the calling thread's capture mode "
            "(cuThreadExchangeStreamCaptureMode) prohibits potentially unsafe calls while it "
            "is under way",
        )

    def _captured(
        self, call: str, capture: StreamCapture, params: Any, check: Callable[[], None]
    ) -> None:
        """Add a node for work sent to a capturing stream, after `check` (its failure
        invalidates the capture, as CUDA's does); it follows the stream's tail."""
        seq = capture.seq
        if not capture_checked(seq, check):
            return
        graph = self._graph(call, seq.graph)
        node = self._add_node(graph, graph.ctx, params, capture.tail)
        capture.tail = [node]

    def _unsupported_in_capture(self, call: str, stream: int) -> CudaError:
        capture = self._capture_of(stream)
        why = f"{call} is not permitted on a capturing stream"
        if capture is not None and not capture.seq.invalid:
            capture.seq.invalid = why
        return CudaError(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, f"{why} (stream {stream:#x})")

    def capture_host_copy(self, stream: int, params: Any) -> None:
        call = "cuMemcpyAsync (captured)"
        self.current(call)
        self._stream(call, stream)
        capture = self._capture_of(stream)
        if capture is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: stream {stream:#x} is not capturing (a host copy is captured only "
                "between cuStreamBeginCapture and cuStreamEndCapture)",
            )
        self._captured(
            call, capture, proto.graph_node_params(NODE_MEMCPY, params),
            lambda: self._check_memcpy(call, params),
        )

    # -- the pipelined calls of other domains, captured ------------------------------------
    def launch(
        self,
        handle: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: int,
        params: memoryview,
        cooperative: bool = False,
    ) -> None:
        capture = self._capture_of(stream)
        if capture is None:
            return super().launch(handle, grid, block, shared_mem, stream, params, cooperative)
        call = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
        self.current(call)
        if cooperative:
            raise self._unsupported_in_capture(call, stream)
        kernel = proto.graph_kernel_params(
            handle, *grid, *block, shared_mem, bytes(params)
        )
        self._captured(
            call, capture, proto.graph_node_params(NODE_KERNEL, kernel),
            lambda: self._check_kernel(call, kernel),
        )

    def launch_batch(self, launches: Sequence[Launch]) -> None:
        if not self.__dict__.get("_captures"):
            return super().launch_batch(launches)
        first: tuple[int, CudaError] | None = None
        for index, (handle, gx, gy, gz, bx, by, bz, shared, stream, params) in enumerate(
            launches
        ):
            try:
                self.launch(handle, (gx, gy, gz), (bx, by, bz), shared, stream, params)
            except CudaError as e:
                if first is None:
                    first = (index, e)
        if first is not None:
            index, error = first
            raise CudaError(
                error.code, f"launch {index + 1} of {len(launches)} in a batch: {error.message}"
            )

    def memcpy_dtod(self, dst: int, src: int, size: int, stream: int | None = None) -> None:
        capture = self._capture_of(stream) if stream is not None else None
        if capture is None:
            return super().memcpy_dtod(dst, src, size, stream)
        call = "cuMemcpyDtoDAsync"
        self.current(call)
        copy = proto.graph_memcpy_params(False, dst, False, src, size)
        self._captured(
            call, capture, proto.graph_node_params(NODE_MEMCPY, copy),
            lambda: self._check_memcpy(call, copy),
        )

    def memset(
        self, dst: int, value: int, width: int, count: int, stream: int | None = None
    ) -> None:
        capture = self._capture_of(stream) if stream is not None else None
        if capture is None:
            return super().memset(dst, value, width, count, stream)
        call = f"cuMemsetD{width * 8}Async"
        self.current(call)
        value &= ((1 << (8 * width)) - 1) if width in (1, 2, 4) else 0
        spec = proto.graph_memset_params(dst, width * count, value, width, count, 1)
        self._captured(
            call, capture, proto.graph_node_params(NODE_MEMSET, spec),
            lambda: self._check_memset(call, spec),
        )

    def memset_2d(
        self, dst: int, pitch: int, value: int, width: int, height: int, stream: int
    ) -> None:
        capture = self._capture_of(stream)
        if capture is None:
            return super().memset_2d(dst, pitch, value, width, height, stream)
        call = "cudaMemset2DAsync"
        self.current(call)
        spec = proto.graph_memset_params(dst, pitch, value & 0xFF, 1, width, height)
        self._captured(
            call, capture, proto.graph_node_params(NODE_MEMSET, spec),
            lambda: self._check_memset(call, spec),
        )
        return None

    def memcpy_2d_dtod(
        self, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, stream: int
    ) -> None:
        """Captured: one memcpy node a row, in order."""
        if self._capture_of(stream) is None:
            return super().memcpy_2d_dtod(dst, dpitch, src, spitch, width, height, stream)
        for r in range(height if width else 0):
            self.memcpy_dtod(dst + r * dpitch, src + r * spitch, width, stream)
        return None

    def memcpy_2d_htod(
        self, dst: int, dpitch: int, rows: memoryview, width: int, height: int, stream: int
    ) -> None:
        if self._capture_of(stream) is not None:
            raise self._unsupported_in_capture("cudaMemcpy2DAsync (host to device)", stream)
        super().memcpy_2d_htod(dst, dpitch, rows, width, height, stream)

    def memcpy_2d_dtoh(self, src: int, spitch: int, width: int, height: int, stream: int) -> bytes:
        if self._capture_of(stream) is not None:
            raise self._unsupported_in_capture("cudaMemcpy2DAsync (device to host)", stream)
        return super().memcpy_2d_dtoh(src, spitch, width, height, stream)

    def mem_alloc_async(self, size: int, stream: int) -> int:
        if self._capture_of(stream) is not None:  # SessionGraphNodes makes it a node first
            raise self._unsupported_in_capture("cuMemAllocAsync", stream)
        return super().mem_alloc_async(size, stream)

    def mem_free_async(self, ptr: int, stream: int) -> None:
        if self._capture_of(stream) is not None:
            raise self._unsupported_in_capture("cuMemFreeAsync", stream)
        super().mem_free_async(ptr, stream)

    def ctx_synchronize(self) -> None:
        """Refused while a capture that is not relaxed is under way, as CUDA refuses it."""
        for stream, capture in (self.__dict__.get("_captures") or {}).items():
            if capture.seq.mode != CAPTURE_MODE_RELAXED:
                raise self._unsupported_in_capture("cuCtxSynchronize", stream)
        super().ctx_synchronize()

    def event_record(self, event: int, stream: int) -> None:
        capture = self._capture_of(stream)
        if capture is None:
            self.__dict__.get("_event_marks", {}).pop(event, None)
            return super().event_record(event, stream)
        call = "cuEventRecord"
        self.current(call)
        self._event(call, event)
        # as CUDA: the event now stands for the capture's position (fork/join), not a node
        self.__dict__.setdefault("_event_marks", {})[event] = (capture.seq, list(capture.tail))

    def stream_wait_event(self, stream: int, event: int, flags: int) -> None:
        marks = self.__dict__.get("_event_marks") or {}
        mark = marks.get(event)
        capture = self._capture_of(stream)
        if mark is None and capture is None:
            return super().stream_wait_event(stream, event, flags)
        call = "cuStreamWaitEvent"
        self.current(call)
        self._stream(call, stream)
        self._event(call, event)
        if mark is not None:
            seq, tail = mark
            if capture is None:  # the stream joins the capture (fork)
                self._captures[stream] = StreamCapture(seq, list(tail))
            elif capture.seq is seq:  # join
                capture.tail += [n for n in tail if n not in capture.tail]
            else:
                raise CudaError(
                    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    f"{call}: event {event:#x} was recorded in another capture",
                )
            return None
        assert capture is not None
        self._captured(
            call, capture, proto.graph_node_params(NODE_WAIT_EVENT, event), lambda: None
        )
        return None

    def stream_synchronize(self, handle: int) -> None:
        if self._capture_of(handle) is not None:
            raise self._unsupported_in_capture("cuStreamSynchronize", handle)
        super().stream_synchronize(handle)

    def stream_query(self, handle: int) -> bool:
        if self._capture_of(handle) is not None:
            raise self._unsupported_in_capture("cuStreamQuery", handle)
        return super().stream_query(handle)

    def stream_destroy(self, handle: int) -> None:
        super().stream_destroy(handle)
        captures = self.__dict__.get("_captures")
        if captures and handle in captures:
            capture = captures.pop(handle)
            capture.seq.invalid = capture.seq.invalid or f"stream {handle:#x} was destroyed"

    def event_destroy(self, handle: int) -> None:
        super().event_destroy(handle)
        (self.__dict__.get("_event_marks") or {}).pop(handle, None)


def _add_name(kind: int) -> str:
    return {
        NODE_KERNEL: "Kernel",
        NODE_MEMCPY: "Memcpy",
        NODE_MEMSET: "Memset",
        NODE_GRAPH: "ChildGraph",
        NODE_EMPTY: "Empty",
        NODE_WAIT_EVENT: "EventWait",
        NODE_EVENT_RECORD: "EventRecord",
    }.get(kind, "")


def capture_checked(seq: Any, check: Callable[[], None]) -> bool:
    """Run `check` for work sent to the capture sequence `seq`: False when the capture is
    invalid already (the work is dropped); its failure invalidates the capture, as CUDA's
    does, and is raised."""
    if seq.invalid:
        return False
    try:
        check()
    except CudaError as e:
        seq.invalid = e.message
        raise
    return True
