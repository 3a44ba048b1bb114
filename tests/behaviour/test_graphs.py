"""CUDA graphs through cricket_client.driver: stream capture, explicit graphs, host memory in
memcpy nodes, dependencies, handle ownership, and host functions refused."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import SUCCESS, check, foreign_handle_message

import cricket_client
from cricket_client import driver as cuda

N = 4096
BLOCK = 256
GRID = (N + BLOCK - 1) // BLOCK
A = 0.5  # exact in float32, so repeated saxpy sums stay exact


def saxpy_args(dx: Any, dy: Any, a: float = A) -> Any:
    return ((a, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))


def device_array(host: np.ndarray) -> Any:
    ptr = check(cuda.cuMemAlloc(host.nbytes))
    check(cuda.cuMemcpyHtoD(ptr, host, host.nbytes))
    return ptr


def read(ptr: Any, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    check(cuda.cuMemcpyDtoH(out, ptr, out.nbytes))
    return out


def kernel_node(func: Any, args: Any) -> Any:
    p = cuda.CUDA_KERNEL_NODE_PARAMS()
    p.func = func
    p.gridDimX, p.gridDimY, p.gridDimZ = GRID, 1, 1
    p.blockDimX, p.blockDimY, p.blockDimZ = BLOCK, 1, 1
    p.sharedMemBytes = 0
    p.kernelParams = args
    p.extra = 0
    return p


def copy_1d(dst: Any, src: Any, nbytes: int, *, dst_host: bool = False, src_host: bool = False) -> Any:
    p = cuda.CUDA_MEMCPY3D()
    p.srcMemoryType = (
        cuda.CUmemorytype.CU_MEMORYTYPE_HOST if src_host else cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
    )
    p.dstMemoryType = (
        cuda.CUmemorytype.CU_MEMORYTYPE_HOST if dst_host else cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
    )
    if src_host:
        p.srcHost = src
    else:
        p.srcDevice = src
    if dst_host:
        p.dstHost = dst
    else:
        p.dstDevice = dst
    p.WidthInBytes = nbytes
    p.Height = 1
    p.Depth = 1
    return p


@pytest.fixture
def saxpy(kernels: Any) -> Any:
    return check(cuda.cuModuleGetFunction(kernels, b"saxpy"))


def test_captured_sequence_launched_many_times(session: cricket_client.Connection, saxpy: Any) -> None:
    x = np.arange(N, dtype=np.float32)
    y0 = np.ones(N, dtype=np.float32)
    dx, dy = device_array(x), device_array(y0)
    stream = check(cuda.cuStreamCreate(0))
    assert check(cuda.cuStreamIsCapturing(stream)) == (
        cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
    )
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    assert check(cuda.cuStreamIsCapturing(stream)) == (
        cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE
    )
    for _ in range(3):
        check(cuda.cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, stream, saxpy_args(dx, dy), 0))
    status, _, graph, deps, _, ndeps = check(cuda.cuStreamGetCaptureInfo(stream))
    assert status == cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE
    assert ndeps == 1 and len(deps) == 1
    graph = check(cuda.cuStreamEndCapture(stream))
    # captured, not run
    assert np.array_equal(read(dy, y0), y0)
    _, count = check(cuda.cuGraphGetNodes(graph))
    assert count == 3
    nodes, _ = check(cuda.cuGraphGetNodes(graph, count))
    assert [check(cuda.cuGraphNodeGetType(n)) for n in nodes] == [
        cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL
    ] * 3
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    launches = 20
    for _ in range(launches):
        check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.array_equal(read(dy, y0), y0 + np.float32(3 * launches * A) * x)
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuStreamDestroy(stream))


def test_explicit_graph_with_memset_kernel_and_memcpy_nodes(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    x = np.arange(N, dtype=np.float32)
    dx = device_array(x)
    dy = check(cuda.cuMemAlloc(x.nbytes))
    dz = check(cuda.cuMemAlloc(x.nbytes))
    graph = check(cuda.cuGraphCreate(0))
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst = dy
    ms.value = int(np.float32(2.0).view(np.uint32))
    ms.elementSize = 4
    ms.width = N
    ms.height = 1
    ctx = check(cuda.cuCtxGetCurrent())
    set_node = check(cuda.cuGraphAddMemsetNode(graph, None, 0, ms, ctx))
    k_node = check(cuda.cuGraphAddKernelNode(graph, [set_node], 1, kernel_node(saxpy, saxpy_args(dx, dy))))
    c_node = check(cuda.cuGraphAddMemcpyNode(graph, [k_node], 1, copy_1d(dz, dy, x.nbytes), ctx))
    roots, nroots = check(cuda.cuGraphGetRootNodes(graph, 4))
    assert nroots == 1 and roots[0] == set_node and int(roots[1]) == 0
    froms, tos, _, nedges = check(cuda.cuGraphGetEdges(graph, 2))
    assert nedges == 2
    assert list(zip(froms, tos, strict=True)) == [(set_node, k_node), (k_node, c_node)]
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, 0))
    check(cuda.cuCtxSynchronize())
    assert np.array_equal(read(dz, x), np.float32(2.0) + np.float32(A) * x)


def test_host_memory_nodes_see_the_current_host_contents(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    """An HtoD node copies the host buffer as it is at each launch; a DtoH node's data is in
    host memory when cuGraphLaunch (then synchronous) returns."""
    host_in = np.zeros(N, dtype=np.float32)
    host_out = np.zeros(N, dtype=np.float32)
    dx = check(cuda.cuMemAlloc(host_in.nbytes))
    dy = check(cuda.cuMemAlloc(host_in.nbytes))
    ctx = check(cuda.cuCtxGetCurrent())
    graph = check(cuda.cuGraphCreate(0))
    up = check(cuda.cuGraphAddMemcpyNode(
        graph, None, 0, copy_1d(dx, host_in.ctypes.data, host_in.nbytes, src_host=True), ctx
    ))
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst, ms.value, ms.elementSize, ms.width, ms.height = dy, 0, 4, N, 1
    zero = check(cuda.cuGraphAddMemsetNode(graph, None, 0, ms, ctx))
    k = check(cuda.cuGraphAddKernelNode(graph, [up, zero], 2, kernel_node(saxpy, saxpy_args(dx, dy, 1.0))))
    check(cuda.cuGraphAddMemcpyNode(
        graph, [k], 1, copy_1d(host_out, dy, host_out.nbytes, dst_host=True), ctx
    ))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    stream = check(cuda.cuStreamCreate(0))
    for step in range(1, 4):
        host_in[:] = np.arange(N, dtype=np.float32) * step
        check(cuda.cuGraphLaunch(exec_, stream))
        assert np.array_equal(host_out, host_in), f"launch {step}"


def test_captured_host_copies_move_data_at_every_launch(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    host_in = np.zeros(N, dtype=np.float32)
    host_out = np.full(N, -1, dtype=np.float32)
    dx = check(cuda.cuMemAlloc(host_in.nbytes))
    dy = check(cuda.cuMemAlloc(host_in.nbytes))
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
    check(cuda.cuMemcpyHtoDAsync(dx, host_in, host_in.nbytes, stream))
    check(cuda.cuMemsetD32Async(dy, int(np.float32(1.0).view(np.uint32)), N, stream))
    check(cuda.cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, stream, saxpy_args(dx, dy, 2.0), 0))
    check(cuda.cuMemcpyDtoHAsync(host_out, dy, host_out.nbytes, stream))
    graph = check(cuda.cuStreamEndCapture(stream))
    assert np.all(host_out == -1)  # captured, not run
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    for step in (1, 5, 7):
        host_in[:] = step
        check(cuda.cuGraphLaunch(exec_, stream))
        assert np.all(host_out == np.float32(1 + 2 * step)), f"host value {step}"


def test_dependencies_added_later_order_the_launch(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    """A copy node added first but made to depend on a kernel node runs after it."""
    x = np.arange(N, dtype=np.float32)
    dx, dy = device_array(x), device_array(np.zeros(N, dtype=np.float32))
    dz = device_array(np.zeros(N, dtype=np.float32))
    ctx = check(cuda.cuCtxGetCurrent())
    graph = check(cuda.cuGraphCreate(0))
    copy = check(cuda.cuGraphAddMemcpyNode(graph, None, 0, copy_1d(dz, dy, x.nbytes), ctx))
    kernel = check(cuda.cuGraphAddKernelNode(graph, None, 0, kernel_node(saxpy, saxpy_args(dx, dy))))
    check(cuda.cuGraphAddDependencies(graph, [kernel], [copy], None, 1))
    deps, _, ndeps = check(cuda.cuGraphNodeGetDependencies(copy, 1))
    assert ndeps == 1 and deps == [kernel]
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, 0))
    check(cuda.cuCtxSynchronize())
    assert np.array_equal(read(dz, x), np.float32(A) * x)


def test_child_graph_clone_and_event_nodes(session: cricket_client.Connection, saxpy: Any) -> None:
    x = np.ones(N, dtype=np.float32)
    dx, dy = device_array(x), device_array(np.zeros(N, dtype=np.float32))
    child = check(cuda.cuGraphCreate(0))
    check(cuda.cuGraphAddKernelNode(child, None, 0, kernel_node(saxpy, saxpy_args(dx, dy, 1.0))))
    parent = check(cuda.cuGraphCreate(0))
    event = check(cuda.cuEventCreate(0))
    first = check(cuda.cuGraphAddChildGraphNode(parent, None, 0, child))
    check(cuda.cuGraphDestroy(child))  # the node holds a clone of it, as CUDA's does
    second = check(cuda.cuGraphAddChildGraphNode(parent, [first], 1, check(cuda.cuGraphClone(parent))))
    check(cuda.cuGraphAddEventRecordNode(parent, [second], 1, event))
    clone = check(cuda.cuGraphClone(parent))
    _, count = check(cuda.cuGraphGetNodes(clone))
    assert count == 3
    exec_ = check(cuda.cuGraphInstantiate(clone, 0))
    check(cuda.cuGraphLaunch(exec_, 0))
    check(cuda.cuEventSynchronize(event))
    assert np.array_equal(read(dy, x), np.full(N, 2, dtype=np.float32))


def test_exec_kernel_node_update(session: cricket_client.Connection, saxpy: Any) -> None:
    x = np.ones(N, dtype=np.float32)
    dx, dy = device_array(x), device_array(np.zeros(N, dtype=np.float32))
    graph = check(cuda.cuGraphCreate(0))
    node = check(cuda.cuGraphAddKernelNode(graph, None, 0, kernel_node(saxpy, saxpy_args(dx, dy, 1.0))))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphExecKernelNodeSetParams(exec_, node, kernel_node(saxpy, saxpy_args(dx, dy, 4.0))))
    check(cuda.cuGraphLaunch(exec_, 0))
    check(cuda.cuCtxSynchronize())
    assert np.array_equal(read(dy, x), np.full(N, 4, dtype=np.float32))
    # the graph itself is unchanged; cuGraphExecUpdate brings a changed graph in
    check(cuda.cuGraphKernelNodeSetParams(node, kernel_node(saxpy, saxpy_args(dx, dy, 10.0))))
    check(cuda.cuGraphExecUpdate(exec_, graph))
    check(cuda.cuGraphLaunch(exec_, 0))
    check(cuda.cuCtxSynchronize())
    assert np.array_equal(read(dy, x), np.full(N, 14, dtype=np.float32))


def test_unknown_and_foreign_graph_handles_are_refused(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    invalid = cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    err, _ = cuda.cuGraphInstantiate(cuda.CUgraph(0x1234), 0)
    assert err == invalid
    graph = check(cuda.cuGraphCreate(0))
    node = check(cuda.cuGraphAddEmptyNode(graph, None, 0))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    with other_session.active():
        assert cuda.cuGraphInstantiate(graph, 0)[0] == invalid
        assert foreign_handle_message() in cricket_client.last_error_message()
        assert cuda.cuGraphAddEmptyNode(graph, None, 0)[0] == invalid
        assert cuda.cuGraphNodeGetType(node)[0] == invalid
        assert cuda.cuGraphDestroy(graph)[0] == invalid
        assert cuda.cuGraphExecDestroy(exec_)[0] == invalid
        mine = check(cuda.cuGraphCreate(0))
        # a node of another graph (of another session) as a dependency
        assert cuda.cuGraphAddEmptyNode(mine, [node], 1)[0] == invalid
        check(cuda.cuGraphLaunch(exec_, 0))  # pipelined: the error comes with the next sync
        assert cuda.cuCtxSynchronize()[0] == invalid
    check(cuda.cuGraphLaunch(exec_, 0))
    check(cuda.cuCtxSynchronize())


def test_host_nodes_are_refused_with_the_reason(
    session: cricket_client.Connection,
) -> None:
    graph = check(cuda.cuGraphCreate(0))
    params = cuda.CUDA_HOST_NODE_PARAMS()
    err, node = cuda.cuGraphAddHostNode(graph, None, 0, params)
    assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED and node is None
    message = cricket_client.last_error_message()
    assert "cuGraphAddHostNode" in message and "client" in message
    err, = cuda.cuLaunchHostFunc(0, None, None)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE  # no function


def test_capture_rules(session: cricket_client.Connection) -> None:
    mode = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
    assert cuda.cuStreamBeginCapture(0, mode)[0] == (
        cuda.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    )
    stream = check(cuda.cuStreamCreate(0))
    assert cuda.cuStreamEndCapture(stream)[0] != SUCCESS  # not capturing
    check(cuda.cuStreamBeginCapture(stream, mode))
    # a synchronization inside a capture fails and invalidates it
    assert cuda.cuStreamSynchronize(stream)[0] == (
        cuda.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    )
    assert cuda.cuStreamEndCapture(stream)[0] == cuda.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    assert check(cuda.cuStreamIsCapturing(stream)) == (
        cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
    )


def test_fork_and_join_through_events(session: cricket_client.Connection, saxpy: Any) -> None:
    x = np.ones(N, dtype=np.float32)
    dx, dy = device_array(x), device_array(np.zeros(N, dtype=np.float32))
    dz = device_array(np.zeros(N, dtype=np.float32))
    main, side = check(cuda.cuStreamCreate(0)), check(cuda.cuStreamCreate(0))
    fork, join = check(cuda.cuEventCreate(0)), check(cuda.cuEventCreate(0))
    check(cuda.cuStreamBeginCapture(main, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    check(cuda.cuEventRecord(fork, main))
    check(cuda.cuStreamWaitEvent(side, fork, 0))
    check(cuda.cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, side, saxpy_args(dx, dz, 3.0), 0))
    check(cuda.cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, main, saxpy_args(dx, dy, 1.0), 0))
    check(cuda.cuEventRecord(join, side))
    check(cuda.cuStreamWaitEvent(main, join, 0))
    check(cuda.cuMemcpyDtoDAsync(dy, dz, x.nbytes, main))  # after both kernels
    graph = check(cuda.cuStreamEndCapture(main))
    _, _, _, nedges = check(cuda.cuGraphGetEdges(graph))
    assert nedges == 2
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, main))
    check(cuda.cuStreamSynchronize(main))
    assert np.array_equal(read(dy, x), np.full(N, 3, dtype=np.float32))
