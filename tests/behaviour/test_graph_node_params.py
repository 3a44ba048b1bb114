"""The polymorphic graph node calls, on both backends: cuGraphAddNode builds memset, memcpy
(to client host memory), empty and child-graph nodes from a CUgraphNodeParams; the graph runs;
cuGraphNodeSetParams and cuGraphExecNodeSetParams change a node's work; the memcpy and memset
node parameters read back; a node type that cannot be built remotely is refused, named."""

from __future__ import annotations

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

T = cuda.CUgraphNodeType


def memset_params(dst: object, value: int, size: int) -> cuda.CUgraphNodeParams:
    p = cuda.CUgraphNodeParams()
    p.type = T.CU_GRAPH_NODE_TYPE_MEMSET
    p.memset.dst, p.memset.value = dst, value
    p.memset.elementSize, p.memset.width, p.memset.height = 1, size, 1
    return p


def test_nodes_from_node_params_run_and_change(session: cricket_client.Connection) -> None:
    size = 512
    stream = check(cuda.cuStreamCreate(0))
    a, b = check(cuda.cuMemAlloc(size)), check(cuda.cuMemAlloc(size))
    check(cuda.cuMemcpyHtoD(b, np.full(size, 2, dtype=np.uint8), size))
    graph = check(cuda.cuGraphCreate(0))
    set_node = check(cuda.cuGraphAddNode(graph, None, None, 0, memset_params(a, 1, size)))
    host = np.zeros(size, dtype=np.uint8)
    copy = cuda.CUgraphNodeParams()
    copy.type = T.CU_GRAPH_NODE_TYPE_MEMCPY
    c = copy.memcpy.copyParams
    c.srcMemoryType, c.srcDevice = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE, b
    c.dstMemoryType, c.dstHost = cuda.CUmemorytype.CU_MEMORYTYPE_HOST, host
    c.WidthInBytes, c.Height, c.Depth = size, 1, 1
    copy_node = check(cuda.cuGraphAddNode(graph, [set_node], None, 1, copy))
    empty = cuda.CUgraphNodeParams()
    empty.type = T.CU_GRAPH_NODE_TYPE_EMPTY
    check(cuda.cuGraphAddNode(graph, [copy_node], None, 1, empty))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(host == 2)
    out = np.zeros(size, dtype=np.uint8)
    check(cuda.cuMemcpyDtoH(out, a, size))
    assert np.all(out == 1)

    read = check(cuda.cuGraphMemcpyNodeGetParams(copy_node))
    assert int(read.srcDevice) == int(b) and read.WidthInBytes == size
    copy.memcpy.copyParams.srcDevice = a
    check(cuda.cuGraphNodeSetParams(copy_node, copy))
    assert int(check(cuda.cuGraphMemcpyNodeGetParams(copy_node)).srcDevice) == int(a)
    check(cuda.cuGraphExecNodeSetParams(exec_, set_node, memset_params(a, 11, size)))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(out, a, size))
    assert np.all(out == 11)
    assert check(cuda.cuGraphMemsetNodeGetParams(set_node)).value == 1  # the graph's own node

    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    for p in (a, b):
        check(cuda.cuMemFree(p))
    check(cuda.cuStreamDestroy(stream))


def test_a_node_type_that_cannot_be_built_remotely_is_refused(
    session: cricket_client.Connection,
) -> None:
    graph = check(cuda.cuGraphCreate(0))
    host = cuda.CUgraphNodeParams()
    host.type = T.CU_GRAPH_NODE_TYPE_HOST
    err, node = cuda.cuGraphAddNode(graph, None, None, 0, host)
    assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED and node is None
    assert "CU_GRAPH_NODE_TYPE_HOST" in cricket_client.last_error_message()
    check(cuda.cuGraphDestroy(graph))


def test_a_destroyed_node_leaves_its_graph_with_its_edges(
    session: cricket_client.Connection,
) -> None:
    graph = check(cuda.cuGraphCreate(0))
    first = check(cuda.cuGraphAddEmptyNode(graph, None, 0))
    middle = check(cuda.cuGraphAddEmptyNode(graph, [first], 1))
    last = check(cuda.cuGraphAddEmptyNode(graph, [first, middle], 2))
    check(cuda.cuGraphDestroyNode(middle))
    nodes = check(cuda.cuGraphGetNodes(graph, 2))[0]
    assert {int(n) for n in nodes} == {int(first), int(last)}
    assert [int(d) for d in check(cuda.cuGraphNodeGetDependencies(last, 1))[0]] == [int(first)]
    err, _ = cuda.cuGraphNodeGetType(middle)
    assert err != cuda.CUresult.CUDA_SUCCESS  # the handle is gone
    (err,) = cudart.cudaGraphDestroyNode(last)
    assert err == cudart.cudaError_t.cudaSuccess
    assert check(cuda.cuGraphGetNodes(graph, 0)) == ([], 1)
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))


