"""Reading and changing what a graph holds, through the runtime, on both backends:
cudaGraphNodeGetParams and the typed getters read nodes back as the runtime's structs;
cudaGraphNodeSetParams, the memcpy/memset setters and cudaGraphExecNodeSetParams change the
work; event and child-graph nodes; dependents and removed edges; exec flags, uploads and
cudaGraphInstantiateWithParams, nodes turned off, the DOT text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from behaviour_helpers import ok

import cricket_client
from cricket_client import runtime as cudart

T = cudart.cudaGraphNodeType
D2D = cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice
N = 256


def memset_params(dst: Any, value: int) -> Any:
    p = cudart.cudaMemsetParams()
    p.dst, p.value, p.elementSize, p.width, p.height = dst, value, 1, N, 1
    return p


def read(dev: Any) -> np.ndarray:
    out = np.zeros(N, dtype=np.uint8)
    ok(cudart.cudaMemcpy(out, dev, N, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost))
    return out


def launch(exec_: Any, stream: Any) -> None:
    ok(cudart.cudaGraphLaunch(exec_, stream))
    ok(cudart.cudaStreamSynchronize(stream))


def test_runtime_nodes_read_back_and_change(rt: cricket_client.Connection) -> None:
    stream = ok(cudart.cudaStreamCreate())
    a, b, c = (ok(cudart.cudaMalloc(N)) for _ in range(3))
    graph = ok(cudart.cudaGraphCreate(0))
    set_node = ok(cudart.cudaGraphAddMemsetNode(graph, None, 0, memset_params(a, 5)))
    copy_node = ok(cudart.cudaGraphAddMemcpyNode1D(graph, [set_node], 1, b, a, N, D2D))
    event = ok(cudart.cudaEventCreate())
    record = ok(cudart.cudaGraphAddEventRecordNode(graph, [copy_node], 1, event))
    child = ok(cudart.cudaGraphCreate(0))
    ok(cudart.cudaGraphAddEmptyNode(child, None, 0))
    child_node = ok(cudart.cudaGraphAddChildGraphNode(graph, [record], 1, child))

    got = ok(cudart.cudaGraphNodeGetParams(set_node))
    assert got.type == T.cudaGraphNodeTypeMemset and got.memset.value == 5
    got = ok(cudart.cudaGraphNodeGetParams(copy_node))
    assert got.type == T.cudaGraphNodeTypeMemcpy
    copy = got.memcpy.copyParams
    assert (int(copy.dstPtr.ptr), int(copy.srcPtr.ptr), copy.extent.width) == (int(b), int(a), N)
    assert copy.kind == D2D
    copy = ok(cudart.cudaGraphMemcpyNodeGetParams(copy_node))
    assert int(copy.dstPtr.ptr) == int(b)
    assert ok(cudart.cudaGraphMemsetNodeGetParams(set_node)).value == 5
    assert int(ok(cudart.cudaGraphEventRecordNodeGetEvent(record))) == int(event)
    inner = ok(cudart.cudaGraphChildGraphNodeGetGraph(child_node))
    assert ok(cudart.cudaGraphGetNodes(inner, 0))[1] == 1
    err, _ = cudart.cudaGraphMemsetNodeGetParams(copy_node)
    assert err == cudart.cudaError_t.cudaErrorInvalidValue
    cudart.cudaGetLastError()

    exec_ = ok(cudart.cudaGraphInstantiate(graph, 0))
    launch(exec_, stream)
    assert np.all(read(b) == 5)
    # the graph's nodes change: memset 6 into a, the copy goes to c
    ok(cudart.cudaGraphMemsetNodeSetParams(set_node, memset_params(a, 6)))
    ok(cudart.cudaGraphMemcpyNodeSetParams1D(copy_node, c, a, N, D2D))
    ok(cudart.cudaGraphExecDestroy(exec_))
    exec_ = ok(cudart.cudaGraphInstantiate(graph, 0))
    launch(exec_, stream)
    assert np.all(read(c) == 6) and np.all(read(b) == 5)
    # through the polymorphic calls: the graph's memset writes 7, the exec's 8
    p = ok(cudart.cudaGraphNodeGetParams(set_node))
    p.memset.value = 7
    ok(cudart.cudaGraphNodeSetParams(set_node, p))
    assert ok(cudart.cudaGraphMemsetNodeGetParams(set_node)).value == 7
    p.memset.value = 8
    ok(cudart.cudaGraphExecNodeSetParams(exec_, set_node, p))
    launch(exec_, stream)
    assert np.all(read(c) == 8)
    # the exec's copy goes back to b (the graph's node still copies to c)
    ok(cudart.cudaGraphExecMemcpyNodeSetParams1D(exec_, copy_node, b, a, N, D2D))
    launch(exec_, stream)
    assert np.all(read(b) == 8)
    parms = ok(cudart.cudaGraphMemcpyNodeGetParams(copy_node))
    assert int(parms.dstPtr.ptr) == int(c)
    parms.dstPtr = cudart.make_cudaPitchedPtr(c, N, N, 1)
    ok(cudart.cudaGraphExecMemcpyNodeSetParams(exec_, copy_node, parms))
    other = ok(cudart.cudaEventCreate())
    ok(cudart.cudaGraphExecEventRecordNodeSetEvent(exec_, record, other))
    ok(cudart.cudaGraphEventRecordNodeSetEvent(record, other))
    assert int(ok(cudart.cudaGraphEventRecordNodeGetEvent(record))) == int(other)
    launch(exec_, stream)

    ok(cudart.cudaGraphExecDestroy(exec_))
    ok(cudart.cudaGraphDestroy(graph))
    ok(cudart.cudaGraphDestroy(child))
    for e in (event, other):
        ok(cudart.cudaEventDestroy(e))
    for ptr in (a, b, c):
        ok(cudart.cudaFree(ptr))
    ok(cudart.cudaStreamDestroy(stream))


def test_runtime_structure_flags_and_instantiate_with_params(
    rt: cricket_client.Connection, tmp_path: Path
) -> None:
    stream = ok(cudart.cudaStreamCreate())
    a = ok(cudart.cudaMalloc(N))
    graph = ok(cudart.cudaGraphCreate(0))
    one = ok(cudart.cudaGraphAddMemsetNode(graph, None, 0, memset_params(a, 1)))
    two = ok(cudart.cudaGraphAddMemsetNode(graph, [one], 1, memset_params(a, 2)))
    nodes, _, count = ok(cudart.cudaGraphNodeGetDependentNodes(one, 1))
    assert count == 1 and nodes[0] == two
    ok(cudart.cudaGraphRemoveDependencies(graph, [one], [two], None, 1))
    ok(cudart.cudaGraphAddDependencies(graph, [two], [one], None, 1))
    assert ok(cudart.cudaGraphNodeGetDependentNodes(two, 0))[2] == 1

    flags = cudart.cudaGraphInstantiateFlags
    params = cudart.cudaGraphInstantiateParams()
    params.flags = int(flags.cudaGraphInstantiateFlagUpload)
    params.uploadStream = stream
    exec_ = ok(cudart.cudaGraphInstantiateWithParams(graph, params))
    assert params.result_out == cudart.cudaGraphInstantiateResult.cudaGraphInstantiateSuccess
    assert ok(cudart.cudaGraphExecGetFlags(exec_)) == int(flags.cudaGraphInstantiateFlagUpload)
    ok(cudart.cudaGraphUpload(exec_, stream))
    launch(exec_, stream)
    assert np.all(read(a) == 1)  # `one` runs last now
    ok(cudart.cudaGraphNodeSetEnabled(exec_, one, 0))
    assert ok(cudart.cudaGraphNodeGetEnabled(exec_, one)) == 0
    launch(exec_, stream)
    assert np.all(read(a) == 2)  # `one` is off

    dot = tmp_path / "graph.dot"
    ok(cudart.cudaGraphDebugDotPrint(graph, str(dot).encode(), 0))
    assert dot.read_text().lstrip().startswith("digraph")

    ok(cudart.cudaGraphExecDestroy(exec_))
    ok(cudart.cudaGraphDestroy(graph))
    ok(cudart.cudaFree(a))
    ok(cudart.cudaStreamDestroy(stream))


def test_runtime_exec_child_graph_and_clone_lookup(rt: cricket_client.Connection) -> None:
    stream = ok(cudart.cudaStreamCreate())
    a = ok(cudart.cudaMalloc(N))
    first, second, graph = (ok(cudart.cudaGraphCreate(0)) for _ in range(3))
    ok(cudart.cudaGraphAddMemsetNode(first, None, 0, memset_params(a, 1)))
    ok(cudart.cudaGraphAddMemsetNode(second, None, 0, memset_params(a, 5)))
    child = ok(cudart.cudaGraphAddChildGraphNode(graph, None, 0, first))
    exec_ = ok(cudart.cudaGraphInstantiate(graph, 0))
    ok(cudart.cudaGraphExecChildGraphNodeSetParams(exec_, child, second))
    launch(exec_, stream)
    assert np.all(read(a) == 5)
    clone = ok(cudart.cudaGraphClone(graph))
    found = ok(cudart.cudaGraphNodeFindInClone(child, clone))
    assert ok(cudart.cudaGraphNodeGetType(found)) == T.cudaGraphNodeTypeGraph
    ok(cudart.cudaGraphExecDestroy(exec_))
    for g in (graph, first, second, clone):
        ok(cudart.cudaGraphDestroy(g))
    ok(cudart.cudaFree(a))
    ok(cudart.cudaStreamDestroy(stream))
