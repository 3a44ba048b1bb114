"""The session's graph model without a server: topological order and child-graph expansion
(cricket_server.graphs)."""

from __future__ import annotations

from typing import Any

import pytest

from cricket_server.backends.base import CudaError
from cricket_server.graphs import (
    NODE_EMPTY,
    NODE_GRAPH,
    ExecNode,
    GraphNodeRecord,
    HostCopy,
    flatten,
    topological,
)
from rpc_spec import cricket_rpc as proto


def node(handle: int, deps: list[int], params: Any = None) -> GraphNodeRecord:
    return GraphNodeRecord(
        handle=handle, ctx=0, graph=1, params=params or proto.graph_node_params(NODE_EMPTY),
        deps=deps,
    )


def resolve(n: GraphNodeRecord, key: object, deps: tuple[object, ...], host: list[HostCopy]) -> ExecNode:
    return ExecNode(key, n.type, deps)


def test_nodes_come_after_what_they_depend_on_whatever_the_order_added() -> None:
    nodes = [node(3, [2]), node(1, []), node(2, [1]), node(4, [])]
    order = [n.handle for n in topological("t", nodes)]
    assert sorted(order) == [1, 2, 3, 4]
    assert order.index(1) < order.index(2) < order.index(3)


def test_a_cycle_is_refused() -> None:
    with pytest.raises(CudaError, match="cycle"):
        topological("cuGraphInstantiate", [node(1, [2]), node(2, [1])])


def test_a_child_graph_is_expanded_between_its_dependencies() -> None:
    child = [node(10, []), node(11, [10])]
    parent = [node(1, []), node(2, [1], proto.graph_node_params(NODE_GRAPH, 99)), node(3, [2])]
    out, host = flatten("t", parent, lambda h: child if h == 99 else [], resolve)
    keys = [n.key for n in out]
    assert keys == [1, (2, 10), (2, 11), 3]
    deps = {n.key: n.deps for n in out}
    assert deps[(2, 10)] == (1,)  # the child's root waits for what its node waits for
    assert deps[(2, 11)] == ((2, 10),)
    assert set(deps[3]) == {(2, 10), (2, 11)}  # what follows the child waits for all of it
    assert host == []


def test_children_nested_without_end_are_refused() -> None:
    loop = [node(5, [], proto.graph_node_params(NODE_GRAPH, 7))]
    with pytest.raises(CudaError, match="nested"):
        flatten("t", loop, lambda h: loop, resolve)
