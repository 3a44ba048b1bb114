"""Graph memory nodes and conditional nodes of a session (mixed in before `SessionGraphs`).

Memory nodes: an alloc node's memory is an allocation of the session's address-stable heap,
made when the node is added (so its address is known then, as CUDA returns it in
`nodeParams.dptr`, and a checkpoint restores it, contents included, at the same address, D4).
It lives while its node or an exec holding the node lives; a free node frees nothing of its
own (the memory stays the graph's, as CUDA keeps it reserved for the graph). The graph memory
attributes count the allocations of live execs, each rounded to the 2 MiB granularity; the
high watermarks are kept here and only reset to 0 (cuDeviceSetGraphMemAttribute). A
cuMemAllocAsync/cuMemFreeAsync on a capturing stream becomes an alloc/free node.

Conditional nodes: a handle (cuGraphConditionalHandleCreate) is a session value with its
graph, default value and flags; a conditional node owns its `size` body graphs, made when it
is added and dropped with it. The node's parameters carry the handle's default value and flags
too, so a restore rebuilds the handles that nodes use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.graphs import (
    COND_ASSIGN_DEFAULT,
    COND_IF,
    COND_SWITCH,
    COND_WHILE,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    NODE_CONDITIONAL,
    NODE_MEM_ALLOC,
    NODE_MEM_FREE,
    GraphExecRecord,
    GraphNodeRecord,
    GraphRecord,
)
from cricket_server.resources import HandleKind
from cricket_server.session_graphs import SessionGraphs
from rpc_spec import cricket_rpc as proto

GRAPH_MEM_GRANULARITY = 2 << 20  # what each graph allocation counts for in the attributes
# CUgraphMem_attribute
USED_MEM_CURRENT, USED_MEM_HIGH, RESERVED_MEM_CURRENT, RESERVED_MEM_HIGH = 0, 1, 2, 3
# conditional handles are distinctive 64-bit values (kernels carry them as arguments)
COND_HANDLE_BASE = 0xC04D << 48
MAX_SWITCH_BODIES = 1024


@dataclass
class GraphMem:
    """The allocation of an alloc node: who keeps it (the node, execs holding the node)."""

    dev: int
    size: int
    node: int = 0  # the alloc node's handle; 0 once the node is gone
    execs: set[int] = field(default_factory=set)


@dataclass
class CondHandle:
    graph: int
    default: int
    flags: int


class SessionGraphNodes(SessionGraphs):
    """cuGraphAddMemAllocNode/FreeNode, the graph memory attributes, conditional handles and
    nodes (through CU_GRAPH_ADD_NODE's new node types)."""

    def _graph_mem(self) -> dict[int, GraphMem]:
        return self.__dict__.setdefault("_graph_mem_allocs", {})  # type: ignore[no-any-return]

    def _graph_mem_highs(self) -> dict[int, list[int]]:
        return self.__dict__.setdefault("_graph_mem_high", {})  # type: ignore[no-any-return]

    def _cond_handles(self) -> dict[int, CondHandle]:
        return self.__dict__.setdefault("_conditional_handles", {})  # type: ignore[no-any-return]

    # -- adding nodes -----------------------------------------------------------------------
    def graph_add_node(self, graph_handle: int, deps: Sequence[int], params: Any) -> int:
        handle = super().graph_add_node(graph_handle, deps, params)
        node = self._node("cuGraphAddNode", handle)
        if node.type == NODE_MEM_ALLOC:
            self._graph_mem()[int(node.params.value.dptr)].node = handle
        return handle

    def _checked_params(self, call: str, params: Any, graph: int) -> Any:
        kind = int(params.type)
        if kind == NODE_MEM_ALLOC:
            return self._alloc_node(call, params.value)
        if kind == NODE_MEM_FREE:
            ptr = int(params.value)
            if ptr not in self._graph_mem():
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"cuGraphAddMemFreeNode: {ptr:#x} is not the address of a memory alloc node",
                )
            return params
        if kind == NODE_CONDITIONAL:
            return self._conditional_node(params.value, graph)
        return super()._checked_params(call, params, graph)

    def _alloc_node(self, call: str, p: Any) -> Any:
        call = "cuGraphAddMemAllocNode"
        ctx = self.current(call)
        dev = self.device(call, int(p.device))
        if int(p.bytesize) <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: bytesize must be > 0")
        ptr = self.memory.alloc(call, int(p.bytesize), dev, ctx.handle)
        self._graph_mem()[ptr] = GraphMem(dev, int(p.bytesize))
        return proto.graph_node_params(
            NODE_MEM_ALLOC, proto.graph_mem_alloc_params(dev, int(p.bytesize), ptr)
        )

    def _conditional_node(self, p: Any, graph: int) -> Any:
        call = "cuGraphAddNode (conditional)"
        ctx = self.current(call)
        handle = self._cond_handles().get(int(p.handle))
        if handle is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {int(p.handle):#x} is not a conditional handle of this session "
                "(cuGraphConditionalHandleCreate)",
            )
        kind, size = int(p.type), int(p.size)
        sizes = {COND_IF: (1, 2), COND_WHILE: (1, 1), COND_SWITCH: (1, MAX_SWITCH_BODIES)}
        if kind not in sizes or not sizes[kind][0] <= size <= sizes[kind][1]:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: type {kind} with {size} bodies (if: 1 or 2, while: 1, switch: 1 or "
                "more)",
            )
        if handle.graph not in (graph, *self._ancestors(graph)):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: handle {int(p.handle):#x} belongs to graph {handle.graph:#x}",
            )
        bodies = [
            self.handles.add(HandleKind.GRAPH, GraphRecord, ctx=ctx.handle, flags=0).handle
            for _ in range(size)
        ]
        return proto.graph_node_params(
            NODE_CONDITIONAL,
            proto.graph_conditional_params(
                int(p.handle), kind, size, bodies, handle.default, handle.flags
            ),
        )

    def _ancestors(self, graph: int) -> list[int]:
        """The graphs whose conditional nodes own `graph` as a body, innermost first."""
        out: list[int] = []
        while True:
            owner = next(
                (
                    r.graph
                    for r in self.handles.records()
                    if isinstance(r, GraphNodeRecord)
                    and r.type == NODE_CONDITIONAL
                    and graph in r.params.value.bodies
                ),
                None,
            )
            if owner is None or owner in out:
                return out
            out.append(owner)
            graph = owner

    def graph_conditional_handle_create(self, graph: int, default: int, flags: int) -> int:
        call = "cuGraphConditionalHandleCreate"
        self.current(call)
        self._graph(call, graph)
        if flags not in (0, COND_ASSIGN_DEFAULT):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: flags must be 0 or CU_GRAPH_COND_ASSIGN_DEFAULT, got {flags}",
            )
        handles = self._cond_handles()
        value = max(handles, default=COND_HANDLE_BASE) + 1
        handles[value] = CondHandle(graph, default, flags)
        return value

    # -- what the other graph calls must respect --------------------------------------------
    def _memory_nodes(self, graph: GraphRecord) -> bool:
        return any(
            self._node("cuGraph", h).type in (NODE_MEM_ALLOC, NODE_MEM_FREE) for h in graph.nodes
        )

    def _clone_params(self, call: str, node: GraphNodeRecord) -> Any:
        if node.type in (NODE_MEM_ALLOC, NODE_MEM_FREE):
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: a graph with memory alloc or free nodes cannot be cloned (nor used "
                "as a child graph)",
            )
        if node.type == NODE_CONDITIONAL:
            p = node.params.value
            bodies = [self.graph_clone(int(b), call) for b in p.bodies]
            return proto.graph_node_params(
                NODE_CONDITIONAL,
                proto.graph_conditional_params(
                    p.handle, p.type, p.size, bodies, p.default_value, p.flags
                ),
            )
        return super()._clone_params(call, node)

    def node_set_params(self, handle: int, params: Any) -> None:
        node = self._node("cuGraphNodeSetParams", handle)
        if node.type in (NODE_MEM_ALLOC, NODE_MEM_FREE, NODE_CONDITIONAL):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuGraphNodeSetParams: the parameters of node {handle:#x} (memory or "
                "conditional) cannot change",
            )
        super().node_set_params(handle, params)

    def graph_destroy_node(self, handle: int) -> None:
        call = "cuGraphDestroyNode"
        node = self._node(call, handle)
        if self._memory_nodes(self._graph(call, node.graph)):
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: the nodes of a graph with memory alloc or free nodes cannot be "
                "destroyed",
            )
        bodies = list(node.params.value.bodies) if node.type == NODE_CONDITIONAL else []
        super().graph_destroy_node(handle)
        self._drop_bodies(bodies)

    def _drop_graph(self, graph: GraphRecord) -> None:
        bodies: list[int] = []
        for h in graph.nodes:
            node = self._node("cuGraphDestroy", h)
            if node.type == NODE_CONDITIONAL:
                bodies += node.params.value.bodies
            elif node.type == NODE_MEM_ALLOC:
                mem = self._graph_mem().get(int(node.params.value.dptr))
                if mem is not None:
                    mem.node = 0
                    self._release_graph_mem(int(node.params.value.dptr))
        super()._drop_graph(graph)
        self._drop_bodies(bodies)

    def _drop_bodies(self, bodies: Sequence[int]) -> None:
        for b in bodies:
            if int(b) in self.handles:
                self._drop_graph(self._graph("cuGraphDestroy", int(b)))

    def _release_graph_mem(self, ptr: int) -> None:
        mem = self._graph_mem().get(ptr)
        if mem is None or mem.node or mem.execs:
            return
        del self._graph_mem()[ptr]
        if self.memory.allocation(ptr) is not None:  # not freed by the program meanwhile
            self.mem_free(ptr)

    # -- execs ------------------------------------------------------------------------------
    def graph_instantiate(self, handle: int, flags: int) -> tuple[int, list[Any]]:
        call = "cuGraphInstantiate"
        graph = self._graph(call, handle)
        if self._memory_nodes(graph) and any(
            isinstance(r, GraphExecRecord) and r.nodes and r.nodes[0].graph == handle
            for r in self.handles.records()
        ):
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: graph {handle:#x} has memory nodes and an exec already (one "
                "instantiation at a time)",
            )
        exec_handle, host = super().graph_instantiate(handle, flags)
        self._hold_graph_mem(self._exec(call, exec_handle))
        return exec_handle, host

    def _hold_graph_mem(self, record: GraphExecRecord) -> None:
        for node in record.nodes:
            if node.type == NODE_MEM_ALLOC:
                mem = self._graph_mem().get(int(node.params.value.dptr))
                if mem is not None:
                    mem.execs.add(record.handle)
                    self._note_high(mem.dev)

    def graph_exec_destroy(self, handle: int) -> None:
        super().graph_exec_destroy(handle)
        for ptr, mem in list(self._graph_mem().items()):
            if handle in mem.execs:
                mem.execs.discard(handle)
                self._release_graph_mem(ptr)

    # -- graph memory attributes ------------------------------------------------------------
    def _graph_mem_in_use(self, dev: int) -> int:
        granule = GRAPH_MEM_GRANULARITY
        return sum(
            -(-m.size // granule) * granule
            for m in self._graph_mem().values()
            if m.dev == dev and m.execs
        )

    def _note_high(self, dev: int) -> None:
        highs = self._graph_mem_highs().setdefault(dev, [0, 0])
        used = self._graph_mem_in_use(dev)
        highs[0], highs[1] = max(highs[0], used), max(highs[1], used)

    def device_get_graph_mem_attribute(self, dev: int, attr: int) -> int:
        call = "cuDeviceGetGraphMemAttribute"
        dev = self.device(call, dev)
        if attr in (USED_MEM_CURRENT, RESERVED_MEM_CURRENT):
            return self._graph_mem_in_use(dev)
        if attr in (USED_MEM_HIGH, RESERVED_MEM_HIGH):
            return self._graph_mem_highs().get(dev, [0, 0])[attr == RESERVED_MEM_HIGH]
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {attr} is not a CUgraphMem_attribute")

    def device_set_graph_mem_attribute(self, dev: int, attr: int, value: int) -> None:
        call = "cuDeviceSetGraphMemAttribute"
        dev = self.device(call, dev)
        if attr not in (USED_MEM_HIGH, RESERVED_MEM_HIGH) or value != 0:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: only the high watermarks (USED_MEM_HIGH, RESERVED_MEM_HIGH) can be "
                f"set, and only to 0 (got attribute {attr}, value {value})",
            )
        self._graph_mem_highs().setdefault(dev, [0, 0])[attr == RESERVED_MEM_HIGH] = 0

    def device_graph_mem_trim(self, dev: int) -> None:
        """Nothing to give back: the memory of graph allocations is their graphs' and execs'
        (freed when the last of them goes)."""
        self.device("cuDeviceGraphMemTrim", dev)

    # -- stream capture of stream-ordered allocation ----------------------------------------
    def mem_alloc_async(self, size: int, stream: int) -> int:
        capture = self._capture_of(stream)
        if capture is None:
            return super().mem_alloc_async(size, stream)
        call = "cuMemAllocAsync"
        ctx = self.current(call)
        self._stream(call, stream)
        if capture.seq.invalid:
            raise CudaError(
                CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                f"{call}: the capture on stream {stream:#x} was invalidated: {capture.seq.invalid}",
            )
        params = self._alloc_node(call, proto.graph_mem_alloc_params(ctx.dev, size, 0))
        self._captured(call, capture, params, lambda: None)
        ptr = int(params.value.dptr)
        self._graph_mem()[ptr].node = capture.tail[0]
        return ptr

    def mem_free_async(self, ptr: int, stream: int) -> None:
        capture = self._capture_of(stream)
        if capture is None or ptr not in self._graph_mem():
            return super().mem_free_async(ptr, stream)
        call = "cuMemFreeAsync"
        self.current(call)
        self._captured(call, capture, proto.graph_node_params(NODE_MEM_FREE, ptr), lambda: None)
        return None

    # -- restore ----------------------------------------------------------------------------
    def adopt_graph_nodes(self) -> None:
        """After a restore: the bookkeeping of memory and conditional nodes, from the nodes and
        execs restored (the allocations themselves were restored at their addresses)."""
        mems, handles = self._graph_mem(), self._cond_handles()
        for r in self.handles.records():
            if isinstance(r, GraphNodeRecord) and r.type == NODE_MEM_ALLOC:
                p = r.params.value
                mems[int(p.dptr)] = GraphMem(int(p.device), int(p.bytesize), r.handle)
            elif isinstance(r, GraphNodeRecord) and r.type == NODE_CONDITIONAL:
                p = r.params.value
                handles[int(p.handle)] = CondHandle(r.graph, int(p.default_value), int(p.flags))
        for r in self.handles.records():
            if isinstance(r, GraphExecRecord):
                for node in r.nodes:  # an exec may outlive its graph's alloc node
                    if node.type == NODE_MEM_ALLOC:
                        p = node.params.value
                        mems.setdefault(int(p.dptr), GraphMem(int(p.device), int(p.bytesize)))
                self._hold_graph_mem(r)
