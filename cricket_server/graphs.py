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

# CUgraphNodeType values the protocol carries
NODE_KERNEL = 0
NODE_MEMCPY = 1
NODE_MEMSET = 2
NODE_HOST = 3
NODE_GRAPH = 4
NODE_EMPTY = 5
NODE_WAIT_EVENT = 6
NODE_EVENT_RECORD = 7

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


@dataclass(frozen=True)
class ExecNode:
    """One node of an exec, for a backend: `key` identifies it (a node handle, or a path of
    handles inside child graphs), `deps` the keys it waits for (all earlier in the list).

    kernel: (function, grid, block, shared memory bytes, packed parameters)
    copy: (dst_host, dst, src_host, src, size); a host side is an index into the launch's
          host inputs (to the device) or outputs (from it)
    set: (dst, pitch, value, element size, width, height)
    event: the backend event of a wait or record node
    """

    key: object
    type: int
    deps: tuple[object, ...]
    kernel: tuple[object, tuple[int, int, int], tuple[int, int, int], int, bytes] | None = None
    copy: tuple[bool, int, bool, int, int] | None = None
    set: tuple[int, int, int, int, int, int] | None = None
    event: object | None = None


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
            )
            out.extend(inner)
            ends[node.handle] = tuple(n.key for n in inner) or deps
            continue
        out.append(resolve(node, key, deps, host))
        ends[node.handle] = (key,)
    return out, host
