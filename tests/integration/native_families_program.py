"""A `cuda.bindings.driver` program, unmodified, over the later driver families: memory pools
and stream-ordered allocation, a captured graph, a graph built node by node, virtual memory,
context flags, 2D copies and arrays. One line per result, so that runs through the native
libcuda.so.1 and through the Python-level module swap compare equal.

    python native_families_program.py CUBIN
"""

import ctypes
import sys

import numpy as np
from cuda.bindings import driver as cuda


def check(result):
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cuda.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else values


def pools(dev, stream) -> None:
    attr = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
    print("pools supported", check(cuda.cuDeviceGetAttribute(attr, dev)))
    pool = check(cuda.cuDeviceGetDefaultMemPool(dev))
    print("device pool is default", int(check(cuda.cuDeviceGetMemPool(dev))) == int(pool))
    threshold = cuda.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    check(cuda.cuMemPoolSetAttribute(pool, threshold, cuda.cuuint64_t(1 << 20)))
    print("release threshold", int(check(cuda.cuMemPoolGetAttribute(pool, threshold))))
    data = np.arange(256, dtype=np.uint32)
    p = check(cuda.cuMemAllocFromPoolAsync(data.nbytes, pool, stream))
    check(cuda.cuMemcpyHtoDAsync(p, data, data.nbytes, stream))
    q = check(cuda.cuMemAllocAsync(data.nbytes, stream))
    check(cuda.cuMemcpyDtoDAsync(q, p, data.nbytes, stream))
    out = np.zeros_like(data)
    check(cuda.cuMemcpyDtoHAsync(out, q, data.nbytes, stream))
    check(cuda.cuStreamSynchronize(stream))
    print("pool copy ok", bool((out == data).all()))
    used = cuda.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT
    print("pool in use", int(check(cuda.cuMemPoolGetAttribute(pool, used))) >= 2 * data.nbytes)
    check(cuda.cuMemFreeAsync(p, stream))
    check(cuda.cuMemFreeAsync(q, stream))
    check(cuda.cuStreamSynchronize(stream))
    props = cuda.CUmemPoolProps()
    props.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = int(dev)
    mine = check(cuda.cuMemPoolCreate(props))
    r = check(cuda.cuMemAllocFromPoolAsync(4096, mine, stream))
    check(cuda.cuMemsetD32Async(r, 7, 1024, stream))
    word = np.zeros(1, dtype=np.uint32)
    # by address: cuda-bindings 13.3 reads a one-element array as int(word), its value
    check(cuda.cuMemcpyDtoHAsync(word.ctypes.data, r, 4, stream))
    check(cuda.cuMemFreeAsync(r, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemPoolTrimTo(mine, 0))
    check(cuda.cuMemPoolDestroy(mine))
    print("own pool ok", int(word[0]))


def graphs(module, stream) -> None:
    n = 512
    fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
    d = check(cuda.cuMemAlloc(4 * n))
    host = np.zeros(n, dtype=np.uint32)
    # a captured graph: a memset, a kernel, a copy back
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    status = check(cuda.cuStreamIsCapturing(stream))
    print("capturing", status.name)
    check(cuda.cuMemsetD32Async(d, 1, n, stream))
    args = ((d, 5, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuLaunchKernel(fill, (n + 127) // 128, 1, 1, 128, 1, 1, 0, stream, args, 0))
    info = check(cuda.cuStreamGetCaptureInfo(stream))
    print("capture info", info[0].name, info[-1])
    graph = check(cuda.cuStreamEndCapture(stream))
    print("captured nodes", check(cuda.cuGraphGetNodes(graph, 0))[1])
    exe = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exe, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(host, d, 4 * n))
    print("captured graph ok", int(host.sum()))
    check(cuda.cuGraphExecDestroy(exe))
    check(cuda.cuGraphDestroy(graph))
    # a graph built node by node: memset -> kernel -> memcpy to a second buffer
    e = check(cuda.cuMemAlloc(4 * n))
    graph = check(cuda.cuGraphCreate(0))
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst, ms.value, ms.elementSize, ms.width, ms.height, ms.pitch = d, 0, 4, n, 1, 0
    ctx = check(cuda.cuCtxGetCurrent())
    first = check(cuda.cuGraphAddMemsetNode(graph, None, 0, ms, ctx))
    kp = cuda.CUDA_KERNEL_NODE_PARAMS()
    kp.func = fill
    kp.gridDimX, kp.gridDimY, kp.gridDimZ = (n + 127) // 128, 1, 1
    kp.blockDimX, kp.blockDimY, kp.blockDimZ = 128, 1, 1
    kp.sharedMemBytes = 0
    kp.kernelParams = ((d, 3, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
    second = check(cuda.cuGraphAddKernelNode(graph, [first], 1, kp))
    cp = cuda.CUDA_MEMCPY3D()
    cp.srcMemoryType = cp.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
    cp.srcDevice, cp.dstDevice = d, e
    cp.WidthInBytes, cp.Height, cp.Depth = 4 * n, 1, 1
    third = check(cuda.cuGraphAddMemcpyNode(graph, [second], 1, cp, ctx))
    check(cuda.cuGraphAddEmptyNode(graph, [third], 1))
    print("node type", check(cuda.cuGraphNodeGetType(second)).name)
    print("root nodes", check(cuda.cuGraphGetRootNodes(graph, 0))[1])
    exe = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exe, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(host, e, 4 * n))
    print("built graph ok", int(host.sum()))
    check(cuda.cuGraphExecDestroy(exe))
    check(cuda.cuGraphDestroy(graph))
    for p in (d, e):
        check(cuda.cuMemFree(p))


def vmm(dev) -> None:
    prop = cuda.CUmemAllocationProp()
    prop.type = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = int(dev)
    option = cuda.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
    size = check(cuda.cuMemGetAllocationGranularity(prop, option))
    print("granularity > 0", size > 0)
    ptr = check(cuda.cuMemAddressReserve(size, 0, 0, 0))
    handle = check(cuda.cuMemCreate(size, prop, 0))
    check(cuda.cuMemMap(ptr, size, 0, handle, 0))
    access = cuda.CUmemAccessDesc()
    access.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    access.location.id = int(dev)
    access.flags = cuda.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    check(cuda.cuMemSetAccess(ptr, size, [access], 1))
    loc = cuda.CUmemLocation()
    loc.type, loc.id = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE, int(dev)
    print("access", int(check(cuda.cuMemGetAccess(loc, ptr))))
    got = check(cuda.cuMemGetAllocationPropertiesFromHandle(handle))
    print("allocation on device", int(got.location.id) == int(dev), int(got.type))
    data = np.arange(64, dtype=np.uint32)
    check(cuda.cuMemcpyHtoD(ptr, data, data.nbytes))
    out = np.zeros_like(data)
    check(cuda.cuMemcpyDtoH(out, ptr, data.nbytes))
    print("mapped copy ok", bool((out == data).all()))
    check(cuda.cuMemUnmap(ptr, size))
    check(cuda.cuMemRelease(handle))
    check(cuda.cuMemAddressFree(ptr, size))


def flags_and_copies(stream) -> None:
    print("context flags", int(check(cuda.cuCtxGetFlags())))
    check(cuda.cuCtxSetCacheConfig(cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_L1))
    print("cache config", check(cuda.cuCtxGetCacheConfig()).name)
    width, height = 48, 5
    src = np.arange(width * height, dtype=np.uint8).reshape(height, width)
    d, pitch = check(cuda.cuMemAllocPitch(width, height, 4))
    copy = cuda.CUDA_MEMCPY2D()
    copy.srcMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_HOST
    copy.srcHost, copy.srcPitch = src.ctypes.data, width
    copy.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.dstDevice, copy.dstPitch = d, pitch
    copy.WidthInBytes, copy.Height = width, height
    check(cuda.cuMemcpy2D(copy))
    back = np.zeros_like(src)
    copy = cuda.CUDA_MEMCPY2D()
    copy.srcMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.srcDevice, copy.srcPitch = d, pitch
    copy.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_HOST
    copy.dstHost, copy.dstPitch = back.ctypes.data, width
    copy.WidthInBytes, copy.Height = width, height
    check(cuda.cuMemcpy2DAsync(copy, stream))
    check(cuda.cuStreamSynchronize(stream))
    print("2D copy ok", bool((back == src).all()))
    desc = cuda.CUDA_ARRAY_DESCRIPTOR()
    desc.Width, desc.Height, desc.NumChannels = 16, 0, 1
    desc.Format = cuda.CUarray_format.CU_AD_FORMAT_UNSIGNED_INT32
    array = check(cuda.cuArrayCreate(desc))
    words = np.arange(16, dtype=np.uint32) * 3
    check(cuda.cuMemcpyHtoA(array, 0, words, words.nbytes))
    again = np.zeros_like(words)
    check(cuda.cuMemcpyAtoH(again, array, 0, words.nbytes))
    print("array copy ok", bool((again == words).all()))
    check(cuda.cuArrayDestroy(array))
    check(cuda.cuMemFree(d))


def launch_attributes(module, stream) -> None:
    n = 256
    fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
    d = check(cuda.cuMemAlloc(4 * n))
    attr = cuda.CUlaunchAttribute()
    attr.id = cuda.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PRIORITY
    attr.value.priority = 0
    config = cuda.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = n // 128, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = 128, 1, 1
    config.hStream = stream
    config.attrs = [attr]
    config.numAttrs = 1
    args = ((d, 4, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuLaunchKernelEx(config, fill, args, 0))
    check(cuda.cuStreamSynchronize(stream))
    host = np.zeros(n, dtype=np.uint32)
    check(cuda.cuMemcpyDtoH(host, d, 4 * n))
    print("launch with a priority attribute ok", int(host.sum()))
    check(cuda.cuMemFree(d))


def graph_edits(module, stream) -> None:
    n = 256
    fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
    d = check(cuda.cuMemAlloc(4 * n))
    graph = check(cuda.cuGraphCreate(0))
    first = check(cuda.cuGraphAddEmptyNode(graph, None, 0))
    kp = cuda.CUDA_KERNEL_NODE_PARAMS()
    kp.func = fill
    kp.gridDimX, kp.gridDimY, kp.gridDimZ = n // 128, 1, 1
    kp.blockDimX, kp.blockDimY, kp.blockDimZ = 128, 1, 1
    kp.kernelParams = ((d, 2, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
    second = check(cuda.cuGraphAddKernelNode(graph, None, 0, kp))
    check(cuda.cuGraphAddDependencies(graph, [first], [second], None, 1))
    deps = check(cuda.cuGraphNodeGetDependencies(second, 4))
    print("dependencies", deps[-1], int(deps[0][0]) == int(first))
    edges = check(cuda.cuGraphGetEdges(graph, 0))
    print("edges", edges[-1])
    kp.kernelParams = ((d, 5, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuGraphKernelNodeSetParams(second, kp))
    got = check(cuda.cuGraphKernelNodeGetParams(second))
    print("node params", int(got.gridDimX), int(got.blockDimX), int(got.func) == int(fill))
    exe = check(cuda.cuGraphInstantiate(graph, 0))
    kp.kernelParams = ((d, 7, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuGraphExecKernelNodeSetParams(exe, second, kp))
    check(cuda.cuGraphLaunch(exe, stream))
    check(cuda.cuStreamSynchronize(stream))
    host = np.zeros(n, dtype=np.uint32)
    check(cuda.cuMemcpyDtoH(host, d, 4 * n))
    print("exec params ok", int(host.sum()))
    print("exec update", int(check(cuda.cuGraphExecUpdate(exe, graph)).result))
    check(cuda.cuGraphLaunch(exe, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(host, d, 4 * n))
    print("updated graph ok", int(host.sum()))
    check(cuda.cuGraphExecDestroy(exe))
    check(cuda.cuGraphDestroy(graph))
    # arrays from and to device memory, descriptors
    desc = cuda.CUDA_ARRAY_DESCRIPTOR()
    desc.Width, desc.Height, desc.NumChannels = n, 0, 1
    desc.Format = cuda.CUarray_format.CU_AD_FORMAT_UNSIGNED_INT32
    array = check(cuda.cuArrayCreate(desc))
    got = check(cuda.cuArrayGetDescriptor(array))
    print("array descriptor", int(got.Width), got.Format.name, int(got.NumChannels))
    check(cuda.cuMemcpyDtoA(array, 0, d, 4 * n))
    e = check(cuda.cuMemAlloc(4 * n))
    check(cuda.cuMemcpyAtoD(e, array, 0, 4 * n))
    check(cuda.cuMemcpyDtoH(host, e, 4 * n))
    print("array device copies ok", int(host.sum()))
    check(cuda.cuArrayDestroy(array))
    # stream attributes, occupancy
    priority = cuda.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_PRIORITY
    value = cuda.CUstreamAttrValue()
    value.priority = -1
    check(cuda.cuStreamSetAttribute(stream, priority, value))
    print("stream priority", check(cuda.cuStreamGetAttribute(stream, priority)).priority)
    smem = check(cuda.cuOccupancyAvailableDynamicSMemPerBlock(fill, 1, 128))
    print("dynamic shared memory > 0", smem > 0)
    for p in (d, e):
        check(cuda.cuMemFree(p))


def textures() -> None:
    n = 64
    d = check(cuda.cuMemAlloc(4 * n))
    res = cuda.CUDA_RESOURCE_DESC()
    res.resType = cuda.CUresourcetype.CU_RESOURCE_TYPE_LINEAR
    res.res.linear.devPtr = d
    res.res.linear.format = cuda.CUarray_format.CU_AD_FORMAT_FLOAT
    res.res.linear.numChannels = 1
    res.res.linear.sizeInBytes = 4 * n
    tex = cuda.CUDA_TEXTURE_DESC()
    tex.filterMode = cuda.CUfilter_mode.CU_TR_FILTER_MODE_POINT
    tex.flags = 2  # CU_TRSF_NORMALIZED_COORDINATES
    tex.borderColor = [0.5, 0.0, 0.0, 1.0]
    obj = check(cuda.cuTexObjectCreate(res, tex, None))
    back = check(cuda.cuTexObjectGetResourceDesc(obj))
    linear = back.res.linear
    print("texture resource", back.resType.name, int(linear.devPtr) == int(d), int(linear.sizeInBytes))
    got = check(cuda.cuTexObjectGetTextureDesc(obj))
    print("texture desc", got.filterMode.name, int(got.flags), [float(c) for c in got.borderColor])
    check(cuda.cuTexObjectDestroy(obj))
    check(cuda.cuMemFree(d))


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        cubin = f.read()
    check(cuda.cuInit(0))
    dev = check(cuda.cuDeviceGet(0))
    ctx = check(cuda.cuDevicePrimaryCtxRetain(dev))
    check(cuda.cuCtxSetCurrent(ctx))
    stream = check(cuda.cuStreamCreate(1))
    module = check(cuda.cuModuleLoadData(cubin))
    pools(dev, stream)
    graphs(module, stream)
    vmm(dev)
    flags_and_copies(stream)
    launch_attributes(module, stream)
    graph_edits(module, stream)
    textures()
    print("peer", check(cuda.cuDeviceCanAccessPeer(dev, dev)))
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuModuleUnload(module))
    print("done")


if __name__ == "__main__":
    main()
