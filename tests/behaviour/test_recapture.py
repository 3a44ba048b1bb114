"""Recapture into an existing graph (cuStreamBeginRecaptureToGraph and the cuda form): the
captured work takes the places of the graph's nodes in order, so a graph captured once gets
new parameters (an exec takes them with cuGraphExecUpdate); another topology, more or fewer
nodes invalidate the recapture, naming why; a mismatch callback is refused naming the call."""

from __future__ import annotations

from typing import Any

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 256
GLOBAL = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL


def words(ptr: Any) -> np.ndarray:
    out = np.zeros(N, np.uint32)
    check(cuda.cuMemcpyDtoH(out, ptr, out.nbytes))
    return out


def capture_fill(stream: Any, a: Any, b: Any, value: int) -> None:
    """Two nodes: a := value, then b := a."""
    check(cuda.cuMemsetD32Async(a, value, N, stream))
    check(cuda.cuMemcpyDtoDAsync(b, a, 4 * N, stream))


def test_recapture_gives_the_graph_new_parameters(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a, b = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    check(cuda.cuStreamBeginCapture(stream, GLOBAL))
    capture_fill(stream, a, b, 3)
    graph = check(cuda.cuStreamEndCapture(stream))
    nodes_before, count = check(cuda.cuGraphGetNodes(graph, 2))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert (words(b) == 3).all()

    check(cuda.cuStreamBeginRecaptureToGraph(stream, GLOBAL, graph, None, None))
    capture_fill(stream, a, b, 8)
    assert int(check(cuda.cuStreamEndCapture(stream))) == int(graph)  # the same graph
    nodes_after, count = check(cuda.cuGraphGetNodes(graph, 2))
    assert count == 2 and [int(n) for n in nodes_after] == [int(n) for n in nodes_before]
    assert int(check(cuda.cuGraphMemsetNodeGetParams(nodes_after[0])).value) == 8
    check(cuda.cuGraphExecUpdate(exec_, graph))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert (words(b) == 8).all()
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    for p in (a, b):
        check(cuda.cuMemFree(p))


def test_another_topology_invalidates_the_recapture(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a, b = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    check(cuda.cuStreamBeginCapture(stream, GLOBAL))
    capture_fill(stream, a, b, 3)
    graph = check(cuda.cuStreamEndCapture(stream))
    invalidated = cuda.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    # a copy where the memset was
    check(cuda.cuStreamBeginRecaptureToGraph(stream, GLOBAL, graph, None, None))
    check(cuda.cuMemcpyDtoDAsync(b, a, 4 * N, stream))
    assert cuda.cuStreamEndCapture(stream) == (invalidated, None)
    assert "node 0 is of type" in cricket_client.last_error_message()
    # one node of two
    check(cuda.cuStreamBeginRecaptureToGraph(stream, GLOBAL, graph, None, None))
    check(cuda.cuMemsetD32Async(a, 1, N, stream))
    assert cuda.cuStreamEndCapture(stream) == (invalidated, None)
    assert "made 1 of the graph's 2 nodes" in cricket_client.last_error_message()
    # three nodes of two
    check(cuda.cuStreamBeginRecaptureToGraph(stream, GLOBAL, graph, None, None))
    capture_fill(stream, a, b, 4)
    check(cuda.cuMemsetD32Async(a, 1, N, stream))
    assert cuda.cuStreamEndCapture(stream) == (invalidated, None)
    assert "more than the graph's 2 nodes" in cricket_client.last_error_message()
    # the graph stays the caller's, whole
    assert check(cuda.cuGraphGetNodes(graph, 0))[1] == 2
    check(cuda.cuGraphDestroy(graph))
    for p in (a, b):
        check(cuda.cuMemFree(p))


def test_a_mismatch_callback_is_refused(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    graph = check(cuda.cuGraphCreate(0))
    err = cuda.cuStreamBeginRecaptureToGraph(stream, GLOBAL, graph, lambda *a: 0, None)
    assert err == (cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED,)
    assert "cuStreamBeginRecaptureToGraph" in cricket_client.last_error_message()
    assert (
        check(cuda.cuStreamIsCapturing(stream))
        == cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
    )
    check(cuda.cuGraphDestroy(graph))


def test_the_runtime_form(rt: cricket_client.Connection) -> None:
    ok = cudart.cudaError_t.cudaSuccess
    err, stream = cudart.cudaStreamCreate()
    err, ptr = cudart.cudaMalloc(4 * N)
    mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    assert cudart.cudaStreamBeginCapture(stream, mode) == (ok,)
    assert cudart.cudaMemsetAsync(ptr, 1, 4 * N, stream) == (ok,)
    err, graph = cudart.cudaStreamEndCapture(stream)
    assert err == ok
    assert cudart.cudaStreamBeginRecaptureToGraph(stream, mode, graph, None) == (ok,)
    assert cudart.cudaMemsetAsync(ptr, 2, 4 * N, stream) == (ok,)
    err, same = cudart.cudaStreamEndCapture(stream)
    assert err == ok and int(same) == int(graph)
    err, exec_ = cudart.cudaGraphInstantiate(graph, 0)
    assert cudart.cudaGraphLaunch(exec_, stream) == (ok,)
    assert cudart.cudaStreamSynchronize(stream) == (ok,)
    back = np.zeros(4 * N, np.uint8)
    assert cudart.cudaMemcpy(back, ptr, 4 * N, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost) == (
        ok,
    )
    assert (back == 2).all()
    data = cudart.cudaGraphRecaptureCallbackData()
    data.callbackFunc = 0x1234
    assert cudart.cudaStreamBeginRecaptureToGraph(stream, mode, graph, data) == (
        cudart.cudaError_t.cudaErrorNotSupported,
    )
