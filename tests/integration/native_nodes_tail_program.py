"""A `cuda.bindings.driver` program, unmodified, over the later driver functions the native
libcuda.so.1 exports: polymorphic graph nodes (cuGraphAddNode with CUgraphNodeParams: memset,
device copy, kernel, memory alloc and free, a conditional node whose body graph CUDA writes
into the caller's params), node and exec parameters set again, copy and alloc node parameters
read back, graph memory attributes, the long tail of context/stream/module queries, 2D memsets,
stream memory operations (one by one and in batches), peer 3D copies, enumerated functions and kernels, a library from a file, tensor maps, device resources and green contexts, and the primary context asked for by its pre-11.0 name. One line per
result, so that runs through the native library and through the Python-level module swap
compare equal.

    python native_nodes_tail_program.py CUBIN
"""

import ctypes
import sys

from cuda.bindings import driver as cuda


def check(result):
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cuda.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA error {err!r} at line {sys._getframe(1).f_lineno}")
    return values[0] if len(values) == 1 else values


def read(dptr, n):
    host = (ctypes.c_uint8 * n)()
    check(cuda.cuMemcpyDtoH(host, dptr, n))
    return list(host)


check(cuda.cuInit(0))
dev = check(cuda.cuDeviceGet(0))
ctx = check(cuda.cuDevicePrimaryCtxRetain(dev))
check(cuda.cuCtxSetCurrent(ctx))
with open(sys.argv[1], "rb") as f:
    module = check(cuda.cuModuleLoadData(f.read()))
fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
stream = check(cuda.cuStreamCreate(0))
a, b = check(cuda.cuMemAlloc(256)), check(cuda.cuMemAlloc(256))
check(cuda.cuMemsetD8(b, 9, 256))

# polymorphic nodes
graph = check(cuda.cuGraphCreate(0))
memset = cuda.CUgraphNodeParams()
memset.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMSET
memset.memset.dst, memset.memset.value, memset.memset.elementSize = a, 1, 1
memset.memset.width, memset.memset.height = 256, 1
set_node = check(cuda.cuGraphAddNode(graph, None, None, 0, memset))
copy = cuda.CUgraphNodeParams()
copy.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMCPY
p = copy.memcpy.copyParams
p.srcMemoryType = p.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
p.srcDevice, p.dstDevice, p.WidthInBytes, p.Height, p.Depth = b, a, 16, 1, 1
copy_node = check(cuda.cuGraphAddNode(graph, [set_node], None, 1, copy))
got = check(cuda.cuGraphMemcpyNodeGetParams(copy_node))
print("copy node params", int(got.srcDevice) == int(b), int(got.dstDevice) == int(a), got.WidthInBytes)
exe = check(cuda.cuGraphInstantiate(graph, 0))
check(cuda.cuGraphLaunch(exe, stream))
check(cuda.cuStreamSynchronize(stream))
print("after launch", read(a, 256)[14:18])
memset.memset.value = 5
check(cuda.cuGraphExecNodeSetParams(exe, set_node, memset))
p.WidthInBytes = 8
check(cuda.cuGraphNodeSetParams(copy_node, copy))
print("node params set", check(cuda.cuGraphMemcpyNodeGetParams(copy_node)).WidthInBytes)
check(cuda.cuGraphLaunch(exe, stream))
check(cuda.cuStreamSynchronize(stream))
print("exec params set", read(a, 256)[14:18])

# kernel node through CUgraphNodeParams
kernel = cuda.CUgraphNodeParams()
kernel.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL
k = kernel.kernel
k.func = fill
k.gridDimX = k.gridDimY = k.gridDimZ = 1
k.blockDimX, k.blockDimY, k.blockDimZ = 64, 1, 1
args = (ctypes.c_void_p * 3)()
out, value, count = ctypes.c_uint64(int(b)), ctypes.c_uint32(0x01020304), ctypes.c_uint32(64)
for i, arg in enumerate((out, value, count)):
    args[i] = ctypes.addressof(arg)
k.kernelParams = ctypes.addressof(args)
kgraph = check(cuda.cuGraphCreate(0))
check(cuda.cuGraphAddNode(kgraph, None, None, 0, kernel))
kexe = check(cuda.cuGraphInstantiate(kgraph, 0))
check(cuda.cuGraphLaunch(kexe, stream))
check(cuda.cuStreamSynchronize(stream))
print("kernel node", read(b, 8))

