"""Graph memory nodes: cuGraphAddMemAllocNode returns the allocation's address in the caller's
params (as cuda-python does), nodes between the alloc and free node use it, the graph memory
attributes count it once an exec holds it, and the runtime and polymorphic forms agree."""

from __future__ import annotations

import numpy as np
import pytest
from behaviour_helpers import SUCCESS, check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 4096
ATTR = cuda.CUgraphMem_attribute
RT_SUCCESS = cudart.cudaError_t.cudaSuccess


def alloc_params(size: int) -> cuda.CUDA_MEM_ALLOC_NODE_PARAMS:
    params = cuda.CUDA_MEM_ALLOC_NODE_PARAMS()
    params.poolProps.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    params.poolProps.location.id = 0
    params.poolProps.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    params.bytesize = size
    return params


def fill_and_copy(graph: object, dptr: int, after: list[object], out: int) -> object:
    """memset the allocation to 7 (bytes), copy it to `out`; the copy node."""
    ctx = check(cuda.cuCtxGetCurrent())
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst, ms.value, ms.elementSize, ms.width, ms.height = dptr, 7, 1, N, 1
    fill = check(cuda.cuGraphAddMemsetNode(graph, after, len(after), ms, ctx))
    cp = cuda.CUDA_MEMCPY3D()
    cp.srcMemoryType = cp.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
    cp.srcDevice, cp.dstDevice = dptr, out
    cp.WidthInBytes, cp.Height, cp.Depth = N, 1, 1
    return check(cuda.cuGraphAddMemcpyNode(graph, [fill], 1, cp, ctx))


def test_alloc_node_address_is_returned_and_used_between_alloc_and_free(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    out = check(cuda.cuMemAlloc(N))
    check(cuda.cuMemsetD8(out, 0, N))
    graph = check(cuda.cuGraphCreate(0))
    params = alloc_params(N)
    alloc = check(cuda.cuGraphAddMemAllocNode(graph, None, 0, params))
    assert int(params.dptr) != 0  # written back into the caller's params
    copy = fill_and_copy(graph, int(params.dptr), [alloc], out)
    free = check(cuda.cuGraphAddMemFreeNode(graph, [copy], 1, params.dptr))
    assert check(cuda.cuGraphNodeGetType(alloc)) == cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEM_ALLOC
    assert check(cuda.cuGraphNodeGetType(free)) == cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEM_FREE
    back = check(cuda.cuGraphMemAllocNodeGetParams(alloc))
    assert (int(back.dptr), int(back.bytesize), int(back.poolProps.location.id)) == (
        int(params.dptr), N, 0,
    )  # fmt: skip
    assert int(check(cuda.cuGraphMemFreeNodeGetParams(free))) == int(params.dptr)

    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    host = np.zeros(N, dtype=np.uint8)
    check(cuda.cuMemcpyDtoH(host, out, N))
    assert np.all(host == 7)

    used = int(check(cuda.cuDeviceGetGraphMemAttribute(0, ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)))
    high = int(check(cuda.cuDeviceGetGraphMemAttribute(0, ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)))
    reserved = int(check(cuda.cuDeviceGetGraphMemAttribute(0, ATTR.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)))
    assert used >= N and high == used and reserved == used
    check(cuda.cuDeviceSetGraphMemAttribute(0, ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, cuda.cuuint64_t(0)))
    assert int(check(cuda.cuDeviceGetGraphMemAttribute(0, ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH))) == 0
    (err,) = cuda.cuDeviceSetGraphMemAttribute(0, ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, cuda.cuuint64_t(0))
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuDeviceGraphMemTrim(0))

    # CUDA's rules for graphs with memory nodes: no clone, one exec at a time
    err, _ = cuda.cuGraphClone(graph)
    assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED
    err, _ = cuda.cuGraphInstantiate(graph, 0)
    assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    used = int(check(cuda.cuDeviceGetGraphMemAttribute(0, ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)))
    assert used == 0
    check(cuda.cuStreamDestroy(stream))


def test_a_free_node_needs_the_address_of_an_alloc_node(session: cricket_client.Connection) -> None:
    graph = check(cuda.cuGraphCreate(0))
    plain = check(cuda.cuMemAlloc(N))
    err, node = cuda.cuGraphAddMemFreeNode(graph, None, 0, plain)
    assert (err, node) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    bad = alloc_params(N)
    bad.poolProps.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_INVALID
    err, node = cuda.cuGraphAddMemAllocNode(graph, None, 0, bad)
    assert (err, node) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    check(cuda.cuGraphDestroy(graph))


def test_polymorphic_add_node_writes_the_address_back(session: cricket_client.Connection) -> None:
    graph = check(cuda.cuGraphCreate(0))
    params = cuda.CUgraphNodeParams()
    params.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEM_ALLOC
    params.alloc = alloc_params(N)
    alloc = check(cuda.cuGraphAddNode(graph, None, None, 0, params))
    assert int(params.alloc.dptr) != 0
    free = cuda.CUgraphNodeParams()
    free.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEM_FREE
    free.free.dptr = params.alloc.dptr
    check(cuda.cuGraphAddNode(graph, [alloc], None, 1, free))
    assert check(cuda.cuGraphGetNodes(graph))[1] == 2
    check(cuda.cuGraphDestroy(graph))


