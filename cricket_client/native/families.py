"""Driver functions of the later families (memory pools, virtual memory, graphs and capture,
context flags, arrays and 2D/3D copies, peers) as the native library exports them: their C
structs (the layout of CUDA 12/13's cuda.h on LP64: sizes, padding and unions as there) and
their C parameters (pure data; signatures.py makes the C from it).

Most of these entries are forwarded by one generic implementation (entries_families.py): a
non-const pointer to a number or handle is an output, a pointer to a struct declared here is an
input read field by field, anything else is an input; the rest are written by hand there.
"""

from __future__ import annotations

__all__ = [
    "FAMILY_ENTRIES",
    "FAMILY_HANDLES",
    "FAMILY_SINCE",
    "FAMILY_TYPES",
    "HEADER_NAMES",
    "STRUCTS",
]

# Driver functions that cuda-bindings' Python module offers under another name (it asks
# cuGetProcAddress for them by these): cuGraphInstantiate is cuGraphInstantiateWithFlags.
HEADER_NAMES = frozenset(["cuGraphInstantiateWithFlags"])

FAMILY_HANDLES = frozenset(
    ["CUmemoryPool", "CUgraph", "CUgraphExec", "CUgraphNode", "CUarray", "CUmipmappedArray", "CUlinkState",
     "CUgreenCtx", "CUdevResourceDesc"]
)