# graph memory nodes and attributes
mgraph = check(cuda.cuGraphCreate(0))
alloc = cuda.CUDA_MEM_ALLOC_NODE_PARAMS()
alloc.poolProps.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
alloc.poolProps.location.id = 0
alloc.poolProps.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
alloc.bytesize = 4096
alloc_node = check(cuda.cuGraphAddMemAllocNode(mgraph, None, 0, alloc))
print("alloc dptr written back", int(alloc.dptr) != 0)
back = check(cuda.cuGraphMemAllocNodeGetParams(alloc_node))
print("alloc params", int(back.dptr) == int(alloc.dptr), back.bytesize, int(back.poolProps.location.id))
free_node = check(cuda.cuGraphAddMemFreeNode(mgraph, [alloc_node], 1, alloc.dptr))
print("free params", int(check(cuda.cuGraphMemFreeNodeGetParams(free_node))) == int(alloc.dptr))
poly = cuda.CUgraphNodeParams()
poly.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEM_ALLOC
poly.alloc.poolProps.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
poly.alloc.poolProps.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
poly.alloc.bytesize = 4096
check(cuda.cuGraphAddNode(mgraph, None, None, 0, poly))
print("alloc.dptr written back", int(poly.alloc.dptr) != 0, int(poly.alloc.dptr) != int(alloc.dptr))
mexe = check(cuda.cuGraphInstantiate(mgraph, 0))
check(cuda.cuGraphLaunch(mexe, stream))
check(cuda.cuStreamSynchronize(stream))
used = check(cuda.cuDeviceGetGraphMemAttribute(dev, cuda.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT))
print("graph memory used", int(used) >= 4096)
check(cuda.cuDeviceSetGraphMemAttribute(dev, cuda.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, cuda.cuuint64_t(0)))
check(cuda.cuDeviceGraphMemTrim(dev))
check(cuda.cuGraphExecDestroy(mexe))

# conditional node: CUDA writes the body graph into the caller's params
cgraph = check(cuda.cuGraphCreate(0))
handle = check(cuda.cuGraphConditionalHandleCreate(cgraph, ctx, 0, 0))
cond = cuda.CUgraphNodeParams()
cond.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
cond.conditional.handle = handle
cond.conditional.type = cuda.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_IF
cond.conditional.size = 1
cond.conditional.ctx = ctx
check(cuda.cuGraphAddNode(cgraph, None, None, 0, cond))
body = cond.conditional.phGraph_out[0]
print("conditional body", int(body) != 0, len(check(cuda.cuGraphGetNodes(body, 0))[1] or []) == 0)

# the long tail of queries
print("api version", check(cuda.cuCtxGetApiVersion(ctx)) >= 3020)
print("ctx id is a number", isinstance(check(cuda.cuCtxGetId(ctx)), int))
print("stream id is a number", isinstance(check(cuda.cuStreamGetId(stream)), int))
print("stream ctx", int(check(cuda.cuStreamGetCtx(stream))) == int(ctx))
print("stream device", int(check(cuda.cuStreamGetDevice(stream))) == int(dev))
print("function module", int(check(cuda.cuFuncGetModule(fill))) == int(module))
print("functions in module", check(cuda.cuModuleGetFunctionCount(module)) >= 1)
event = check(cuda.cuEventCreate(0))
check(cuda.cuEventRecordWithFlags(event, stream, 0))
check(cuda.cuStreamSynchronize(stream))
check(cuda.cuMemsetD2D8(a, 16, 3, 4, 2))
print("memset 2D", read(a, 20)[:4], read(a, 20)[16:20])
check(cuda.cuStreamWriteValue32(stream, a, 77, 0))
check(cuda.cuStreamWaitValue32(stream, a, 77, 0))
check(cuda.cuStreamSynchronize(stream))
print("stream write value", read(a, 4))
res = check(cuda.cuDeviceGetDevResource(dev, cuda.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))
groups, count, rem = check(cuda.cuDevSmResourceSplitByCount(0, res, 0, 2))
print("sm split", count > 0, len(groups))
groups, count, rem = check(cuda.cuDevSmResourceSplitByCount(2, res, 0, 2))
print("sm groups", len(groups), [int(g.sm.smCount) >= 2 for g in groups], int(rem.type))
desc = check(cuda.cuDevResourceGenerateDesc([groups[0]], 1))
green = check(cuda.cuGreenCtxCreate(desc, dev, cuda.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM))
print("green context", int(check(cuda.cuCtxFromGreenCtx(green))) != 0)
mine = check(cuda.cuGreenCtxGetDevResource(green, cuda.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))
print("green resource", int(mine.sm.smCount) == int(groups[0].sm.smCount))
ctx_res = check(cuda.cuCtxGetDevResource(ctx, cuda.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))
print("context resource", int(ctx_res.sm.smCount) == int(res.sm.smCount))
gstream = check(cuda.cuGreenCtxStreamCreate(green, cuda.CUstream_flags.CU_STREAM_NON_BLOCKING, 0))
print("green stream", int(check(cuda.cuStreamGetGreenCtx(gstream))) == int(green))
pair = check(cuda.cuStreamGetCtx_v2(stream))
print("stream ctx v2", int(pair[0]) == int(ctx), int(pair[1] or 0))
check(cuda.cuGreenCtxRecordEvent(green, event))
check(cuda.cuGreenCtxWaitEvent(green, event))
check(cuda.cuStreamDestroy(gstream))
check(cuda.cuGreenCtxDestroy(green))