def test_captured_stream_ordered_allocation_becomes_memory_nodes(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    out = check(cuda.cuMemAlloc(N))
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    ptr = check(cuda.cuMemAllocAsync(N, stream))
    check(cuda.cuMemsetD8Async(ptr, 9, N, stream))
    check(cuda.cuMemcpyDtoDAsync(out, ptr, N, stream))
    check(cuda.cuMemFreeAsync(ptr, stream))
    graph = check(cuda.cuStreamEndCapture(stream))
    nodes, count = check(cuda.cuGraphGetNodes(graph, 4))
    types = [check(cuda.cuGraphNodeGetType(n)) for n in nodes[:count]]
    T = cuda.CUgraphNodeType
    assert types == [T.CU_GRAPH_NODE_TYPE_MEM_ALLOC, T.CU_GRAPH_NODE_TYPE_MEMSET,
                     T.CU_GRAPH_NODE_TYPE_MEMCPY, T.CU_GRAPH_NODE_TYPE_MEM_FREE]  # fmt: skip
    assert int(check(cuda.cuGraphMemAllocNodeGetParams(nodes[0])).dptr) == int(ptr)
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    host = np.zeros(N, dtype=np.uint8)
    check(cuda.cuMemcpyDtoH(host, out, N))
    assert np.all(host == 9)


def test_runtime_memory_nodes(session: cricket_client.Connection) -> None:
    err, graph = cudart.cudaGraphCreate(0)
    assert err == RT_SUCCESS
    params = cudart.cudaMemAllocNodeParams()
    params.poolProps.location.type = cudart.cudaMemLocationType.cudaMemLocationTypeDevice
    params.poolProps.location.id = 0
    params.poolProps.allocType = cudart.cudaMemAllocationType.cudaMemAllocationTypePinned
    params.bytesize = N
    err, alloc = cudart.cudaGraphAddMemAllocNode(graph, None, 0, params)
    assert err == RT_SUCCESS and params.dptr != 0
    err, free = cudart.cudaGraphAddMemFreeNode(graph, [alloc], 1, params.dptr)
    assert err == RT_SUCCESS
    err, back = cudart.cudaGraphMemAllocNodeGetParams(alloc)
    assert err == RT_SUCCESS and (back.dptr, back.bytesize) == (params.dptr, N)
    err, dptr = cudart.cudaGraphMemFreeNodeGetParams(free)
    assert err == RT_SUCCESS and int(dptr) == params.dptr
    err, exec_ = cudart.cudaGraphInstantiate(graph, 0)
    assert err == RT_SUCCESS
    assert cudart.cudaGraphLaunch(exec_, 0)[0] == RT_SUCCESS
    assert cudart.cudaDeviceSynchronize()[0] == RT_SUCCESS
    attr = cudart.cudaGraphMemAttributeType
    err, used = cudart.cudaDeviceGetGraphMemAttribute(0, attr.cudaGraphMemAttrUsedMemCurrent)
    assert err == RT_SUCCESS and int(used) >= N
    (err,) = cudart.cudaDeviceSetGraphMemAttribute(0, attr.cudaGraphMemAttrReservedMemHigh, 0)
    assert err == RT_SUCCESS
    assert cudart.cudaDeviceGraphMemTrim(0)[0] == RT_SUCCESS
    assert SUCCESS == cuda.CUresult.CUDA_SUCCESS


@pytest.mark.parametrize("size", [1, 3 << 20])
def test_graphmem_attributes_count_whole_granules(
    session: cricket_client.Connection, size: int
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    graph = check(cuda.cuGraphCreate(0))
    params = alloc_params(size)
    alloc = check(cuda.cuGraphAddMemAllocNode(graph, None, 0, params))
    check(cuda.cuGraphAddMemFreeNode(graph, [alloc], 1, params.dptr))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    values = [
        int(check(cuda.cuDeviceGetGraphMemAttribute(0, a)))
        for a in (ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, ATTR.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
                  ATTR.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, ATTR.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
    ]  # fmt: skip
    assert values[0] >= size and len(set(values)) == 1  # as cuda-python's test_cuda_graphMem_attr
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuStreamDestroy(stream))


def test_runtime_add_node_alloc_and_free_arms(session: cricket_client.Connection) -> None:
    err, graph = cudart.cudaGraphCreate(0)
    assert err == RT_SUCCESS
    params = cudart.cudaGraphNodeParams()
    params.type = cudart.cudaGraphNodeType.cudaGraphNodeTypeMemAlloc
    params.alloc.poolProps.location.type = cudart.cudaMemLocationType.cudaMemLocationTypeDevice
    params.alloc.poolProps.allocType = cudart.cudaMemAllocationType.cudaMemAllocationTypePinned
    params.alloc.bytesize = N
    err, alloc = cudart.cudaGraphAddNode(graph, None, None, 0, params)
    assert err == RT_SUCCESS and params.alloc.dptr != 0
    free = cudart.cudaGraphNodeParams()
    free.type = cudart.cudaGraphNodeType.cudaGraphNodeTypeMemFree
    free.free.dptr = params.alloc.dptr
    err, node = cudart.cudaGraphAddNode(graph, [alloc], None, 1, free)
    assert err == RT_SUCCESS
    err, dptr = cudart.cudaGraphMemFreeNodeGetParams(node)
    assert (err, int(dptr)) == (RT_SUCCESS, params.alloc.dptr)
