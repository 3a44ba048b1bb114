"""A `cuda.bindings.driver` program, unmodified, over driver functions the Python client remotes
that the native libcuda.so.1 exports through its generated entries: a function's name (the
server's record), graph and node ids, a node's graph, node removal, event and child graph
nodes added after their dependencies, a memset node's parameters read back, and the
managed/mapped memory calls a remote client answers NOT_SUPPORTED (with the client's reason).
One line per result, so that runs through the native library and through the Python-level
module swap compare equal.

    python native_ids_program.py CUBIN
"""

import sys

from cuda.bindings import driver as cuda


def check(result):
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cuda.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else values


check(cuda.cuInit(0))
dev = check(cuda.cuDeviceGet(0))
ctx = check(cuda.cuDevicePrimaryCtxRetain(dev))
check(cuda.cuCtxSetCurrent(ctx))
with open(sys.argv[1], "rb") as f:
    module = check(cuda.cuModuleLoadData(f.read()))
fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
name = check(cuda.cuFuncGetName(fill))
print("function name", name.decode() if isinstance(name, bytes) else name)
graph = check(cuda.cuGraphCreate(0))
first = check(cuda.cuGraphAddEmptyNode(graph, None, 0))
second = check(cuda.cuGraphAddEmptyNode(graph, [first], 1))
print("graph id is a number", isinstance(check(cuda.cuGraphGetId(graph)), int))
print("node's graph", int(check(cuda.cuGraphNodeGetContainingGraph(second))) == int(graph))
print("local ids differ", check(cuda.cuGraphNodeGetLocalId(first)) != check(cuda.cuGraphNodeGetLocalId(second)))
print("tools id is a number", isinstance(check(cuda.cuGraphNodeGetToolsId(first)), int))
check(cuda.cuGraphDestroyNode(second))
print("nodes after removal", check(cuda.cuGraphGetNodes(graph, 0))[1])
event = check(cuda.cuEventCreate(0))
child = check(cuda.cuGraphCreate(0))
check(cuda.cuGraphAddEmptyNode(child, None, 0))
record = check(cuda.cuGraphAddEventRecordNode(graph, [first], 1, event))
wait = check(cuda.cuGraphAddEventWaitNode(graph, [record], 1, event))
sub = check(cuda.cuGraphAddChildGraphNode(graph, [first, wait], 2, child))
print("node types", " ".join(check(cuda.cuGraphNodeGetType(n)).name for n in (record, wait, sub)))
buf = check(cuda.cuMemAlloc(1024))
memset = cuda.CUDA_MEMSET_NODE_PARAMS()
memset.dst, memset.pitch, memset.value = buf, 0, 7
memset.elementSize, memset.width, memset.height = 4, 256, 1
node = check(cuda.cuGraphAddMemsetNode(graph, [first], 1, memset, ctx))
got = check(cuda.cuGraphMemsetNodeGetParams(node))
print("memset params", int(got.dst) == int(buf), got.value, got.elementSize, got.width, got.height)
print("nodes", check(cuda.cuGraphGetNodes(graph, 0))[1])
exe = check(cuda.cuGraphInstantiate(graph, 0))
print("exec id is a number", isinstance(check(cuda.cuGraphExecGetId(exe)), int))
check(cuda.cuGraphExecDestroy(exe))
check(cuda.cuGraphDestroy(graph))
check(cuda.cuGraphDestroy(child))
check(cuda.cuEventDestroy(event))
check(cuda.cuMemFree(buf))
print("managed", cuda.cuMemAllocManaged(256, 1)[0].name)
print("mapped", cuda.cuMemHostGetDevicePointer(0, 0)[0].name)
check(cuda.cuModuleUnload(module))
print("done")
