"""CUDA graphs as the session keeps them: graphs of nodes with dependencies, and what a
backend instantiates.

A graph (`GraphRecord`) is an ordered list of node handles; each node (`GraphNodeRecord`)
holds what it does (cricket.x's `graph_node_params`, the discriminant being its
CUgraphNodeType) and the nodes it depends on. Instantiating flattens child graphs and orders
the nodes topologically into `ExecNode`s, with handles resolved to backend objects; the
backend turns them into an exec (`BackendSession.graph_instantiate`). Node parameters are kept
by the session, so a checkpoint can build every graph and exec again.

Client host memory in memcpy nodes is a slot the client numbered: its bytes travel with each
launch (`ExecNode.copy`'s host sides, in node order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.resources import Record
from cricket_server.stream_mem_ops import StreamMemOp

# CUgraphNodeType values the protocol carries
NODE_KERNEL = 0
NODE_MEMCPY = 1
NODE_MEMSET = 2
NODE_HOST = 3
NODE_GRAPH = 4
NODE_EMPTY = 5
NODE_WAIT_EVENT = 6
NODE_EVENT_RECORD = 7
NODE_MEM_ALLOC = 10
NODE_MEM_FREE = 11
NODE_BATCH_MEM_OP = 12
NODE_CONDITIONAL = 13

# CUgraphConditionalNodeType, and the handle flag CU_GRAPH_COND_ASSIGN_DEFAULT
COND_IF = 0
COND_WHILE = 1
COND_SWITCH = 2
COND_ASSIGN_DEFAULT = 1
# what a conditional body may hold (CUDA's rule, applied recursively)
BODY_NODE_TYPES = (NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, NODE_GRAPH, NODE_EMPTY, NODE_CONDITIONAL)

# CUstreamCaptureStatus
CAPTURE_NONE = 0
CAPTURE_ACTIVE = 1
CAPTURE_INVALIDATED = 2

# CUresult values of graphs and capture
CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901
CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903
CUDA_ERROR_ILLEGAL_STATE = 401
CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910

MAX_DEPTH = 16  # child graphs nested deeper than this are refused (a cycle of children)


@dataclass
class GraphNodeRecord(Record):
    graph: int
    params: Any  # cricket.x graph_node_params
    deps: list[int]
    origin: int = 0  # the node this one is a clone of (cuGraphNodeFindInClone), 0: none
    # a kernel node's launch attributes set (cuGraphKernelNodeSetAttribute): id -> (x, y, z)
    attrs: dict[int, tuple[int, int, int]] = field(default_factory=dict)

    @property
    def type(self) -> int:
        return int(self.params.type)


@dataclass
class GraphRecord(Record):
    flags: int
    nodes: list[int] = field(default_factory=list)  # node handles, in the order added


@dataclass
class HostCopy:
    """A client host memory side of an exec's memcpy node."""

    slot: int
    size: int
    to_device: bool


@dataclass
class GraphExecRecord(Record):
    obj: object  # the backend's exec
    flags: int
    nodes: list[GraphNodeRecord]  # copies of the graph's nodes it was made from
    host_copies: list[HostCopy]
    disabled: set[int] = field(default_factory=set)  # nodes cuGraphNodeSetEnabled turned off
    in_sizes: tuple[int, ...] = field(init=False, default=())  # bytes of each host-to-device
    in_total: int = field(init=False, default=0)  # copy a launch carries, and their sum

    def __post_init__(self) -> None:  # host copies are fixed when the exec is made
        self.in_sizes = tuple(c.size for c in self.host_copies if c.to_device)
        self.in_total = sum(self.in_sizes)


@dataclass(frozen=True)
class ExecNode:
    """One node of an exec, for a backend: `key` identifies it (a node handle, or a path of
    handles inside child graphs), `deps` the keys it waits for (all earlier in the list).

    kernel: (function, grid, block, shared memory bytes, packed parameters)
    copy: (dst_host, dst, src_host, src, size); a host side is an index into the launch's
          host inputs (to the device) or outputs (from it)
    set: (dst, pitch, value, element size, width, height)
    event: the backend event of a wait or record node
    mem_ops: the checked operations of a batch memory operation node
    conditional: (handle, CUgraphConditionalNodeType, default value, handle flags, bodies),
          each body the exec nodes of one body graph (keys unique in the exec); the handle
          is the session's value, which kernels of the exec may carry as an argument
    """

    key: object
    type: int
    deps: tuple[object, ...]
    kernel: tuple[object, tuple[int, int, int], tuple[int, int, int], int, bytes] | None = None
    copy: tuple[bool, int, bool, int, int] | None = None
    set: tuple[int, int, int, int, int, int] | None = None
    event: object | None = None
    conditional: tuple[int, int, int, int, tuple[tuple[ExecNode, ...], ...]] | None = None
    attrs: tuple[tuple[int, int, int, int], ...] = ()  # a kernel's launch attributes set
    mem_ops: tuple[StreamMemOp, ...] = ()  # a batch memory operation node's, in order