def test_graph_exec_and_node_ids_and_a_nodes_graph(session: cricket_client.Connection) -> None:
    graph, other = check(cuda.cuGraphCreate(0)), check(cuda.cuGraphCreate(0))
    first = check(cuda.cuGraphAddEmptyNode(graph, None, 0))
    second = check(cuda.cuGraphAddEmptyNode(graph, [first], 1))
    ids = {check(cuda.cuGraphGetId(graph)), check(cuda.cuGraphGetId(other))}
    assert len(ids) == 2 and all(isinstance(i, int) and i > 0 for i in ids)
    assert check(cudart.cudaGraphGetId(graph)) == check(cuda.cuGraphGetId(graph))
    local = [check(cuda.cuGraphNodeGetLocalId(n)) for n in (first, second)]
    tools = [check(cuda.cuGraphNodeGetToolsId(n)) for n in (first, second)]
    assert local[0] != local[1] and tools[0] != tools[1] and min(local + tools) >= 0
    assert check(cudart.cudaGraphNodeGetLocalId(first)) == local[0]
    assert check(cudart.cudaGraphNodeGetToolsId(first)) == tools[0]
    execs = [check(cuda.cuGraphInstantiate(g, 0)) for g in (graph, other)]
    exec_ids = [check(cuda.cuGraphExecGetId(e)) for e in execs]
    assert exec_ids[0] != exec_ids[1] and min(exec_ids) > 0
    assert check(cudart.cudaGraphExecGetId(execs[0])) == exec_ids[0]
    assert int(check(cuda.cuGraphNodeGetContainingGraph(second))) == int(graph)
    containing = check(cudart.cudaGraphNodeGetContainingGraph(second))
    assert isinstance(containing, cudart.cudaGraph_t) and int(containing) == int(graph)
    err, value = cuda.cuGraphGetId(cuda.CUgraph(0x1234))
    assert err != cuda.CUresult.CUDA_SUCCESS and value is None
    for e in execs:
        check(cuda.cuGraphExecDestroy(e))
    for g in (graph, other):
        check(cuda.cuGraphDestroy(g))


def test_runtime_node_params_add_nodes_of_their_type(session: cricket_client.Connection) -> None:
    size = 256
    dst = check(cuda.cuMemAlloc(size))
    graph, child = check(cuda.cuGraphCreate(0)), check(cuda.cuGraphCreate(0))
    check(cuda.cuGraphAddEmptyNode(child, None, 0))
    memset = cudart.cudaGraphNodeParams()
    memset.type = cudart.cudaGraphNodeType.cudaGraphNodeTypeMemset
    memset.memset.dst, memset.memset.value, memset.memset.elementSize = dst, 5, 1
    memset.memset.width, memset.memset.height, memset.memset.pitch = size, 1, size
    err, set_node = cudart.cudaGraphAddNode(graph, None, None, 0, memset)
    assert err == cudart.cudaError_t.cudaSuccess
    nested = cudart.cudaGraphNodeParams()
    nested.type = cudart.cudaGraphNodeType.cudaGraphNodeTypeGraph
    nested.graph.graph = child
    err, child_node = cudart.cudaGraphAddNode(graph, [set_node], None, 1, nested)
    assert err == cudart.cudaError_t.cudaSuccess
    assert int(check(cudart.cudaGraphNodeGetContainingGraph(child_node))) == int(graph)
    host = cudart.cudaGraphNodeParams()
    host.type = cudart.cudaGraphNodeType.cudaGraphNodeTypeHost
    err, node = cudart.cudaGraphAddNode(graph, None, None, 0, host)
    assert err == cudart.cudaError_t.cudaErrorNotSupported and node is None
    assert "cudaGraphNodeTypeHost" in cricket_client.last_error_message()
    stream = check(cuda.cuStreamCreate(0))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    out = np.zeros(size, dtype=np.uint8)
    check(cuda.cuMemcpyDtoH(out, dst, size))
    assert np.all(out == 5)
    check(cuda.cuGraphExecDestroy(exec_))
    for g in (graph, child):
        check(cuda.cuGraphDestroy(g))
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuMemFree(dst))
