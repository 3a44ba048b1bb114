"""Capture into a given graph, capture dependencies and batched copies, as a cuda-python
program writes them (run through either door by test_native_capture_to_graph.py)."""

import cuda.bindings.driver as cu
import numpy as np


def ok(result):
    assert result[0] == cu.CUresult.CUDA_SUCCESS, result
    return result[1] if len(result) == 2 else result[1:]


ok(cu.cuInit(0))
ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
ok(cu.cuCtxSetCurrent(ctx))
stream = ok(cu.cuStreamCreate(0))
graph = ok(cu.cuGraphCreate(0))
first = ok(cu.cuGraphAddEmptyNode(graph, None, 0))
ok(cu.cuStreamBeginCaptureToGraph(stream, graph, [first], None, 1,
                                  cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
status, _, into, deps, _, n = ok(cu.cuStreamGetCaptureInfo(stream))
print("capturing into its graph", int(into) == int(graph), n, int(deps[0]) == int(first))
second = ok(cu.cuGraphAddEmptyNode(graph, None, 0))
flags = cu.CUstreamUpdateCaptureDependencies_flags
ok(cu.cuStreamUpdateCaptureDependencies(stream, [second], None, 1, flags.CU_STREAM_ADD_CAPTURE_DEPENDENCIES))
_, _, _, deps, _, n = ok(cu.cuStreamGetCaptureInfo(stream))
print("added", n, sorted(int(d) for d in deps) == sorted([int(first), int(second)]))
ok(cu.cuStreamUpdateCaptureDependencies(stream, [second], None, 1, flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES))
_, _, _, deps, _, n = ok(cu.cuStreamGetCaptureInfo(stream))
print("set", n, int(deps[0]) == int(second))
print("ended with its graph", int(ok(cu.cuStreamEndCapture(stream))) == int(graph))
print("not capturing", cu.cuStreamUpdateCaptureDependencies(stream, [first], None, 1, 0)[0].name)
ok(cu.cuGraphDestroy(graph))
attrs = cu.CUmemcpyAttributes()
attrs.srcAccessOrder = cu.CUmemcpySrcAccessOrder.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
src, back = np.arange(256, dtype=np.uint8), np.zeros(256, np.uint8)
dev = ok(cu.cuMemAlloc(256))
host_src, host_back = cu.CUdeviceptr(src.ctypes.data), cu.CUdeviceptr(back.ctypes.data)  # host pointers
ok(cu.cuMemcpyBatchAsync([dev], [host_src], [256], 1, [attrs], [0], 1, stream))
ok(cu.cuMemcpyBatchAsync([host_back], [dev], [256], 1, [attrs], [0], 1, stream))
ok(cu.cuStreamSynchronize(stream))
print("batch copies", bool((back == src).all()))
print("batch without attributes", cu.cuMemcpyBatchAsync([dev], [host_src], [256], 1, [], [], 0, stream)[0].name)
ok(cu.cuMemFree(dev))
from pathlib import Path  # noqa: E402

cubin = Path(__file__).resolve().parents[1] / "kernels" / "test_kernels.sm_90.cubin"
module = ok(cu.cuModuleLoadData(cubin.read_bytes()))
params = cu.CUDA_KERNEL_NODE_PARAMS()
params.func = ok(cu.cuModuleGetFunction(module, b"empty"))
params.gridDimX = params.gridDimY = params.gridDimZ = 1
params.blockDimX = params.blockDimY = params.blockDimZ = 1
params.kernelParams = 0
graph = ok(cu.cuGraphCreate(0))
a = ok(cu.cuGraphAddKernelNode(graph, None, 0, params))
b = ok(cu.cuGraphAddKernelNode(graph, None, 0, params))
prio = cu.CUkernelNodeAttrID.CU_LAUNCH_ATTRIBUTE_PRIORITY
value = cu.CUkernelNodeAttrValue()
value.priority = -1  # within every device's range (H200: 0 to -5); the driver clamps others
ok(cu.cuGraphKernelNodeSetAttribute(a, prio, value))
print("node priority", ok(cu.cuGraphKernelNodeGetAttribute(a, prio)).priority)
ok(cu.cuGraphKernelNodeCopyAttributes(b, a))
print("copied priority", ok(cu.cuGraphKernelNodeGetAttribute(b, prio)).priority)
ok(cu.cuGraphDestroy(graph))
ok(cu.cuModuleUnload(module))
ok(cu.cuStreamDestroy(stream))
print("done")
