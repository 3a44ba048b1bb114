"""CUDA graphs: a step captured from a stream once and launched many times, and the same work
built node by node (after NVIDIA's simpleCudaGraphs).

The step is a small decoding-style loop body: copy this iteration's input from page-locked
host memory (cudaMallocHost), reset the state, run `saxpy` twice on the device, copy the result
back to host memory. Stream capture records it into a graph (cudaStreamBeginCapture ... cudaStreamEndCapture); every
launch of the instantiated graph reads the host input as it is at that launch. Then a graph
with memset, kernel and memcpy nodes and explicit dependencies does the same with the driver
API (cuGraphAddMemsetNode, cuGraphAddKernelNode, cuGraphAddMemcpyNode).
"""

from __future__ import annotations

import ctypes
import sys
import time

import numpy as np
from common import check, compile_cubin, device_arch, load_kernel
from cuda.bindings import driver, runtime

SOURCE = """
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

N = 1 << 16
THREADS = 256
ITERATIONS = 50


def kernel_args(a: float, x: int, y: int) -> tuple[object, int]:
    """A saxpy argument array (kept alive by the caller) and its address."""
    args = [
        np.array([a], dtype=np.float32),
        np.array([x], dtype=np.uint64),
        np.array([y], dtype=np.uint64),
        np.array([N], dtype=np.int32),
    ]
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    return (args, params), params.ctypes.data


def pinned(count: int) -> tuple[int, np.ndarray]:
    """Page-locked host memory (cudaMallocHost) and a float32 array over it."""
    address = check(runtime.cudaMallocHost(count * 4))
    return address, np.ctypeslib.as_array((ctypes.c_float * count).from_address(address))


def captured(kernel: object, d_x: int, d_y: int) -> bool:
    in_addr, h_in = pinned(N)
    out_addr, h_out = pinned(N)
    h_in[:] = 0
    h_out[:] = 0
    stream = check(runtime.cudaStreamCreate())
    keep, params = kernel_args(2.0, d_x, d_y)
    check(runtime.cudaStreamBeginCapture(
        stream, runtime.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    ))
    check(runtime.cudaMemcpyAsync(
        d_x, h_in.ctypes.data, h_in.nbytes, runtime.cudaMemcpyKind.cudaMemcpyHostToDevice, stream
    ))
    check(runtime.cudaMemsetAsync(d_y, 0, h_in.nbytes, stream))
    for _ in range(2):
        check(driver.cuLaunchKernel(kernel, N // THREADS, 1, 1, THREADS, 1, 1, 0, stream, params, 0))
    check(runtime.cudaMemcpyAsync(
        h_out.ctypes.data, d_y, h_out.nbytes, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream
    ))
    graph = check(runtime.cudaStreamEndCapture(stream))
    nodes, count = check(runtime.cudaGraphGetNodes(graph))
    print(f"captured graph: {count} nodes")
    exec_ = check(runtime.cudaGraphInstantiate(graph, 0))
    ok = True
    start = time.perf_counter()
    for step in range(ITERATIONS):
        h_in[:] = step
        check(runtime.cudaGraphLaunch(exec_, stream))
        check(runtime.cudaStreamSynchronize(stream))
        ok &= bool(np.all(h_out == np.float32(4 * step)))
    elapsed = time.perf_counter() - start
    print(f"{ITERATIONS} launches: {elapsed * 1e6 / ITERATIONS:.1f} us each", file=sys.stderr)
    print(f"every launch saw its own host input: {ok}")
    check(runtime.cudaGraphExecDestroy(exec_))
    check(runtime.cudaGraphDestroy(graph))
    check(runtime.cudaStreamDestroy(stream))
    del keep, h_in, h_out
    for address in (in_addr, out_addr):
        check(runtime.cudaFreeHost(address))
    return ok


def explicit(kernel: object, d_x: int, d_y: int) -> bool:
    x = np.arange(N, dtype=np.float32)
    out_addr, out = pinned(N)
    out[:] = 0
    check(runtime.cudaMemcpy(d_x, x.ctypes.data, x.nbytes, runtime.cudaMemcpyKind.cudaMemcpyHostToDevice))
    ctx = check(driver.cuCtxGetCurrent())
    graph = check(driver.cuGraphCreate(0))

    memset = driver.CUDA_MEMSET_NODE_PARAMS()
    memset.dst = driver.CUdeviceptr(d_y)
    memset.value = int(np.float32(1.0).view(np.uint32))
    memset.elementSize = 4
    memset.width = N
    memset.height = 1
    memset_node = check(driver.cuGraphAddMemsetNode(graph, None, 0, memset, ctx))

    keep, params = kernel_args(0.5, d_x, d_y)
    node_params = driver.CUDA_KERNEL_NODE_PARAMS()
    node_params.func = kernel
    node_params.gridDimX, node_params.gridDimY, node_params.gridDimZ = N // THREADS, 1, 1
    node_params.blockDimX, node_params.blockDimY, node_params.blockDimZ = THREADS, 1, 1
    node_params.sharedMemBytes = 0
    node_params.kernelParams = params
    node_params.extra = 0
    kernel_node = check(driver.cuGraphAddKernelNode(graph, [memset_node], 1, node_params))

    copy = driver.CUDA_MEMCPY3D()
    copy.srcMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.srcDevice = driver.CUdeviceptr(d_y)
    copy.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_HOST
    copy.dstHost = out.ctypes.data
    copy.WidthInBytes = out.nbytes
    copy.Height = 1
    copy.Depth = 1
    check(driver.cuGraphAddMemcpyNode(graph, [kernel_node], 1, copy, ctx))

    _, _, _, edges = check(driver.cuGraphGetEdges(graph))
    _, roots = check(driver.cuGraphGetRootNodes(graph))
    print(f"explicit graph: {edges} edges, {roots} root node")
    exec_ = check(driver.cuGraphInstantiate(graph, 0))
    check(driver.cuGraphLaunch(exec_, 0))
    check(driver.cuCtxSynchronize())
    ok = bool(np.array_equal(out, np.float32(1.0) + np.float32(0.5) * x))
    print(f"y = 1 + 0.5 x on every element: {ok}")
    check(driver.cuGraphExecDestroy(exec_))
    check(driver.cuGraphDestroy(graph))
    del keep, out
    check(runtime.cudaFreeHost(out_addr))
    return ok


def main() -> int:
    print(f"CUDA graphs: {N} floats, {ITERATIONS} launches of a captured step")
    check(runtime.cudaSetDevice(0))
    module, kernel = load_kernel(compile_cubin(SOURCE, "graphs.cu", device_arch()), "saxpy")
    d_x = int(check(runtime.cudaMalloc(N * 4)))
    d_y = int(check(runtime.cudaMalloc(N * 4)))
    ok = captured(kernel, d_x, d_y)
    ok &= explicit(kernel, d_x, d_y)
    for p in (d_x, d_y):
        check(runtime.cudaFree(p))
    check(driver.cuModuleUnload(module))
    print("Test PASSED" if ok else "Test FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
