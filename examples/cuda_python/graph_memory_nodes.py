"""Graph memory nodes: a graph that allocates its own scratch buffer, uses it and frees it
(after NVIDIA's graphMemoryNodes sample), built node by node and captured from
cudaMallocAsync/cudaFreeAsync.

cuGraphAddMemAllocNode returns the allocation's address in the node parameters; nodes ordered
between the alloc node and the free node may use it, and it stays the same at every launch.
The device's graph memory attributes tell how much memory graphs hold.
"""

from __future__ import annotations

import sys

import numpy as np
from common import check
from cuda.bindings import driver, runtime

N = 1 << 16
LAUNCHES = 3


def alloc_params(nbytes: int) -> driver.CUDA_MEM_ALLOC_NODE_PARAMS:
    params = driver.CUDA_MEM_ALLOC_NODE_PARAMS()
    params.poolProps.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    params.poolProps.location.id = 0
    params.poolProps.allocType = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    params.bytesize = nbytes
    return params


def explicit(d_out: int, stream: object) -> bool:
    ctx = check(driver.cuCtxGetCurrent())
    graph = check(driver.cuGraphCreate(0))
    params = alloc_params(N * 4)
    alloc = check(driver.cuGraphAddMemAllocNode(graph, None, 0, params))
    scratch = int(params.dptr)
    memset = driver.CUDA_MEMSET_NODE_PARAMS()
    memset.dst = params.dptr
    memset.value = 42
    memset.elementSize = 4
    memset.width = N
    memset.height = 1
    fill = check(driver.cuGraphAddMemsetNode(graph, [alloc], 1, memset, ctx))
    copy = driver.CUDA_MEMCPY3D()
    copy.srcMemoryType = copy.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.srcDevice = params.dptr
    copy.dstDevice = driver.CUdeviceptr(d_out)
    copy.WidthInBytes = N * 4
    copy.Height = 1
    copy.Depth = 1
    copied = check(driver.cuGraphAddMemcpyNode(graph, [fill], 1, copy, ctx))
    check(driver.cuGraphAddMemFreeNode(graph, [copied], 1, params.dptr))
    _, count = check(driver.cuGraphGetNodes(graph))
    print(f"explicit graph: {count} nodes (alloc, memset, memcpy, free)")

    exec_ = check(driver.cuGraphInstantiate(graph, 0))
    out = np.zeros(N, dtype=np.uint32)
    ok = True
    for _ in range(LAUNCHES):
        check(runtime.cudaMemset(d_out, 0, out.nbytes))
        check(driver.cuGraphLaunch(exec_, stream))
        check(driver.cuStreamSynchronize(stream))
        check(runtime.cudaMemcpy(out.ctypes.data, d_out, out.nbytes,
                                 runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost))
        ok &= bool(np.all(out == 42))
        ok &= int(check(driver.cuGraphMemAllocNodeGetParams(alloc)).dptr) == scratch
    print(f"{LAUNCHES} launches, the scratch buffer at one address, the result right: {ok}")

    used = int(check(driver.cuDeviceGetGraphMemAttribute(
        0, driver.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)))
    high = int(check(driver.cuDeviceGetGraphMemAttribute(
        0, driver.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)))
    held = used >= N * 4 and high >= used
    print(f"graph memory held after the launches covers the buffer: {held}")
    check(driver.cuDeviceSetGraphMemAttribute(
        0, driver.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, driver.cuuint64_t(0)))
    check(driver.cuGraphExecDestroy(exec_))
    check(driver.cuGraphDestroy(graph))
    check(driver.cuDeviceGraphMemTrim(0))
    return ok and held


def captured(d_out: int, stream: object) -> bool:
    check(runtime.cudaStreamBeginCapture(
        stream, runtime.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal))
    scratch = check(runtime.cudaMallocAsync(N * 4, stream))
    check(runtime.cudaMemsetAsync(scratch, 7, N * 4, stream))
    check(runtime.cudaMemcpyAsync(d_out, scratch, N * 4,
                                  runtime.cudaMemcpyKind.cudaMemcpyDeviceToDevice, stream))
    check(runtime.cudaFreeAsync(scratch, stream))
    graph = check(runtime.cudaStreamEndCapture(stream))
    _, count = check(runtime.cudaGraphGetNodes(graph))
    nodes, count = check(runtime.cudaGraphGetNodes(graph, count))
    kinds = [check(runtime.cudaGraphNodeGetType(n)).name for n in nodes]
    print(f"captured graph: {count} nodes: {', '.join(kinds)}")
    exec_ = check(runtime.cudaGraphInstantiate(graph, 0))
    check(runtime.cudaGraphLaunch(exec_, stream))
    check(runtime.cudaStreamSynchronize(stream))
    out = np.zeros(N * 4, dtype=np.uint8)
    check(runtime.cudaMemcpy(out.ctypes.data, d_out, out.nbytes,
                             runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost))
    ok = bool(np.all(out == 7))
    print(f"captured allocation used and freed in the graph: {ok}")
    check(runtime.cudaGraphExecDestroy(exec_))
    check(runtime.cudaGraphDestroy(graph))
    return ok


def main() -> int:
    print(f"Graph memory nodes: a scratch buffer of {N * 4} bytes owned by a graph")
    check(runtime.cudaSetDevice(0))
    d_out = check(runtime.cudaMalloc(N * 4))
    stream = check(runtime.cudaStreamCreate())
    ok = explicit(d_out, stream)
    ok &= captured(d_out, stream)
    check(runtime.cudaStreamDestroy(stream))
    check(runtime.cudaFree(d_out))
    print("Test PASSED" if ok else "Test FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
