"""A `cuda.bindings.driver` program, unmodified, over reading and changing what a graph holds:
cuGraphNodeGetParams of memset, copy, event and child-graph nodes, the typed memset/memcpy
setters, event node getters and setters (graph and exec), a node's dependents, removed edges,
an exec's flags and an upload. One line per result, so that runs through the native library
and through the Python-level module swap compare equal.

    python native_graph_access_program.py
"""

import ctypes
import os
import sys
import tempfile

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


def memset_params(dst, value):
    p = cuda.CUDA_MEMSET_NODE_PARAMS()
    p.dst, p.value, p.elementSize, p.width, p.height = dst, value, 1, 64, 1
    return p


check(cuda.cuInit(0))
dev = check(cuda.cuDeviceGet(0))
ctx = check(cuda.cuDevicePrimaryCtxRetain(dev))
check(cuda.cuCtxSetCurrent(ctx))
stream = check(cuda.cuStreamCreate(0))
a, b = check(cuda.cuMemAlloc(64)), check(cuda.cuMemAlloc(64))
check(cuda.cuMemsetD8(b, 0, 64))
first, second = check(cuda.cuEventCreate(0)), check(cuda.cuEventCreate(0))

graph = check(cuda.cuGraphCreate(0))
one = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 1), ctx))
two = check(cuda.cuGraphAddMemsetNode(graph, [one], 1, memset_params(a, 2), ctx))
copy = cuda.CUDA_MEMCPY3D()
copy.srcMemoryType = copy.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
copy.srcDevice, copy.dstDevice, copy.WidthInBytes, copy.Height, copy.Depth = a, b, 64, 1, 1
copy_node = check(cuda.cuGraphAddMemcpyNode(graph, [two], 1, copy, ctx))
record = check(cuda.cuGraphAddEventRecordNode(graph, [copy_node], 1, first))
child = check(cuda.cuGraphCreate(0))
check(cuda.cuGraphAddEmptyNode(child, None, 0))
child_node = check(cuda.cuGraphAddChildGraphNode(graph, [record], 1, child))

got = check(cuda.cuGraphNodeGetParams(one))
print("memset node", int(got.type), got.memset.value, got.memset.width, int(got.memset.dst) == int(a))
got = check(cuda.cuGraphNodeGetParams(copy_node))
c = got.memcpy.copyParams
print("copy node", int(got.type), c.WidthInBytes, int(c.srcDevice) == int(a), int(c.dstDevice) == int(b))
got = check(cuda.cuGraphNodeGetParams(record))
print("record node", int(got.type), int(got.eventRecord.event) == int(first))
inner = check(cuda.cuGraphChildGraphNodeGetGraph(child_node))
print("child graph", int(check(cuda.cuGraphNodeGetParams(child_node)).graph.graph) == int(inner),
      check(cuda.cuGraphGetNodes(inner, 0))[1])
nodes, _, n = check(cuda.cuGraphNodeGetDependentNodes(one, 2))
print("dependents", n, int(nodes[0]) == int(two), int(nodes[1]))

check(cuda.cuGraphRemoveDependencies(graph, [one], [two], None, 1))
check(cuda.cuGraphAddDependencies(graph, [two], [one], None, 1))
check(cuda.cuGraphAddDependencies(graph, [one], [copy_node], None, 1))
check(cuda.cuGraphMemsetNodeSetParams(one, memset_params(a, 4)))
print("memset set", check(cuda.cuGraphMemsetNodeGetParams(one)).value)
copy.WidthInBytes = 32
check(cuda.cuGraphMemcpyNodeSetParams(copy_node, copy))
print("copy set", check(cuda.cuGraphMemcpyNodeGetParams(copy_node)).WidthInBytes)
check(cuda.cuGraphEventRecordNodeSetEvent(record, second))
print("record event set", int(check(cuda.cuGraphEventRecordNodeGetEvent(record))) == int(second))

upload = int(cuda.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)
exe = check(cuda.cuGraphInstantiate(graph, upload))
print("exec flags", int(check(cuda.cuGraphExecGetFlags(exe))))
check(cuda.cuGraphExecEventRecordNodeSetEvent(exe, record, first))
check(cuda.cuGraphUpload(exe, stream))
check(cuda.cuGraphLaunch(exe, stream))
check(cuda.cuStreamSynchronize(stream))
print("launched", read(b, 64)[30:34])
check(cuda.cuGraphNodeSetEnabled(exe, copy_node, 0))
print("enabled", check(cuda.cuGraphNodeGetEnabled(exe, copy_node)), check(cuda.cuGraphNodeGetEnabled(exe, one)))
check(cuda.cuMemsetD8(b, 0, 64))
check(cuda.cuGraphLaunch(exe, stream))
check(cuda.cuStreamSynchronize(stream))
print("copy disabled", read(b, 64)[30:34])
check(cuda.cuGraphNodeSetEnabled(exe, copy_node, 1))
c = check(cuda.cuMemAlloc(64))
check(cuda.cuMemsetD8(c, 0, 64))
copy.dstDevice = c
check(cuda.cuGraphExecMemcpyNodeSetParams(exe, copy_node, copy, ctx))
check(cuda.cuGraphLaunch(exe, stream))
check(cuda.cuStreamSynchronize(stream))
print("exec copy set", read(c, 64)[30:34], read(b, 64)[30:34])
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "graph.dot")
    check(cuda.cuGraphDebugDotPrint(graph, path.encode(), 0))
    with open(path) as f:
        print("dot", f.read().startswith("digraph"))
clone = check(cuda.cuGraphClone(graph))
found = check(cuda.cuGraphNodeFindInClone(copy_node, clone))
print("found in clone", int(check(cuda.cuGraphNodeGetContainingGraph(found))) == int(clone))
other = check(cuda.cuGraphCreate(0))
check(cuda.cuGraphAddEmptyNode(other, None, 0))
err = cuda.cuGraphExecChildGraphNodeSetParams(exe, child_node, other)[0]
print("exec child set", err == cuda.CUresult.CUDA_SUCCESS)
print("done")
