"""Reading and changing what a graph holds, through the driver, on both backends:
cuGraphNodeGetParams reads each node type back; memcpy, memset and event nodes are set with
their typed calls and the next instantiation runs the new work; an exec's event record node
records another event; dependents and removed edges change what runs first; an exec's flags,
uploads and cuGraphInstantiateWithParams; nodes turned off; the DOT text written on the
client."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

T = cuda.CUgraphNodeType
N = 256


def memset_params(dst: Any, value: int) -> Any:
    p = cuda.CUDA_MEMSET_NODE_PARAMS()
    p.dst, p.value, p.elementSize, p.width, p.height = dst, value, 1, N, 1
    return p


def copy_params(dst: Any, src: Any) -> Any:
    p = cuda.CUDA_MEMCPY3D()
    p.srcMemoryType, p.srcDevice = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE, src
    p.dstMemoryType, p.dstDevice = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE, dst
    p.WidthInBytes, p.Height, p.Depth = N, 1, 1
    return p


def read(dev: Any) -> np.ndarray:
    out = np.zeros(N, dtype=np.uint8)
    check(cuda.cuMemcpyDtoH(out, dev, N))
    return out


def run(graph: Any, stream: Any) -> None:
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuGraphExecDestroy(exec_))


def test_node_params_read_back_and_typed_setters_change_the_work(
    session: cricket_client.Connection, kernels: Any
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a, b, c = (check(cuda.cuMemAlloc(N)) for _ in range(3))
    event = check(cuda.cuEventCreate(0))
    graph = check(cuda.cuGraphCreate(0))
    set_node = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 5), None))
    copy_node = check(cuda.cuGraphAddMemcpyNode(graph, [set_node], 1, copy_params(b, a), None))
    record = check(cuda.cuGraphAddEventRecordNode(graph, [copy_node], 1, event))
    wait = check(cuda.cuGraphAddEventWaitNode(graph, [record], 1, event))
    child = check(cuda.cuGraphCreate(0))
    check(cuda.cuGraphAddEmptyNode(child, None, 0))
    child_node = check(cuda.cuGraphAddChildGraphNode(graph, [wait], 1, child))
    fill = check(cuda.cuModuleGetFunction(kernels, b"fill_u32"))
    k = cuda.CUDA_KERNEL_NODE_PARAMS()
    k.func = fill
    k.gridDimX = k.gridDimY = k.gridDimZ = 1
    k.blockDimX, k.blockDimY, k.blockDimZ = 4, 1, 1
    k.kernelParams = ((c, 7, 4), (None, ctypes.c_uint32, ctypes.c_uint64))
    kernel_node = check(cuda.cuGraphAddKernelNode(graph, None, 0, k))

    got = check(cuda.cuGraphNodeGetParams(set_node))
    assert got.type == T.CU_GRAPH_NODE_TYPE_MEMSET
    assert (int(got.memset.dst), got.memset.value, got.memset.width) == (int(a), 5, N)
    got = check(cuda.cuGraphNodeGetParams(copy_node))
    assert got.type == T.CU_GRAPH_NODE_TYPE_MEMCPY
    copy = got.memcpy.copyParams
    assert (int(copy.dstDevice), int(copy.srcDevice), copy.WidthInBytes) == (int(b), int(a), N)
    assert int(check(cuda.cuGraphNodeGetParams(record)).eventRecord.event) == int(event)
    assert int(check(cuda.cuGraphNodeGetParams(wait)).eventWait.event) == int(event)
    inner = check(cuda.cuGraphChildGraphNodeGetGraph(child_node))
    assert int(check(cuda.cuGraphNodeGetParams(child_node)).graph.graph) == int(inner)
    assert check(cuda.cuGraphGetNodes(inner, 0))[1] == 1  # the clone holds the empty node
    got = check(cuda.cuGraphNodeGetParams(kernel_node))
    assert got.type == T.CU_GRAPH_NODE_TYPE_KERNEL and int(got.kernel.func) == int(fill)
    assert (got.kernel.blockDimX, got.kernel.gridDimX) == (4, 1)

    run(graph, stream)
    assert np.all(read(b) == 5)
    check(cuda.cuGraphMemsetNodeSetParams(set_node, memset_params(a, 9)))
    check(cuda.cuGraphMemcpyNodeSetParams(copy_node, copy_params(c, a)))
    assert check(cuda.cuGraphMemsetNodeGetParams(set_node)).value == 9
    assert int(check(cuda.cuGraphMemcpyNodeGetParams(copy_node)).dstDevice) == int(c)
    run(graph, stream)
    assert np.all(read(c)[16:] == 9) and np.all(read(b) == 5)

    other = check(cuda.cuEventCreate(0))
    check(cuda.cuGraphEventRecordNodeSetEvent(record, other))
    check(cuda.cuGraphEventWaitNodeSetEvent(wait, other))
    assert int(check(cuda.cuGraphEventRecordNodeGetEvent(record))) == int(other)
    assert int(check(cuda.cuGraphEventWaitNodeGetEvent(wait))) == int(other)
    err, _ = cuda.cuGraphEventWaitNodeGetEvent(record)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    run(graph, stream)
    check(cuda.cuEventSynchronize(other))

    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuGraphDestroy(child))
    for e in (event, other):
        check(cuda.cuEventDestroy(e))
    for p in (a, b, c):
        check(cuda.cuMemFree(p))
    check(cuda.cuStreamDestroy(stream))


def test_an_exec_event_record_node_records_another_event(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    first, second = check(cuda.cuEventCreate(0)), check(cuda.cuEventCreate(0))
    graph = check(cuda.cuGraphCreate(0))
    record = check(cuda.cuGraphAddEventRecordNode(graph, None, 0, first))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphExecEventRecordNodeSetEvent(exec_, record, second))
    start = check(cuda.cuEventCreate(0))
    check(cuda.cuEventRecord(start, stream))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    # only `second` was recorded: a time between start and it, none to `first`
    assert check(cuda.cuEventElapsedTime(start, second)) >= 0
    assert cuda.cuEventElapsedTime(start, first)[0] != cuda.CUresult.CUDA_SUCCESS
    # the graph's own node keeps its event
    assert int(check(cuda.cuGraphEventRecordNodeGetEvent(record))) == int(first)
    err = cuda.cuGraphExecEventWaitNodeSetEvent(exec_, record, second)[0]
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE  # a record node is no wait node
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    for e in (first, second, start):
        check(cuda.cuEventDestroy(e))
    check(cuda.cuStreamDestroy(stream))


def test_dependents_and_removed_edges(session: cricket_client.Connection) -> None:
    """Two memsets of one buffer: the later one in graph order wins while the edge holds;
    once the edge is removed and the other way round is added, the other one does."""
    stream = check(cuda.cuStreamCreate(0))
    a = check(cuda.cuMemAlloc(N))
    graph = check(cuda.cuGraphCreate(0))
    one = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 1), None))
    two = check(cuda.cuGraphAddMemsetNode(graph, [one], 1, memset_params(a, 2), None))
    dependents, _, count = check(cuda.cuGraphNodeGetDependentNodes(one, 2))
    assert count == 1 and dependents[0] == two and int(dependents[1]) == 0
    assert check(cuda.cuGraphNodeGetDependentNodes(two))[2] == 0
    run(graph, stream)
    assert np.all(read(a) == 2)

    check(cuda.cuGraphRemoveDependencies(graph, [one], [two], None, 1))
    assert check(cuda.cuGraphNodeGetDependencies(two))[2] == 0
    assert check(cuda.cuGraphNodeGetDependentNodes(one))[2] == 0
    err = cuda.cuGraphRemoveDependencies(graph, [one], [two], None, 1)[0]
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE  # no such edge any more
    assert "no edge" in cricket_client.last_error_message()
    check(cuda.cuGraphAddDependencies(graph, [two], [one], None, 1))
    run(graph, stream)
    assert np.all(read(a) == 1)

    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuMemFree(a))
    check(cuda.cuStreamDestroy(stream))


def test_exec_flags_upload_and_instantiate_with_params(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a = check(cuda.cuMemAlloc(N))
    graph = check(cuda.cuGraphCreate(0))
    check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 3), None))
    flags = cuda.CUgraphInstantiate_flags
    launch_order = int(flags.CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)
    exec_ = check(cuda.cuGraphInstantiate(graph, launch_order))
    assert int(check(cuda.cuGraphExecGetFlags(exec_))) == launch_order
    check(cuda.cuGraphUpload(exec_, stream))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(a) == 3)
    check(cuda.cuGraphExecDestroy(exec_))

    params = cuda.CUDA_GRAPH_INSTANTIATE_PARAMS()
    params.flags = int(flags.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)
    params.hUploadStream = stream
    exec_ = check(cuda.cuGraphInstantiateWithParams(graph, params))
    assert params.result_out == cuda.CUgraphInstantiateResult.CUDA_GRAPH_INSTANTIATE_SUCCESS
    assert int(check(cuda.cuGraphExecGetFlags(exec_))) == int(flags.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)
    check(cuda.cuMemsetD8(a, 0, N))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(a) == 3)
    check(cuda.cuGraphExecDestroy(exec_))
    assert cuda.cuGraphExecGetFlags(exec_)[0] == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE

    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuMemFree(a))
    check(cuda.cuStreamDestroy(stream))


def test_disabled_nodes_do_not_run_until_enabled_again(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a, b = check(cuda.cuMemAlloc(N)), check(cuda.cuMemAlloc(N))
    graph = check(cuda.cuGraphCreate(0))
    fill = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 6), None))
    copy = check(cuda.cuGraphAddMemcpyNode(graph, [fill], 1, copy_params(b, a), None))
    event = check(cuda.cuEventCreate(0))
    record = check(cuda.cuGraphAddEventRecordNode(graph, [copy], 1, event))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    assert check(cuda.cuGraphNodeGetEnabled(exec_, copy)) == 1
    check(cuda.cuGraphNodeSetEnabled(exec_, copy, 0))
    assert check(cuda.cuGraphNodeGetEnabled(exec_, copy)) == 0
    assert check(cuda.cuGraphNodeGetEnabled(exec_, fill)) == 1
    check(cuda.cuMemsetD8(b, 0, N))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(a) == 6) and np.all(read(b) == 0)  # the copy did not run
    check(cuda.cuGraphNodeSetEnabled(exec_, copy, 1))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(b) == 6)
    # only kernel, memset and memcpy nodes can be turned off; nodes of other graphs are refused
    assert cuda.cuGraphNodeSetEnabled(exec_, record, 0)[0] == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    other = check(cuda.cuGraphCreate(0))
    stranger = check(cuda.cuGraphAddMemsetNode(other, None, 0, memset_params(a, 1), None))
    assert cuda.cuGraphNodeGetEnabled(exec_, stranger)[0] == cuda.CUresult.CUDA_ERROR_INVALID_VALUE

    check(cuda.cuGraphExecDestroy(exec_))
    for g in (graph, other):
        check(cuda.cuGraphDestroy(g))
    check(cuda.cuEventDestroy(event))
    for p in (a, b):
        check(cuda.cuMemFree(p))
    check(cuda.cuStreamDestroy(stream))


def test_an_exec_memcpy_node_copies_between_other_device_addresses(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a, b, c = (check(cuda.cuMemAlloc(N)) for _ in range(3))
    check(cuda.cuMemsetD8(a, 3, N))
    check(cuda.cuMemsetD8(c, 0, N))
    graph = check(cuda.cuGraphCreate(0))
    copy = check(cuda.cuGraphAddMemcpyNode(graph, None, 0, copy_params(b, a), None))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphExecMemcpyNodeSetParams(exec_, copy, copy_params(c, a), None))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(c) == 3)
    assert int(check(cuda.cuGraphMemcpyNodeGetParams(copy)).dstDevice) == int(b)  # the graph's
    host = np.zeros(N, dtype=np.uint8)
    to_host = copy_params(b, a)
    to_host.dstMemoryType, to_host.dstHost = cuda.CUmemorytype.CU_MEMORYTYPE_HOST, host
    err = cuda.cuGraphExecMemcpyNodeSetParams(exec_, copy, to_host, None)[0]
    assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED
    assert "client host memory" in cricket_client.last_error_message()

    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    for p in (a, b, c):
        check(cuda.cuMemFree(p))
    check(cuda.cuStreamDestroy(stream))


def test_debug_dot_print_writes_the_graph_on_the_client(
    session: cricket_client.Connection, tmp_path: Path
) -> None:
    a = check(cuda.cuMemAlloc(N))
    graph = check(cuda.cuGraphCreate(0))
    one = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 1), None))
    check(cuda.cuGraphAddMemsetNode(graph, [one], 1, memset_params(a, 2), None))
    path = tmp_path / "graph.dot"
    verbose = int(cuda.CUgraphDebugDot_flags.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)
    check(cuda.cuGraphDebugDotPrint(graph, str(path).encode(), verbose))
    text = path.read_text()
    assert text.lstrip().startswith("digraph") and "->" in text
    missing = tmp_path / "no such folder" / "graph.dot"
    err = cuda.cuGraphDebugDotPrint(graph, str(missing), 0)[0]
    assert err == cuda.CUresult.CUDA_ERROR_OPERATING_SYSTEM
    assert "no such folder" in cricket_client.last_error_message()
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuMemFree(a))


def test_a_node_is_found_in_a_clone(session: cricket_client.Connection) -> None:
    a = check(cuda.cuMemAlloc(N))
    graph = check(cuda.cuGraphCreate(0))
    one = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 1), None))
    two = check(cuda.cuGraphAddMemsetNode(graph, [one], 1, memset_params(a, 2), None))
    clone = check(cuda.cuGraphClone(graph))
    found = check(cuda.cuGraphNodeFindInClone(two, clone))
    assert int(found) != int(two)
    assert int(check(cuda.cuGraphNodeGetContainingGraph(found))) == int(clone)
    assert check(cuda.cuGraphMemsetNodeGetParams(found)).value == 2
    assert [int(n) for n in check(cuda.cuGraphNodeGetDependencies(found, 1))[0]] == [
        int(check(cuda.cuGraphNodeFindInClone(one, clone)))
    ]
    other = check(cuda.cuGraphCreate(0))
    err, node = cuda.cuGraphNodeFindInClone(two, other)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE and node is None
    for g in (graph, clone, other):
        check(cuda.cuGraphDestroy(g))
    check(cuda.cuMemFree(a))


def test_a_graph_whose_later_node_runs_first_clones(session: cricket_client.Connection) -> None:
    """An edge from a node added later to one added earlier (cuGraphAddDependencies) is
    cloned too."""
    a = check(cuda.cuMemAlloc(N))
    graph = check(cuda.cuGraphCreate(0))
    one = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 1), None))
    two = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 2), None))
    check(cuda.cuGraphAddDependencies(graph, [two], [one], None, 1))
    clone = check(cuda.cuGraphClone(graph))
    one_c, two_c = (check(cuda.cuGraphNodeFindInClone(n, clone)) for n in (one, two))
    assert [int(n) for n in check(cuda.cuGraphNodeGetDependencies(one_c, 1))[0]] == [int(two_c)]
    for g in (graph, clone):
        check(cuda.cuGraphDestroy(g))
    check(cuda.cuMemFree(a))


def test_an_exec_child_graph_node_does_another_graphs_work(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a, b = check(cuda.cuMemAlloc(N)), check(cuda.cuMemAlloc(N))
    first, second = check(cuda.cuGraphCreate(0)), check(cuda.cuGraphCreate(0))
    s1 = check(cuda.cuGraphAddMemsetNode(first, None, 0, memset_params(a, 1), None))
    check(cuda.cuGraphAddMemcpyNode(first, [s1], 1, copy_params(b, a), None))
    s2 = check(cuda.cuGraphAddMemsetNode(second, None, 0, memset_params(a, 7), None))
    check(cuda.cuGraphAddMemcpyNode(second, [s2], 1, copy_params(b, a), None))
    graph = check(cuda.cuGraphCreate(0))
    child = check(cuda.cuGraphAddChildGraphNode(graph, None, 0, first))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(b) == 1)
    check(cuda.cuGraphExecChildGraphNodeSetParams(exec_, child, second))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(b) == 7)
    # a graph of another shape is refused
    other = check(cuda.cuGraphCreate(0))
    check(cuda.cuGraphAddMemsetNode(other, None, 0, memset_params(a, 9), None))
    err = cuda.cuGraphExecChildGraphNodeSetParams(exec_, child, other)[0]
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(read(b) == 7)

    check(cuda.cuGraphExecDestroy(exec_))
    for g in (graph, first, second, other):
        check(cuda.cuGraphDestroy(g))
    for p in (a, b):
        check(cuda.cuMemFree(p))
    check(cuda.cuStreamDestroy(stream))