# The structs, by name: what a program passes by pointer. Enums are `int` (4 bytes in C).
STRUCTS = {
    "CUmemLocation": "int type; int id;",
    "CUmemAllocationProp": (
        "int type; int requestedHandleTypes; CUmemLocation location; void *win32HandleMetaData; "
        "struct { unsigned char compressionType; unsigned char gpuDirectRDMACapable; "
        "unsigned short usage; unsigned char reserved[4]; } allocFlags;"
    ),
    "CUmemAccessDesc": "CUmemLocation location; int flags;",
    "CUmemcpyAttributes": (
        "int srcAccessOrder; CUmemLocation srcLocHint; CUmemLocation dstLocHint; unsigned int flags;"
    ),
    "CUoffset3D": "size_t x; size_t y; size_t z;",
    "CUextent3D": "size_t width; size_t height; size_t depth;",
    "CUmemcpy3DOperand": (
        "int type; union { struct { CUdeviceptr ptr; size_t rowLength; size_t layerHeight; "
        "CUmemLocation locHint; } ptr; struct { CUarray array; CUoffset3D offset; } array; } op;"
    ),
    "CUDA_MEMCPY3D_BATCH_OP": (
        "CUmemcpy3DOperand src; CUmemcpy3DOperand dst; CUextent3D extent; int srcAccessOrder; "
        "unsigned int flags;"
    ),
    "CUmemPoolProps": (
        "int allocType; int handleTypes; CUmemLocation location; void *win32SecurityAttributes; "
        "size_t maxSize; unsigned short usage; unsigned char reserved[54];"
    ),
    # CUDA_KERNEL_NODE_PARAMS_v2 (what cuda.h 12/13 call CUDA_KERNEL_NODE_PARAMS)
    "CUDA_KERNEL_NODE_PARAMS": (
        "CUfunction func; unsigned int gridDimX; unsigned int gridDimY; unsigned int gridDimZ; "
        "unsigned int blockDimX; unsigned int blockDimY; unsigned int blockDimZ; "
        "unsigned int sharedMemBytes; void **kernelParams; void **extra; CUkernel kern; "
        "CUcontext ctx;"
    ),
    "CUDA_MEMSET_NODE_PARAMS": (
        "CUdeviceptr dst; size_t pitch; unsigned int value; unsigned int elementSize; "
        "size_t width; size_t height;"
    ),
    "CUDA_MEMCPY2D": (
        "size_t srcXInBytes; size_t srcY; int srcMemoryType; const void *srcHost; "
        "CUdeviceptr srcDevice; CUarray srcArray; size_t srcPitch; "
        "size_t dstXInBytes; size_t dstY; int dstMemoryType; void *dstHost; "
        "CUdeviceptr dstDevice; CUarray dstArray; size_t dstPitch; "
        "size_t WidthInBytes; size_t Height;"
    ),
    "CUDA_MEMCPY3D": (
        "size_t srcXInBytes; size_t srcY; size_t srcZ; size_t srcLOD; int srcMemoryType; "
        "const void *srcHost; CUdeviceptr srcDevice; CUarray srcArray; void *reserved0; "
        "size_t srcPitch; size_t srcHeight; "
        "size_t dstXInBytes; size_t dstY; size_t dstZ; size_t dstLOD; int dstMemoryType; "
        "void *dstHost; CUdeviceptr dstDevice; CUarray dstArray; void *reserved1; "
        "size_t dstPitch; size_t dstHeight; "
        "size_t WidthInBytes; size_t Height; size_t Depth;"
    ),
    "CUDA_ARRAY_DESCRIPTOR": "size_t Width; size_t Height; int Format; unsigned int NumChannels;",
    "CUDA_ARRAY3D_DESCRIPTOR": (
        "size_t Width; size_t Height; size_t Depth; int Format; unsigned int NumChannels; "
        "unsigned int Flags;"
    ),
    "CUDA_RESOURCE_DESC": (
        "int resType; union { struct { CUarray hArray; } array; "
        "struct { CUmipmappedArray hMipmappedArray; } mipmap; "
        "struct { CUdeviceptr devPtr; int format; unsigned int numChannels; size_t sizeInBytes; } linear; "
        "struct { CUdeviceptr devPtr; int format; unsigned int numChannels; size_t width; "
        "size_t height; size_t pitchInBytes; } pitch2D; "
        "struct { int reserved[32]; } reserved; } res; unsigned int flags;"
    ),
    "CUDA_TEXTURE_DESC": (
        "int addressMode[3]; int filterMode; unsigned int flags; unsigned int maxAnisotropy; "
        "int mipmapFilterMode; float mipmapLevelBias; float minMipmapLevelClamp; "
        "float maxMipmapLevelClamp; float borderColor[4]; int reserved[12];"
    ),
    "CUDA_RESOURCE_VIEW_DESC": (
        "int format; size_t width; size_t height; size_t depth; unsigned int firstMipmapLevel; "
        "unsigned int lastMipmapLevel; unsigned int firstLayer; unsigned int lastLayer; "
        "unsigned int reserved[16];"
    ),
    "CUgraphExecUpdateResultInfo": "int result; CUgraphNode errorNode; CUgraphNode errorFromNode;",
    "CUgraphEdgeData": (
        "unsigned char from_port; unsigned char to_port; unsigned char type; "
        "unsigned char reserved[5];"
    ),
    # the members of CUgraphNodeParams' union (cuda.h 12.4+/13; cuda-bindings' layout)
    "CUDA_MEMCPY_NODE_PARAMS": "int flags; int reserved; CUcontext copyCtx; CUDA_MEMCPY3D copyParams;",
    "CUDA_MEMSET_NODE_PARAMS_v2": (
        "CUdeviceptr dst; size_t pitch; unsigned int value; unsigned int elementSize; "
        "size_t width; size_t height; CUcontext ctx;"
    ),
    "CUDA_HOST_NODE_PARAMS": "void *fn; void *userData;",
    "CUDA_HOST_NODE_PARAMS_v2": "void *fn; void *userData; unsigned int syncMode; CUcontext ctx;",
    "CUDA_CHILD_GRAPH_NODE_PARAMS": "CUgraph graph; int ownership;",
    "CUDA_EVENT_NODE_PARAMS": "CUevent event;",
    "CUDA_EXT_SEM_NODE_PARAMS_v2": (
        "void *extSemArray; const void *paramsArray; unsigned int numExtSems; CUcontext ctx;"
    ),
    "CUDA_MEM_ALLOC_NODE_PARAMS": (
        "CUmemPoolProps poolProps; const CUmemAccessDesc *accessDescs; size_t accessDescCount; "
        "size_t bytesize; CUdeviceptr dptr;"
    ),
    "CUDA_MEM_FREE_NODE_PARAMS": "CUdeviceptr dptr;",
    "CUDA_BATCH_MEM_OP_NODE_PARAMS_v2": (
        "CUcontext ctx; unsigned int count; void *paramArray; unsigned int flags;"
    ),
    "CUDA_CONDITIONAL_NODE_PARAMS": (
        "CUgraphConditionalHandle handle; int type; unsigned int size; CUgraph *phGraph_out; "
        "CUcontext ctx;"
    ),
    "CUDA_MEMCPY3D_PEER": (
        "size_t srcXInBytes; size_t srcY; size_t srcZ; size_t srcLOD; int srcMemoryType; "
        "const void *srcHost; CUdeviceptr srcDevice; CUarray srcArray; CUcontext srcContext; "
        "size_t srcPitch; size_t srcHeight; "
        "size_t dstXInBytes; size_t dstY; size_t dstZ; size_t dstLOD; int dstMemoryType; "
        "void *dstHost; CUdeviceptr dstDevice; CUarray dstArray; CUcontext dstContext; "
        "size_t dstPitch; size_t dstHeight; "
        "size_t WidthInBytes; size_t Height; size_t Depth;"
    ),
    "CUDA_ARRAY_MEMORY_REQUIREMENTS": "size_t size; size_t alignment; unsigned int reserved[4];",
    "CUDA_ARRAY_SPARSE_PROPERTIES": (
        "struct { unsigned int width; unsigned int height; unsigned int depth; } tileExtent; "
        "unsigned int miptailFirstLevel; unsigned long long miptailSize; unsigned int flags; "
        "unsigned int reserved[4];"
    ),
    # the CUstreamBatchMemOpParams union (48 bytes), as a struct holding it; its wait and write
    # arms (CUstreamMemOpWaitValueParams_st, ...WriteValue...) have one layout
    "CUstreamMemOpValueParams": (
        "int operation; CUdeviceptr address; union { unsigned int value; cuuint64_t value64; }; "
        "unsigned int flags; CUdeviceptr alias;"
    ),
    "CUstreamBatchMemOpParams": (
        "union { int operation; "
        "CUstreamMemOpValueParams waitValue; CUstreamMemOpValueParams writeValue; "
        "struct { int operation; unsigned int flags; } flushRemoteWrites; "
        "struct { int operation; unsigned int flags; } memoryBarrier; "
        "cuuint64_t pad[6]; };"
    ),
    # 128 bytes, 64-byte aligned: the encoding the server's driver made
    "CUtensorMap": "cuuint64_t opaque[16];",
    # 144 bytes; the driver's internal bytes hold the id of the server's resource here
    "CUdevResource": (
        "int type; unsigned char _internal_padding[92]; union { struct { unsigned int smCount; "
        "unsigned int minSmPartitionSize; unsigned int smCoscheduledAlignment; "
        "unsigned int flags; } sm; unsigned char _oversize[40]; }; void *nextResource;"
    ),
    # 256 bytes: the type, then a 232-byte union of the node kinds' parameters
    "CUgraphNodeParams": (
        "int type; int reserved0[3]; union { long long reserved1[29]; "
        "CUDA_KERNEL_NODE_PARAMS kernel; CUDA_MEMCPY_NODE_PARAMS memcpy; "
        "CUDA_MEMSET_NODE_PARAMS_v2 memset; CUDA_HOST_NODE_PARAMS_v2 host; "
        "CUDA_CHILD_GRAPH_NODE_PARAMS graph; CUDA_EVENT_NODE_PARAMS eventWait; "
        "CUDA_EVENT_NODE_PARAMS eventRecord; CUDA_EXT_SEM_NODE_PARAMS_v2 extSemSignal; "
        "CUDA_EXT_SEM_NODE_PARAMS_v2 extSemWait; CUDA_MEM_ALLOC_NODE_PARAMS alloc; "
        "CUDA_MEM_FREE_NODE_PARAMS free; CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 memOp; "
        "CUDA_CONDITIONAL_NODE_PARAMS conditional; }; long long reserved2;"
    ),
}