# batches of stream memory operations, peer 3D copies, enumerations, tensor maps
ops = [cuda.CUstreamBatchMemOpParams() for _ in range(2)]
ops[0].operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_32
ops[0].writeValue.operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_32
ops[0].writeValue.address, ops[0].writeValue.value = a, 0x0A0B0C0D
ops[1].operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_64
ops[1].writeValue.operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_64
ops[1].writeValue.address, ops[1].writeValue.value64 = int(a) + 8, 0x0102030405060708
check(cuda.cuStreamBatchMemOp(stream, 2, ops, 0))
check(cuda.cuStreamSynchronize(stream))
print("batch mem ops", read(a, 16))
peer = cuda.CUDA_MEMCPY3D_PEER()
peer.srcMemoryType = peer.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
peer.srcDevice, peer.dstDevice, peer.srcContext, peer.dstContext = a, b, ctx, ctx
peer.WidthInBytes, peer.Height, peer.Depth = 16, 1, 1
check(cuda.cuMemcpy3DPeer(peer))
print("peer 3D copy", read(b, 16) == read(a, 16))
n = check(cuda.cuModuleGetFunctionCount(module))
functions = check(cuda.cuModuleEnumerateFunctions(n, module))
print("enumerated functions", len(functions) == n, all(int(f) != 0 for f in functions))
library = check(cuda.cuLibraryLoadFromFile(sys.argv[1].encode(), None, None, 0, None, None, 0))
kernels = check(cuda.cuLibraryEnumerateKernels(check(cuda.cuLibraryGetKernelCount(library)), library))
print("library from file", len(kernels) >= 1, int(check(cuda.cuKernelGetLibrary(kernels[0]))) == int(library))
u32, u64 = cuda.cuuint32_t, cuda.cuuint64_t
err, tmap = cuda.cuTensorMapEncodeTiled(
    cuda.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8, u32(2), a, [u64(64), u64(4)],
    [u64(64)], [u32(16), u32(2)], [u32(1), u32(1)],
    cuda.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
    cuda.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
    cuda.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
    cuda.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
)
print("tensor map", err.name)
if err == cuda.CUresult.CUDA_SUCCESS:
    before = [int(w) for w in tmap.opaque]
    check(cuda.cuTensorMapReplaceAddress(tmap, b))
    print("tensor map address replaced", any(before), [int(w) for w in tmap.opaque] != before)

# refused by a remote client, with its reason: managed memory hints, host functions in graphs
loc = cuda.CUmemLocation()
loc.type, loc.id = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE, 0
print("managed hints", cuda.cuMemAdvise(a, 16, cuda.CUmem_advise.CU_MEM_ADVISE_SET_READ_MOSTLY, loc)[0].name,
      cuda.cuMemPrefetchAsync(a, 16, loc, 0, stream)[0].name,
      cuda.cuMemRangeGetAttribute(4, cuda.CUmem_range_attribute.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, a, 16)[0].name)
print("host node", cuda.cuGraphAddHostNode(graph, None, 0, cuda.CUDA_HOST_NODE_PARAMS())[0].name)
check(cuda.cuDevicePrimaryCtxRelease(dev))
print("done")
