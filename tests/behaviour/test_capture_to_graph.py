"""Capture into the caller's graph (cuStreamBeginCaptureToGraph) and the dependencies of a
capture's next work (cuStreamUpdateCaptureDependencies), driver and runtime forms; and
cuCtxResetPersistingL2Cache."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 1024
BLOCK = 256
ERR = cuda.CUresult
GLOBAL = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
ADD = cuda.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_ADD_CAPTURE_DEPENDENCIES
SET = cuda.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES


@pytest.fixture
def saxpy(kernels: Any) -> Any:
    return check(cuda.cuModuleGetFunction(kernels, b"saxpy"))


def launch(saxpy: Any, stream: Any, a: float, dx: Any, dy: Any) -> None:
    args = ((a, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(saxpy, N // BLOCK, 1, 1, BLOCK, 1, 1, 0, stream, args, 0))


def deps_of(node: Any) -> set[int]:
    deps, _, n = check(cuda.cuGraphNodeGetDependencies(node, 8))
    return {int(d) for d in deps[:n]}


def memset_params(dst: Any, value: float) -> Any:
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst = dst
    ms.value = int(np.float32(value).view(np.uint32))
    ms.elementSize, ms.width, ms.height = 4, N, 1
    return ms


def test_capture_into_a_graph_after_its_own_node(session: cricket_client.Connection, saxpy: Any) -> None:
    x = np.arange(N, dtype=np.float32)
    dx, dy = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    check(cuda.cuMemcpyHtoD(dx, x, x.nbytes))
    graph = check(cuda.cuGraphCreate(0))
    fill = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(dy, 2.0), check(cuda.cuCtxGetCurrent())))
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCaptureToGraph(stream, graph, [fill], None, 1, GLOBAL))
    status, _, captured_into, deps, _, _ = check(cuda.cuStreamGetCaptureInfo(stream))
    assert int(captured_into) == int(graph) and [int(d) for d in deps] == [int(fill)]
    launch(saxpy, stream, 0.5, dx, dy)
    assert int(check(cuda.cuStreamEndCapture(stream))) == int(graph)  # the caller's graph
    nodes, count = check(cuda.cuGraphGetNodes(graph, 4))
    assert count == 2
    kernel = next(n for n in nodes[:count] if int(n) != int(fill))
    assert deps_of(kernel) == {int(fill)}
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    y = np.empty(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(y, dy, y.nbytes))
    assert np.array_equal(y, 2.0 + np.float32(0.5) * x)
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuStreamDestroy(stream))
    for p in (dx, dy):
        check(cuda.cuMemFree(p))


def test_update_capture_dependencies_add_and_set(session: cricket_client.Connection, saxpy: Any) -> None:
    dx, dy = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCapture(stream, GLOBAL))
    launch(saxpy, stream, 1.0, dx, dy)
    _, _, graph, (first,), _, _ = check(cuda.cuStreamGetCaptureInfo(stream))
    extra = check(cuda.cuGraphAddEmptyNode(graph, None, 0))  # a node the program adds itself
    check(cuda.cuStreamUpdateCaptureDependencies(stream, [extra], None, 1, ADD))
    launch(saxpy, stream, 1.0, dx, dy)
    _, _, _, (second,), _, _ = check(cuda.cuStreamGetCaptureInfo(stream))
    assert deps_of(second) == {int(first), int(extra)}
    check(cuda.cuStreamUpdateCaptureDependencies(stream, [first], None, 1, SET))
    launch(saxpy, stream, 1.0, dx, dy)
    _, _, _, (third,), _, _ = check(cuda.cuStreamGetCaptureInfo(stream))
    assert deps_of(third) == {int(first)}
    other = check(cuda.cuGraphCreate(0))
    stranger = check(cuda.cuGraphAddEmptyNode(other, None, 0))
    assert cuda.cuStreamUpdateCaptureDependencies(stream, [stranger], None, 1, ADD) == (ERR.CUDA_ERROR_INVALID_VALUE,)
    captured = check(cuda.cuStreamEndCapture(stream))
    assert check(cuda.cuGraphGetNodes(captured))[1] == 4
    assert cuda.cuStreamUpdateCaptureDependencies(stream, [first], None, 1, ADD) == (ERR.CUDA_ERROR_ILLEGAL_STATE,)
    for g in (captured, other):
        check(cuda.cuGraphDestroy(g))
    check(cuda.cuStreamDestroy(stream))
    for p in (dx, dy):
        check(cuda.cuMemFree(p))


def test_edge_data_other_than_default_edges_is_refused_naming_the_call(session: cricket_client.Connection) -> None:
    graph = check(cuda.cuGraphCreate(0))
    node = check(cuda.cuGraphAddEmptyNode(graph, None, 0))
    stream = check(cuda.cuStreamCreate(0))
    edge = cuda.CUgraphEdgeData()
    edge.type = 1  # CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC
    assert cuda.cuStreamBeginCaptureToGraph(stream, graph, [node], [edge], 1, GLOBAL) == (
        ERR.CUDA_ERROR_NOT_SUPPORTED,
    )
    assert "cuStreamBeginCaptureToGraph: edge data" in cricket_client.last_error_message()
    assert check(cuda.cuStreamIsCapturing(stream)) == cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuStreamDestroy(stream))


def test_runtime_forms(rt: cricket_client.Connection) -> None:
    err, graph = cudart.cudaGraphCreate(0)
    assert err == cudart.cudaError_t.cudaSuccess
    err, first = cudart.cudaGraphAddEmptyNode(graph, None, 0)
    err, stream = cudart.cudaStreamCreate()
    mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    assert cudart.cudaStreamBeginCaptureToGraph(stream, graph, [first], None, 1, mode) == (
        cudart.cudaError_t.cudaSuccess,
    )
    err, second = cudart.cudaGraphAddEmptyNode(graph, None, 0)
    flags = cudart.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies
    assert cudart.cudaStreamUpdateCaptureDependencies(stream, [second], None, 1, flags) == (
        cudart.cudaError_t.cudaSuccess,
    )
    err, _, _, _, deps, _, n = cudart.cudaStreamGetCaptureInfo(stream)
    assert n == 1 and int(deps[0]) == int(second)
    err, ended = cudart.cudaStreamEndCapture(stream)
    assert err == cudart.cudaError_t.cudaSuccess and int(ended) == int(graph)
    assert cudart.cudaCtxResetPersistingL2Cache() == (cudart.cudaError_t.cudaSuccess,)
    cudart.cudaGraphDestroy(graph)
    cudart.cudaStreamDestroy(stream)


def test_reset_persisting_l2_lines(session: cricket_client.Connection) -> None:
    assert cuda.cuCtxResetPersistingL2Cache() == (ERR.CUDA_SUCCESS,)