FAMILY_TYPES = (
    "".join(f"typedef struct {h}_st *{h};\n" for h in sorted(FAMILY_HANDLES))
    + "typedef unsigned long long CUmemGenericAllocationHandle;\n"
    + "typedef unsigned long long CUtexObject;\n"
    + "typedef unsigned long long CUsurfObject;\n"
    + "typedef unsigned long long CUgraphConditionalHandle;\n"
    + "".join(f"typedef struct {{ {body} }} {name};\n" for name, body in STRUCTS.items())
)

# (exported symbol, C parameters), as cuda.h 12/13 declare them.
FAMILY_ENTRIES: list[tuple[str, str]] = [
    # memory pools, stream-ordered allocation (cuMemAllocAsync/FreeAsync are in ENTRIES)
    ("cuDeviceGetDefaultMemPool", "CUmemoryPool *pool_out, CUdevice dev"),
    ("cuDeviceGetMemPool", "CUmemoryPool *pool, CUdevice dev"),
    ("cuDeviceSetMemPool", "CUdevice dev, CUmemoryPool pool"),
    ("cuMemGetDefaultMemPool", "CUmemoryPool *pool_out, CUmemLocation *location, int type"),
    ("cuMemGetMemPool", "CUmemoryPool *pool, CUmemLocation *location, int type"),
    ("cuMemSetMemPool", "CUmemLocation *location, int type, CUmemoryPool pool"),
    ("cuMemPoolCreate", "CUmemoryPool *pool, const CUmemPoolProps *poolProps"),
    ("cuMemPoolDestroy", "CUmemoryPool pool"),
    ("cuMemPoolGetAttribute", "CUmemoryPool pool, int attr, void *value"),
    ("cuMemPoolSetAttribute", "CUmemoryPool pool, int attr, void *value"),
    ("cuMemPoolTrimTo", "CUmemoryPool pool, size_t minBytesToKeep"),
    ("cuMemPoolSetAccess", "CUmemoryPool pool, const CUmemAccessDesc *map, size_t count"),
    ("cuMemPoolGetAccess", "int *flags, CUmemoryPool memPool, CUmemLocation *location"),
    ("cuMemAllocFromPoolAsync", "CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream"),
    # virtual memory management
    ("cuMemAddressReserve", "CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags"),
    ("cuMemAddressFree", "CUdeviceptr ptr, size_t size"),
    ("cuMemCreate", "CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags"),
    ("cuMemRelease", "CUmemGenericAllocationHandle handle"),
    ("cuMemMap", "CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags"),
    ("cuMemUnmap", "CUdeviceptr ptr, size_t size"),
    ("cuMemSetAccess", "CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count"),
    ("cuMemGetAccess", "unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr"),
    ("cuMemGetAllocationGranularity", "size_t *granularity, const CUmemAllocationProp *prop, int option"),
    ("cuMemRetainAllocationHandle", "CUmemGenericAllocationHandle *handle, void *addr"),
    ("cuMemGetAllocationPropertiesFromHandle", "CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle"),
    # stream capture and graphs
    ("cuStreamBeginCapture_v2", "CUstream hStream, int mode"),
    ("cuStreamEndCapture", "CUstream hStream, CUgraph *phGraph"),
    ("cuMemcpyBatchAsync", "CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream"),
    ("cuGraphKernelNodeGetAttribute", "CUgraphNode hNode, int attr, void *value_out"),
    ("cuGraphKernelNodeSetAttribute", "CUgraphNode hNode, int attr, const void *value"),
    ("cuGraphKernelNodeCopyAttributes", "CUgraphNode dst, CUgraphNode src"),
    ("cuMemcpyWithAttributesAsync", "CUdeviceptr dst, CUdeviceptr src, size_t size, CUmemcpyAttributes *attr, CUstream hStream"),
    ("cuMemcpyBatchAsync_v2", "CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream"),
    ("cuMemcpy3DBatchAsync", "size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags, CUstream hStream"),
    ("cuMemcpy3DBatchAsync_v2", "size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream hStream"),
    ("cuMemcpy3DWithAttributesAsync", "CUDA_MEMCPY3D_BATCH_OP *op, unsigned long long flags, CUstream hStream"),
    ("cuStreamBeginCaptureToGraph", "CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, int mode"),
    ("cuStreamUpdateCaptureDependencies", "CUstream hStream, CUgraphNode *dependencies, size_t numDependencies, unsigned int flags"),
    ("cuStreamUpdateCaptureDependencies_v2", "CUstream hStream, CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, unsigned int flags"),
    ("cuStreamIsCapturing", "CUstream hStream, int *captureStatus"),
    ("cuStreamGetCaptureInfo_v2", "CUstream hStream, int *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out"),
    ("cuStreamGetCaptureInfo_v3", "CUstream hStream, int *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out"),
    ("cuGraphCreate", "CUgraph *phGraph, unsigned int flags"),
    ("cuGraphDestroy", "CUgraph hGraph"),
    ("cuGraphClone", "CUgraph *phGraphClone, CUgraph originalGraph"),
    ("cuGraphInstantiateWithFlags", "CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags"),
    ("cuGraphLaunch", "CUgraphExec hGraphExec, CUstream hStream"),
    ("cuGraphExecDestroy", "CUgraphExec hGraphExec"),
    ("cuGraphNodeGetType", "CUgraphNode hNode, int *type"),
    ("cuGraphGetNodes", "CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes"),
    ("cuGraphGetRootNodes", "CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes"),
    ("cuGraphAddKernelNode_v2", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams"),
    ("cuGraphAddMemcpyNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx"),
    ("cuGraphAddMemsetNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx"),
    ("cuGraphAddEmptyNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies"),
    ("cuGraphAddEventRecordNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event"),
    ("cuGraphAddEventWaitNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event"),
    ("cuGraphAddChildGraphNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUgraph childGraph"),
    # context flags and cache configuration
    ("cuCtxGetFlags", "unsigned int *flags"),
    ("cuCtxSetFlags", "unsigned int flags"),
    ("cuCtxGetCacheConfig", "int *pconfig"),
    ("cuCtxSetCacheConfig", "int config"),
    # arrays, 2D/3D copies
    ("cuArrayCreate_v2", "CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray"),
    ("cuArray3DCreate_v2", "CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray"),
    ("cuArrayDestroy", "CUarray hArray"),
    ("cuMemcpy2D_v2", "const CUDA_MEMCPY2D *pCopy"),
    ("cuMemcpy2DUnaligned_v2", "const CUDA_MEMCPY2D *pCopy"),
    ("cuMemcpy2DAsync_v2", "const CUDA_MEMCPY2D *pCopy, CUstream hStream"),
    ("cuMemcpy3D_v2", "const CUDA_MEMCPY3D *pCopy"),
    ("cuMemcpy3DAsync_v2", "const CUDA_MEMCPY3D *pCopy, CUstream hStream"),
    ("cuMemcpyHtoA_v2", "CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount"),
    ("cuMemcpyAtoH_v2", "void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount"),
    # peers
    ("cuDeviceCanAccessPeer", "int *canAccessPeer, CUdevice dev, CUdevice peerDev"),
    ("cuCtxEnablePeerAccess", "CUcontext peerContext, unsigned int Flags"),
    ("cuCtxDisablePeerAccess", "CUcontext peerContext"),
    ("cuMemcpyPeer", "CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount"),
    ("cuMemcpyPeerAsync", "CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream"),
    # occupancy, device pairs, stream attributes (value: the 64-byte CUlaunchAttributeValue)
    ("cuDeviceGetP2PAttribute", "int *value, int attrib, CUdevice srcDevice, CUdevice dstDevice"),
    ("cuOccupancyAvailableDynamicSMemPerBlock", "size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize"),
    ("cuOccupancyMaxPotentialBlockSizeWithFlags", "int *minGridSize, int *blockSize, CUfunction func, void *blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit, unsigned int flags"),
    ("cuOccupancyMaxActiveClusters", "int *numClusters, CUfunction func, const CUlaunchConfig *config"),
    ("cuOccupancyMaxPotentialClusterSize", "int *clusterSize, CUfunction func, const CUlaunchConfig *config"),
    ("cuStreamGetAttribute", "CUstream hStream, int attr, void *value_out"),
    ("cuStreamSetAttribute", "CUstream hStream, int attr, const void *value"),
    # more of arrays and graphs
    ("cuArrayGetDescriptor_v2", "CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray"),
    ("cuArray3DGetDescriptor_v2", "CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray"),
    ("cuMemcpyDtoA_v2", "CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount"),
    ("cuMemcpyAtoD_v2", "CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount"),
    ("cuMemcpyAtoA_v2", "CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount"),
    ("cuGraphKernelNodeGetParams_v2", "CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams"),
    ("cuGraphKernelNodeSetParams_v2", "CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams"),
    ("cuGraphExecKernelNodeSetParams_v2", "CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams"),
    ("cuGraphExecMemsetNodeSetParams", "CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx"),
    ("cuGraphExecUpdate_v2", "CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo"),
    ("cuGraphNodeGetDependencies_v2", "CUgraphNode hNode, CUgraphNode *dependencies, CUgraphEdgeData *edgeData, size_t *numDependencies"),
    ("cuGraphGetEdges_v2", "CUgraph hGraph, CUgraphNode *from_, CUgraphNode *to, CUgraphEdgeData *edgeData, size_t *numEdges"),
    ("cuGraphAddDependencies_v2", "CUgraph hGraph, const CUgraphNode *from_, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies"),
    # texture and surface objects
    ("cuTexObjectCreate", "CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc, const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc"),
    ("cuTexObjectDestroy", "CUtexObject texObject"),
    ("cuTexObjectGetResourceDesc", "CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject"),
    ("cuTexObjectGetTextureDesc", "CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject"),
    ("cuTexObjectGetResourceViewDesc", "CUDA_RESOURCE_VIEW_DESC *pResViewDesc, CUtexObject texObject"),
    ("cuSurfObjectCreate", "CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc"),
    ("cuSurfObjectDestroy", "CUsurfObject surfObject"),
    ("cuSurfObjectGetResourceDesc", "CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject"),
    # the linker: inputs collected here, linked by the server's driver at cuLinkComplete
    ("cuLinkCreate_v2", "unsigned int numOptions, int *options, void **optionValues, CUlinkState *stateOut"),
    ("cuLinkAddData_v2", "CUlinkState state, int type, void *data, size_t size, const char *name, unsigned int numOptions, int *options, void **optionValues"),
    ("cuLinkAddFile_v2", "CUlinkState state, int type, const char *path, unsigned int numOptions, int *options, void **optionValues"),
    ("cuLinkComplete", "CUlinkState state, void **cubinOut, size_t *sizeOut"),
    ("cuLinkDestroy", "CUlinkState state"),
    # remoted by the Python client, exported with generated entries: graph and node ids,
    # node removal; managed memory (answers NOT_SUPPORTED with the client's reason), mapped
    # host memory (cricket_client.mapped_host)
    ("cuGraphDestroyNode", "CUgraphNode hNode"),
    ("cuGraphMemsetNodeGetParams", "CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams"),
    ("cuGraphGetId", "CUgraph hGraph, unsigned int *graphId"),
    ("cuGraphExecGetId", "CUgraphExec hGraphExec, unsigned int *graphId"),
    ("cuGraphNodeGetContainingGraph", "CUgraphNode hNode, CUgraph *phGraph"),
    ("cuGraphNodeGetLocalId", "CUgraphNode hNode, unsigned int *nodeId"),
    ("cuGraphNodeGetToolsId", "CUgraphNode hNode, unsigned long long *toolsNodeId"),
    ("cuMemAllocManaged", "CUdeviceptr *dptr, size_t bytesize, unsigned int flags"),
    ("cuMemHostGetDevicePointer_v2", "CUdeviceptr *pdptr, void *p, unsigned int Flags"),
    ("cuMemHostGetFlags", "unsigned int *pFlags, void *p"),
    # polymorphic graph nodes, graph memory, conditional nodes
    ("cuGraphAddNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUgraphNodeParams *nodeParams"),
    ("cuGraphAddNode_v2", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, CUgraphNodeParams *nodeParams"),
    ("cuGraphNodeSetParams", "CUgraphNode hNode, CUgraphNodeParams *nodeParams"),
    ("cuGraphExecNodeSetParams", "CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams"),
    ("cuGraphMemcpyNodeGetParams", "CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams"),
    ("cuGraphAddMemAllocNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams"),
    ("cuGraphAddMemFreeNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUdeviceptr dptr"),
    ("cuGraphMemAllocNodeGetParams", "CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out"),
    ("cuGraphMemFreeNodeGetParams", "CUgraphNode hNode, CUdeviceptr *dptr_out"),
    ("cuDeviceGetGraphMemAttribute", "CUdevice device, int attr, cuuint64_t *value"),
    ("cuDeviceSetGraphMemAttribute", "CUdevice device, int attr, void *value"),
    ("cuDeviceGraphMemTrim", "CUdevice device"),
    ("cuGraphConditionalHandleCreate", "CUgraphConditionalHandle *pHandle_out, CUgraph hGraph, CUcontext ctx, unsigned int defaultLaunchValue, unsigned int flags"),
    # reading and changing what graphs and execs hold
    ("cuGraphNodeGetParams", "CUgraphNode hNode, CUgraphNodeParams *nodeParams"),
    ("cuGraphMemcpyNodeSetParams", "CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams"),
    ("cuGraphMemsetNodeSetParams", "CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams"),
    ("cuGraphEventRecordNodeGetEvent", "CUgraphNode hNode, CUevent *event_out"),
    ("cuGraphEventRecordNodeSetEvent", "CUgraphNode hNode, CUevent event"),
    ("cuGraphEventWaitNodeGetEvent", "CUgraphNode hNode, CUevent *event_out"),
    ("cuGraphEventWaitNodeSetEvent", "CUgraphNode hNode, CUevent event"),
    ("cuGraphExecEventRecordNodeSetEvent", "CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event"),
    ("cuGraphExecEventWaitNodeSetEvent", "CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event"),
    ("cuGraphChildGraphNodeGetGraph", "CUgraphNode hNode, CUgraph *phGraph"),
    ("cuGraphExecGetFlags", "CUgraphExec hGraphExec, cuuint64_t *flags"),
    ("cuGraphUpload", "CUgraphExec hGraphExec, CUstream hStream"),
    ("cuGraphDebugDotPrint", "CUgraph hGraph, const char *path, unsigned int flags"),
    ("cuGraphExecChildGraphNodeSetParams", "CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph"),
    ("cuGraphNodeFindInClone", "CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph"),
    ("cuGraphExecMemcpyNodeSetParams", "CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D *copyParams, CUcontext ctx"),
    ("cuGraphNodeSetEnabled", "CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled"),
    ("cuGraphNodeGetEnabled", "CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled"),
    ("cuGraphNodeGetDependentNodes_v2", "CUgraphNode hNode, CUgraphNode *dependentNodes, CUgraphEdgeData *edgeData, size_t *numDependentNodes"),
    ("cuGraphRemoveDependencies_v2", "CUgraph hGraph, const CUgraphNode *from_, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies"),
    # device resources
    ("cuDeviceGetDevResource", "CUdevice device, CUdevResource *resource, int type"),
    ("cuDevSmResourceSplitByCount", "CUdevResource *result, unsigned int *nbGroups, const CUdevResource *input, CUdevResource *remaining, unsigned int useFlags, unsigned int minCount"),
    ("cuCtxGetDevResource", "CUcontext hCtx, CUdevResource *resource, int type"),
    ("cuDevResourceGenerateDesc", "CUdevResourceDesc *phDesc, CUdevResource *resources, unsigned int nbResources"),
    # green contexts
    ("cuGreenCtxCreate", "CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags"),
    ("cuGreenCtxDestroy", "CUgreenCtx hCtx"),
    ("cuGreenCtxGetDevResource", "CUgreenCtx hCtx, CUdevResource *resource, int type"),
    ("cuCtxFromGreenCtx", "CUcontext *pContext, CUgreenCtx hCtx"),
    ("cuGreenCtxRecordEvent", "CUgreenCtx hCtx, CUevent hEvent"),
    ("cuGreenCtxWaitEvent", "CUgreenCtx hCtx, CUevent hEvent"),
    ("cuGreenCtxStreamCreate", "CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags, int priority"),
    ("cuStreamGetGreenCtx", "CUstream hStream, CUgreenCtx *phCtx"),
    ("cuStreamGetCtx_v2", "CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx"),
    # arrays' requirements, peer 3D copies, batches of stream memory operations, tensor maps
    ("cuArrayGetMemoryRequirements", "CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUarray array, CUdevice device"),
    ("cuMipmappedArrayGetMemoryRequirements", "CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUmipmappedArray mipmap, CUdevice device"),
    ("cuArrayGetSparseProperties", "CUDA_ARRAY_SPARSE_PROPERTIES *sparseProperties, CUarray array"),
    ("cuMipmappedArrayGetSparseProperties", "CUDA_ARRAY_SPARSE_PROPERTIES *sparseProperties, CUmipmappedArray mipmap"),
    ("cuMemcpy3DPeer", "const CUDA_MEMCPY3D_PEER *pCopy"),
    ("cuMemcpy3DPeerAsync", "const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream"),
    ("cuStreamBatchMemOp_v2", "CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags"),
    ("cuTensorMapEncodeTiled", "CUtensorMap *tensorMap, int tensorDataType, unsigned int tensorRank, void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides, const unsigned int *boxDim, const unsigned int *elementStrides, int interleave, int swizzle, int l2Promotion, int oobFill"),
    ("cuTensorMapEncodeIm2col", "CUtensorMap *tensorMap, int tensorDataType, unsigned int tensorRank, void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner, unsigned int channelsPerPixel, unsigned int pixelsPerColumn, const unsigned int *elementStrides, int interleave, int swizzle, int l2Promotion, int oobFill"),
    ("cuTensorMapReplaceAddress", "CUtensorMap *tensorMap, void *globalAddress"),
    ("cuModuleEnumerateFunctions", "CUfunction *functions, unsigned int numFunctions, CUmodule mod"),
    ("cuLibraryEnumerateKernels", "CUkernel *kernels, unsigned int numKernels, CUlibrary lib"),
    ("cuLibraryLoadFromFile", "CUlibrary *library, const char *fileName, int *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions"),
    # refused by the client with its reason (managed memory, host functions in graphs); an
    # 8-byte CUmemLocation by value travels in one integer register (x86-64 and AArch64 ABIs)
    ("cuMemAdvise_v2", "CUdeviceptr devPtr, size_t count, int advice, cuuint64_t location"),
    ("cuMemPrefetchAsync_v2", "CUdeviceptr devPtr, size_t count, cuuint64_t location, unsigned int flags, CUstream hStream"),
    ("cuMemRangeGetAttribute", "void *data, size_t dataSize, int attribute, CUdeviceptr devPtr, size_t count"),
    ("cuGraphAddHostNode", "CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams"),
    # context, stream, module, library and kernel queries
    ("cuCtxGetApiVersion", "CUcontext ctx, unsigned int *version"),
    ("cuCtxGetId", "CUcontext ctx, unsigned long long *ctxId"),
    ("cuCtxRecordEvent", "CUcontext hCtx, CUevent hEvent"),
    ("cuCtxWaitEvent", "CUcontext hCtx, CUevent hEvent"),
    ("cuCtxGetSharedMemConfig", "int *pConfig"),
    ("cuCtxSetSharedMemConfig", "int config"),
    ("cuFuncSetSharedMemConfig", "CUfunction hfunc, int config"),
    ("cuStreamGetId", "CUstream hStream, unsigned long long *streamId"),
    ("cuStreamGetCtx", "CUstream hStream, CUcontext *pctx"),
    ("cuStreamGetDevice", "CUstream hStream, CUdevice *device"),
    ("cuStreamCopyAttributes", "CUstream dst, CUstream src"),
    ("cuEventRecordWithFlags", "CUevent hEvent, CUstream hStream, unsigned int flags"),
    ("cuFuncGetModule", "CUmodule *hmod, CUfunction hfunc"),
    ("cuModuleGetFunctionCount", "unsigned int *count, CUmodule mod"),
    ("cuModuleLoad", "CUmodule *module, const char *fname"),
    ("cuKernelGetLibrary", "CUlibrary *pLib, CUkernel kernel"),
    ("cuLibraryGetKernelCount", "unsigned int *count, CUlibrary lib"),
    ("cuLibraryGetGlobal", "CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name"),
    ("cuDeviceGetByPCIBusId", "CUdevice *dev, const char *pciBusId"),
    ("cuDeviceGetTexture1DLinearMaxWidth", "size_t *maxWidthInElements, int format, unsigned int numChannels, CUdevice dev"),
    # 2D memsets, array copies on a stream, mipmapped arrays
    ("cuMemsetD2D8_v2", "CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height"),
    ("cuMemsetD2D16_v2", "CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height"),
    ("cuMemsetD2D32_v2", "CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height"),
    ("cuMemsetD2D8Async", "CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream"),
    ("cuMemsetD2D16Async", "CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream"),
    ("cuMemsetD2D32Async", "CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream"),
    ("cuMemcpyHtoAAsync_v2", "CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream"),
    ("cuMemcpyAtoHAsync_v2", "void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream"),
    ("cuMipmappedArrayCreate", "CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc, unsigned int numMipmapLevels"),
    ("cuMipmappedArrayDestroy", "CUmipmappedArray hMipmappedArray"),
    ("cuMipmappedArrayGetLevel", "CUarray *pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level"),
    # stream memory operations
    ("cuStreamWaitValue32_v2", "CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags"),
    ("cuStreamWaitValue64_v2", "CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags"),
    ("cuStreamWriteValue32_v2", "CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags"),
    ("cuStreamWriteValue64_v2", "CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags"),
    # device facts, green context ids, library modules (procedures 900-939)
    ("cuDeviceGetExecAffinitySupport", "int *pi, int type, CUdevice dev"),
    ("cuGreenCtxGetId", "CUgreenCtx greenCtx, unsigned long long *greenCtxId"),
    ("cuLibraryGetModule", "CUmodule *pMod, CUlibrary library"),
]

# cuGetProcAddress: the CUDA version from which each suffixed ABI is handed out.
FAMILY_SINCE = {
    "cuStreamBeginCapture_v2": 10010,
    "cuStreamGetCaptureInfo_v2": 11030,
    "cuStreamGetCaptureInfo_v3": 12030,
    "cuGraphAddKernelNode_v2": 12000,
    "cuArrayCreate_v2": 3020,
    "cuArray3DCreate_v2": 3020,
    "cuMemcpy2D_v2": 3020,
    "cuMemcpy2DUnaligned_v2": 3020,
    "cuMemcpy2DAsync_v2": 3020,
    "cuMemcpy3D_v2": 3020,
    "cuMemcpy3DAsync_v2": 3020,
    "cuMemcpyHtoA_v2": 3020,
    "cuMemcpyAtoH_v2": 3020,
    "cuArrayGetDescriptor_v2": 3020,
    "cuArray3DGetDescriptor_v2": 3020,
    "cuMemcpyDtoA_v2": 3020,
    "cuMemcpyAtoD_v2": 3020,
    "cuMemcpyAtoA_v2": 3020,
    "cuGraphKernelNodeGetParams_v2": 12000,
    "cuGraphKernelNodeSetParams_v2": 12000,
    "cuGraphExecKernelNodeSetParams_v2": 12000,
    "cuGraphExecUpdate_v2": 12000,
    "cuGraphNodeGetDependencies_v2": 12030,
    "cuGraphGetEdges_v2": 12030,
    "cuGraphAddDependencies_v2": 12030,
    "cuStreamUpdateCaptureDependencies_v2": 12030,
    "cuMemcpyBatchAsync_v2": 13000,
    "cuMemcpy3DBatchAsync_v2": 13000,
    "cuGraphNodeGetDependentNodes_v2": 12030,
    "cuGraphRemoveDependencies_v2": 12030,
    "cuLinkCreate_v2": 6050,
    "cuLinkAddData_v2": 6050,
    "cuLinkAddFile_v2": 6050,
    "cuMemHostGetDevicePointer_v2": 3020,
    "cuGraphAddNode_v2": 12030,
    "cuStreamGetCtx_v2": 12050,
    "cuStreamBatchMemOp_v2": 11070,
    "cuMemAdvise_v2": 12020,
    "cuMemPrefetchAsync_v2": 12020,
    "cuMemsetD2D8_v2": 3020,
    "cuMemsetD2D16_v2": 3020,
    "cuMemsetD2D32_v2": 3020,
    "cuMemcpyHtoAAsync_v2": 3020,
    "cuMemcpyAtoHAsync_v2": 3020,
    "cuStreamWaitValue32_v2": 11070,
    "cuStreamWaitValue64_v2": 11070,
    "cuStreamWriteValue32_v2": 11070,
    "cuStreamWriteValue64_v2": 11070,
}