def topological(call: str, nodes: Sequence[GraphNodeRecord]) -> list[GraphNodeRecord]:
    """`nodes` so that each comes after those it depends on (stable: the order added where
    dependencies allow). A cycle is CUDA_ERROR_INVALID_VALUE."""
    by_handle = {n.handle: n for n in nodes}
    done: set[int] = set()
    out: list[GraphNodeRecord] = []
    pending = list(nodes)
    while pending:
        rest = []
        for node in pending:
            if all(d in done or d not in by_handle for d in node.deps):
                out.append(node)
                done.add(node.handle)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: the graph's dependencies form a cycle"
            )
        pending = rest
    return out


Resolve = Callable[[GraphNodeRecord, object, tuple[object, ...], list[HostCopy]], ExecNode]
"""(node, its key, the keys it waits for, the host copies so far) -> its ExecNode."""


def flatten(
    call: str,
    nodes: Sequence[GraphNodeRecord],
    children: Callable[[int], Sequence[GraphNodeRecord]],
    resolve: Resolve,
    prefix: tuple[int, ...] = (),
    outer_deps: tuple[object, ...] = (),
    host: list[HostCopy] | None = None,
    depth: int = 0,
    in_body: bool = False,
) -> tuple[list[ExecNode], list[HostCopy]]:
    """The exec nodes of a graph in topological order, child graphs expanded: a child's
    roots wait for what its node waits for, and what waits for the child node waits for
    every node of the child."""
    if depth > MAX_DEPTH:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE, f"{call}: child graphs nested more than {MAX_DEPTH} deep"
        )
    host = [] if host is None else host
    out: list[ExecNode] = []
    ends: dict[int, tuple[object, ...]] = {}  # node handle -> keys that finish it
    for node in topological(call, nodes):
        key: object = node.handle if not prefix else (*prefix, node.handle)
        deps: tuple[object, ...] = tuple(k for d in node.deps for k in ends.get(d, ()))
        if not node.deps:
            deps = outer_deps
        if in_body and node.type not in BODY_NODE_TYPES:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: a conditional body holds a node of type {node.type} (kernel, memcpy, "
                "memset, empty, child graph and conditional nodes only)",
            )
        if node.type == NODE_CONDITIONAL:
            out.append(_conditional(call, node, key, deps, children, resolve, depth))
            ends[node.handle] = (key,)
            continue
        if node.type == NODE_GRAPH:
            inner, _ = flatten(
                call,
                children(int(node.params.value)),
                children,
                resolve,
                (*prefix, node.handle),
                deps,
                host,
                depth + 1,
                in_body,
            )
            out.extend(inner)
            ends[node.handle] = tuple(n.key for n in inner) or deps
            continue
        out.append(resolve(node, key, deps, host))
        ends[node.handle] = (key,)
    return out, host


def _conditional(
    call: str,
    node: GraphNodeRecord,
    key: object,
    deps: tuple[object, ...],
    children: Callable[[int], Sequence[GraphNodeRecord]],
    resolve: Resolve,
    depth: int,
) -> ExecNode:
    """A conditional node with its bodies flattened (each its own list: a body runs 0 or more
    times per launch, so client host memory, which travels once per launch, is refused)."""
    p = node.params.value
    bodies = []
    for i, body in enumerate(p.bodies):
        host: list[HostCopy] = []
        inner, _ = flatten(
            call, children(int(body)), children, resolve, _path(key, i), (), host, depth + 1, True
        )
        if host:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: a conditional body copies to or from client host memory (not "
                "supported remotely: host bytes travel once per launch)",
            )
        bodies.append(tuple(inner))
    return ExecNode(
        key, NODE_CONDITIONAL, deps,
        conditional=(int(p.handle), int(p.type), int(p.default_value), int(p.flags), tuple(bodies)),
    )


def _path(key: object, body: int) -> tuple[int, ...]:
    """The key prefix of a body's nodes: the conditional node's key and the body's index."""
    prefix = key if isinstance(key, tuple) else (key,)
    return (*(int(k) for k in prefix), -1 - body)
