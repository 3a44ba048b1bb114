"""CUDA graphs through cricket_client.runtime (cudaStreamBeginCapture, cudaGraphAdd*Node,
cudaGraphInstantiate, cudaGraphLaunch, ...) on a connection where no driver call ran first."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import KERNELS, ok

import cricket_client
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess
H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
N = 1024
BLOCK = 128


@pytest.fixture
def saxpy(rt: cricket_client.Connection) -> Any:
    cubin = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
    lib = ok(cudart.cudaLibraryLoadData(cubin, None, None, 0, None, None, 0))
    return ok(cudart.cudaLibraryGetKernel(lib, b"saxpy"))


def args(a: float, dx: Any, dy: Any) -> Any:
    return ((a, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))


def test_runtime_capture_and_relaunch(rt: cricket_client.Connection, saxpy: Any) -> None:
    host_in = np.zeros(N, dtype=np.float32)
    host_out = np.zeros(N, dtype=np.float32)
    dx = ok(cudart.cudaMalloc(host_in.nbytes))
    dy = ok(cudart.cudaMalloc(host_in.nbytes))
    stream = ok(cudart.cudaStreamCreate())
    ok(cudart.cudaStreamBeginCapture(stream, cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal))
    assert ok(cudart.cudaStreamIsCapturing(stream)) == (
        cudart.cudaStreamCaptureStatus.cudaStreamCaptureStatusActive
    )
    ok(cudart.cudaMemcpyAsync(dx, host_in, host_in.nbytes, H2D, stream))
    ok(cudart.cudaMemsetAsync(dy, 0, host_in.nbytes, stream))
    ok(cudart.cudaLaunchKernel(saxpy, N // BLOCK, BLOCK, args(2.0, dx, dy), 0, stream))
    ok(cudart.cudaMemcpyAsync(host_out, dy, host_out.nbytes, D2H, stream))
    graph = ok(cudart.cudaStreamEndCapture(stream))
    assert isinstance(graph, cudart.cudaGraph_t)
    nodes, count = ok(cudart.cudaGraphGetNodes(graph, 8))
    assert count == 4
    assert ok(cudart.cudaGraphNodeGetType(nodes[2])) == cudart.cudaGraphNodeType.cudaGraphNodeTypeKernel
    exec_ = ok(cudart.cudaGraphInstantiate(graph, 0))
    for value in (1.0, 3.0):
        host_in[:] = value
        ok(cudart.cudaGraphLaunch(exec_, stream))
        assert np.all(host_out == 2 * value)
    ok(cudart.cudaGraphExecDestroy(exec_))
    ok(cudart.cudaGraphDestroy(graph))


def test_runtime_explicit_graph(rt: cricket_client.Connection, saxpy: Any) -> None:
    x = np.arange(N, dtype=np.float32)
    out = np.zeros(N, dtype=np.float32)
    dx = ok(cudart.cudaMalloc(x.nbytes))
    dy = ok(cudart.cudaMalloc(x.nbytes))
    graph = ok(cudart.cudaGraphCreate(0))
    up = ok(cudart.cudaGraphAddMemcpyNode1D(graph, None, 0, dx, x.ctypes.data, x.nbytes, H2D))
    ms = cudart.cudaMemsetParams()
    ms.dst, ms.value, ms.elementSize, ms.width, ms.height = dy, 0, 4, N, 1
    zero = ok(cudart.cudaGraphAddMemsetNode(graph, None, 0, ms))
    kp = cudart.cudaKernelNodeParams()
    kp.func = saxpy
    kp.gridDim = cudart.dim3(x=N // BLOCK)
    kp.blockDim = cudart.dim3(x=BLOCK)
    kp.sharedMemBytes = 0
    kp.kernelParams = args(0.5, dx, dy)
    kp.extra = 0
    k = ok(cudart.cudaGraphAddKernelNode(graph, [up, zero], 2, kp))
    p = cudart.cudaMemcpy3DParms()
    p.srcPtr = cudart.make_cudaPitchedPtr(dy, x.nbytes, x.nbytes, 1)
    p.dstPtr = cudart.make_cudaPitchedPtr(out.ctypes.data, x.nbytes, x.nbytes, 1)
    p.extent = cudart.make_cudaExtent(x.nbytes, 1, 1)
    p.kind = D2H
    ok(cudart.cudaGraphAddMemcpyNode(graph, [k], 1, p))
    froms, tos, _, n = ok(cudart.cudaGraphGetEdges(graph, 3))
    assert n == 3 and all(t == k for t in tos[:2])
    exec_ = ok(cudart.cudaGraphInstantiateWithFlags(graph, 0))
    ok(cudart.cudaGraphLaunch(exec_, 0))
    assert np.array_equal(out, np.float32(0.5) * x)
    assert froms[0] in (up, zero)


def test_runtime_host_nodes_are_refused(rt: cricket_client.Connection) -> None:
    graph = ok(cudart.cudaGraphCreate(0))
    err, node = cudart.cudaGraphAddHostNode(graph, None, 0, cudart.cudaHostNodeParams())
    assert err == cudart.cudaError_t.cudaErrorNotSupported and node is None
    assert "cudaGraphAddHostNode" in cricket_client.last_error_message()
    err, = cudart.cudaLaunchHostFunc(0, None, None)
    assert err == cudart.cudaError_t.cudaErrorInvalidValue  # no function


def test_runtime_2d_memset_is_captured_and_device_sync_refused(rt: cricket_client.Connection) -> None:
    pitch, width, height = 512, 100, 4
    d = ok(cudart.cudaMalloc(pitch * height))
    ok(cudart.cudaMemset(d, 0, pitch * height))
    stream = ok(cudart.cudaStreamCreate())
    ok(cudart.cudaStreamBeginCapture(stream, cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal))
    ok(cudart.cudaMemset2DAsync(d, pitch, 7, width, height, stream))
    err, = cudart.cudaDeviceSynchronize()  # not while a global-mode capture is under way
    assert err == cudart.cudaError_t.cudaErrorStreamCaptureUnsupported
    err, _ = cudart.cudaStreamEndCapture(stream)
    assert err == cudart.cudaError_t.cudaErrorStreamCaptureInvalidated
    cudart.cudaGetLastError()
    ok(cudart.cudaStreamBeginCapture(stream, cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal))
    ok(cudart.cudaMemset2DAsync(d, pitch, 7, width, height, stream))
    graph = ok(cudart.cudaStreamEndCapture(stream))
    out = np.zeros(pitch * height, dtype=np.uint8)
    ok(cudart.cudaMemcpy(out.ctypes.data, d, out.nbytes, D2H))
    assert not out.any()  # captured, not run
    exec_ = ok(cudart.cudaGraphInstantiate(graph, 0))
    ok(cudart.cudaGraphLaunch(exec_, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    ok(cudart.cudaMemcpy(out.ctypes.data, d, out.nbytes, D2H))
    rows = out.reshape(height, pitch)
    assert np.all(rows[:, :width] == 7) and not rows[:, width:].any()
