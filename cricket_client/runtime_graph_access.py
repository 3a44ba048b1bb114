"""Reading and changing what a graph already holds, for `cricket_client.runtime`: the runtime
forms of `cricket_client.driver_graph_access` (node parameters as cudaGraphNodeParams, typed
getters and setters, dependents, removed edges, exec flags, uploads,
cudaGraphInstantiateWithParams). Re-exported by `cricket_client.runtime`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from . import driver_graph_access as da
from . import driver_graph_nodes as dn
from . import driver_graphs as dg
from . import runtime_graphs as rg
from ._args import size_t
from ._enums import CUgraphNodeType, CUmemorytype
from ._runtime_enums import (
    cudaError_t,
    cudaGraphInstantiateResult,
    cudaGraphNodeType,
    cudaMemcpyKind,
)
from .connection import get_connection
from .plain_types import CUgraphNodeParams, ValueStruct
from .runtime_arrays import make_cudaExtent, make_cudaPitchedPtr
from .runtime_types import dim3

__all__ = [
    "cudaGraphInstantiateParams",
    "cudaGraphInstantiateParams_st",
    "cudaGraphNodeGetParams",
    "cudaGraphNodeSetParams",
    "cudaGraphExecNodeSetParams",
    "cudaGraphKernelNodeGetParams",
    "cudaGraphMemcpyNodeGetParams",
    "cudaGraphMemcpyNodeSetParams",
    "cudaGraphMemcpyNodeSetParams1D",
    "cudaGraphMemsetNodeGetParams",
    "cudaGraphMemsetNodeSetParams",
    "cudaGraphEventRecordNodeGetEvent",
    "cudaGraphEventRecordNodeSetEvent",
    "cudaGraphEventWaitNodeGetEvent",
    "cudaGraphEventWaitNodeSetEvent",
    "cudaGraphExecEventRecordNodeSetEvent",
    "cudaGraphExecEventWaitNodeSetEvent",
    "cudaGraphChildGraphNodeGetGraph",
    "cudaGraphNodeGetDependentNodes",
    "cudaGraphRemoveDependencies",
    "cudaGraphExecGetFlags",
    "cudaGraphUpload",
    "cudaGraphInstantiateWithParams",
    "cudaGraphNodeSetEnabled",
    "cudaGraphNodeGetEnabled",
    "cudaGraphExecMemcpyNodeSetParams",
    "cudaGraphExecMemcpyNodeSetParams1D",
    "cudaGraphDebugDotPrint",
    "cudaGraphNodeFindInClone",
    "cudaGraphExecChildGraphNodeSetParams",
]

_T = CUgraphNodeType
_INVALID = cudaError_t.cudaErrorInvalidValue


class cudaGraphInstantiateParams(ValueStruct):
    """cudaGraphInstantiateWithParams' in and out: flags and upload stream in, result out."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "flags": 0, "uploadStream": 0, "errNode_out": 0,
        "result_out": cudaGraphInstantiateResult(0),
    }  # fmt: skip


cudaGraphInstantiateParams_st = cudaGraphInstantiateParams


# -- node parameters, driver <-> runtime ------------------------------------------------------


def _memcpy3d_parms(p: Any) -> Any:
    """A cudaMemcpy3DParms of the driver's 1D CUDA_MEMCPY3D (host sides as their objects)."""
    from .runtime_graphs import cudaMemcpy3DParms

    size = int(p.WidthInBytes)
    host = CUmemorytype.CU_MEMORYTYPE_HOST
    src_host, dst_host = int(p.srcMemoryType) == host, int(p.dstMemoryType) == host
    out: Any = cudaMemcpy3DParms()
    out.srcPtr = make_cudaPitchedPtr(p.srcHost if src_host else p.srcDevice, size, size, 1)
    out.dstPtr = make_cudaPitchedPtr(p.dstHost if dst_host else p.dstDevice, size, size, 1)
    out.extent = make_cudaExtent(size, 1, 1)
    kinds = {
        (False, False): cudaMemcpyKind.cudaMemcpyDeviceToDevice,
        (True, False): cudaMemcpyKind.cudaMemcpyHostToDevice,
        (False, True): cudaMemcpyKind.cudaMemcpyDeviceToHost,
        (True, True): cudaMemcpyKind.cudaMemcpyHostToHost,
    }
    out.kind = kinds[(src_host, dst_host)]
    return out


def _kernel_node_params(k: Any) -> Any:
    out = rg.cudaKernelNodeParams()
    out.func = k.func
    out.gridDim = dim3(x=k.gridDimX, y=k.gridDimY, z=k.gridDimZ)
    out.blockDim = dim3(x=k.blockDimX, y=k.blockDimY, z=k.blockDimZ)
    out.sharedMemBytes, out.kernelParams = k.sharedMemBytes, k.kernelParams
    return out


def _memset_params(m: Any) -> Any:
    return rg.cudaMemsetParams(
        dst=int(m.dst), pitch=m.pitch, value=m.value, elementSize=m.elementSize, width=m.width,
        height=m.height,
    )


def _runtime_node(p: Any) -> Any:
    """A cudaGraphNodeParams of the driver's CUgraphNodeParams."""
    from . import runtime_graph_mem_cond as rm
    from .runtime_compat import cudaGraphNodeParams

    kind = int(p.type)
    out: Any = cudaGraphNodeParams()
    out.type = cudaGraphNodeType(kind)
    if kind == _T.CU_GRAPH_NODE_TYPE_KERNEL:
        out.kernel = _kernel_node_params(p.kernel)
    elif kind == _T.CU_GRAPH_NODE_TYPE_MEMCPY:
        out.memcpy.copyParams = _memcpy3d_parms(p.memcpy.copyParams)
    elif kind == _T.CU_GRAPH_NODE_TYPE_MEMSET:
        out.memset = _memset_params(p.memset)
    elif kind == _T.CU_GRAPH_NODE_TYPE_GRAPH:
        out.graph.graph = rg.cudaGraph_t(int(p.graph.graph))
    elif kind == _T.CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        out.eventWait.event = p.eventWait.event
    elif kind == _T.CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        out.eventRecord.event = p.eventRecord.event
    elif kind == _T.CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        a = p.alloc
        out.alloc = rm.cudaMemAllocNodeParams(bytesize=a.bytesize, dptr=int(a.dptr))
        out.alloc.poolProps.location.id = a.poolProps.location.id
    elif kind == _T.CU_GRAPH_NODE_TYPE_MEM_FREE:
        out.free.dptr = int(p.free.dptr)
    elif kind == _T.CU_GRAPH_NODE_TYPE_CONDITIONAL:
        c = p.conditional
        out.conditional.handle, out.conditional.type = c.handle, c.type
        out.conditional.size = c.size
        out.conditional.phGraph_out = [rg.cudaGraph_t(int(g)) for g in c.phGraph_out]
    return out


def _driver_node(call: str, p: Any) -> Any:
    """The driver's CUgraphNodeParams of a cudaGraphNodeParams (kernel, memcpy, memset, child
    graph, empty, event nodes), or (cudaError_t, why not)."""
    kind = int(p.type)
    out: Any = CUgraphNodeParams()
    if kind == _T.CU_GRAPH_NODE_TYPE_KERNEL:
        err, kernel = rg._kernel_params(get_connection(), call, p.kernel)
        if err:
            return err, None  # the message is set
        out.kernel = kernel
    elif kind == _T.CU_GRAPH_NODE_TYPE_MEMCPY:
        copy = rg.copy_params(call, p.memcpy.copyParams)
        if isinstance(copy, tuple):
            return copy
        out.memcpy.copyParams = copy
    elif kind == _T.CU_GRAPH_NODE_TYPE_MEMSET:
        out.memset = rg._memset(p.memset)
    elif kind == _T.CU_GRAPH_NODE_TYPE_GRAPH:
        out.graph.graph = p.graph.graph
    elif kind == _T.CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        out.eventWait.event = p.eventWait.event
    elif kind == _T.CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        out.eventRecord.event = p.eventRecord.event
    elif kind != _T.CU_GRAPH_NODE_TYPE_EMPTY:
        try:
            name = cudaGraphNodeType(kind).name
        except ValueError:
            name = f"node type {kind}"
        return cudaError_t.cudaErrorNotSupported, f"{call}: {name} nodes cannot be set remotely"
    out.type = _T(kind)
    return out


# -- reading and setting nodes ----------------------------------------------------------------


def cudaGraphNodeGetParams(node: Any) -> tuple[Any, Any]:
    def get() -> tuple[Any, ...]:
        err, p = da.cuGraphNodeGetParams(node)
        return err, None if err else _runtime_node(p)

    return rg._run(get, 1)


def _set_node(call: str, nodeParams: Any, apply: Any) -> tuple[Any]:
    if not hasattr(nodeParams, "eventRecord"):
        return rg._fail(_INVALID, f"{call}: nodeParams is not a cudaGraphNodeParams", 0)  # type: ignore[return-value]
    p = _driver_node(call, nodeParams)
    if isinstance(p, tuple):
        code, message = p
        if message is None:
            return rg._run(lambda: (code,), 0)  # type: ignore[return-value]
        return rg._fail(code, message, 0)  # type: ignore[return-value]
    return rg._run(lambda: apply(p), 0)  # type: ignore[return-value]


def cudaGraphNodeSetParams(node: Any, nodeParams: Any) -> tuple[Any]:
    return _set_node(
        "cudaGraphNodeSetParams", nodeParams, lambda p: dn.cuGraphNodeSetParams(node, p)
    )


def cudaGraphExecNodeSetParams(graphExec: Any, node: Any, nodeParams: Any) -> tuple[Any]:
    return _set_node(
        "cudaGraphExecNodeSetParams", nodeParams,
        lambda p: dn.cuGraphExecNodeSetParams(graphExec, node, p),
    )


def _typed_get(call: str, node: Any, kind: int, convert: Any) -> tuple[Any, Any]:
    def get() -> tuple[Any, ...]:
        err, p = da.cuGraphNodeGetParams(node)
        if err:
            return err, None
        if int(p.type) != kind:
            get_connection().set_local_error(f"{call}: node {dg._u64(node, 'node'):#x} is a {p.type.name} node")
            return _INVALID, None
        return 0, convert(p)

    return rg._run(get, 1)


def cudaGraphKernelNodeGetParams(node: Any) -> tuple[Any, Any]:
    return _typed_get("cudaGraphKernelNodeGetParams", node, dg._KERNEL, lambda p: _kernel_node_params(p.kernel))


def cudaGraphMemcpyNodeGetParams(node: Any) -> tuple[Any, Any]:
    return _typed_get("cudaGraphMemcpyNodeGetParams", node, dg._MEMCPY, lambda p: _memcpy3d_parms(p.memcpy.copyParams))


def cudaGraphMemsetNodeGetParams(node: Any) -> tuple[Any, Any]:
    return _typed_get("cudaGraphMemsetNodeGetParams", node, dg._MEMSET, lambda p: _memset_params(p.memset))


def cudaGraphMemcpyNodeSetParams(node: Any, pNodeParams: Any) -> tuple[Any]:
    copy = rg.copy_params("cudaGraphMemcpyNodeSetParams", pNodeParams)
    if isinstance(copy, tuple):
        return rg._fail(copy[0], copy[1], 0)  # type: ignore[return-value]
    return rg._run(lambda: da.cuGraphMemcpyNodeSetParams(node, copy), 0)  # type: ignore[return-value]


def cudaGraphMemcpyNodeSetParams1D(node: Any, dst: Any, src: Any, count: int, kind: Any) -> tuple[Any]:
    count = size_t(count, "cudaGraphMemcpyNodeSetParams1D: count")
    copy = rg._copy_1d(get_connection(), dst, src, count, int(kind))
    return rg._run(lambda: da.cuGraphMemcpyNodeSetParams(node, copy), 0)  # type: ignore[return-value]


def cudaGraphExecMemcpyNodeSetParams(hGraphExec: Any, node: Any, pNodeParams: Any) -> tuple[Any]:
    copy = rg.copy_params("cudaGraphExecMemcpyNodeSetParams", pNodeParams)
    if isinstance(copy, tuple):
        return rg._fail(copy[0], copy[1], 0)  # type: ignore[return-value]
    return rg._run(lambda: da.cuGraphExecMemcpyNodeSetParams(hGraphExec, node, copy, None), 0)  # type: ignore[return-value]


def cudaGraphExecMemcpyNodeSetParams1D(
    hGraphExec: Any, node: Any, dst: Any, src: Any, count: int, kind: Any
) -> tuple[Any]:
    count = size_t(count, "cudaGraphExecMemcpyNodeSetParams1D: count")
    copy = rg._copy_1d(get_connection(), dst, src, count, int(kind))
    return rg._run(lambda: da.cuGraphExecMemcpyNodeSetParams(hGraphExec, node, copy, None), 0)  # type: ignore[return-value]


def cudaGraphMemsetNodeSetParams(node: Any, pNodeParams: Any) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphMemsetNodeSetParams(node, rg._memset(pNodeParams)), 0)  # type: ignore[return-value]


def cudaGraphEventRecordNodeGetEvent(node: Any) -> tuple[Any, Any]:
    return rg._run(lambda: da.cuGraphEventRecordNodeGetEvent(node), 1)  # type: ignore[return-value]


def cudaGraphEventRecordNodeSetEvent(node: Any, event: Any) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphEventRecordNodeSetEvent(node, event), 0)  # type: ignore[return-value]


def cudaGraphEventWaitNodeGetEvent(node: Any) -> tuple[Any, Any]:
    return rg._run(lambda: da.cuGraphEventWaitNodeGetEvent(node), 1)  # type: ignore[return-value]


def cudaGraphEventWaitNodeSetEvent(node: Any, event: Any) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphEventWaitNodeSetEvent(node, event), 0)  # type: ignore[return-value]


def cudaGraphExecEventRecordNodeSetEvent(hGraphExec: Any, hNode: Any, event: Any) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphExecEventRecordNodeSetEvent(hGraphExec, hNode, event), 0)  # type: ignore[return-value]


def cudaGraphExecEventWaitNodeSetEvent(hGraphExec: Any, hNode: Any, event: Any) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphExecEventWaitNodeSetEvent(hGraphExec, hNode, event), 0)  # type: ignore[return-value]


def cudaGraphChildGraphNodeGetGraph(node: Any) -> tuple[Any, Any]:
    def get() -> tuple[Any, ...]:
        err, graph = da.cuGraphChildGraphNodeGetGraph(node)
        return err, rg._wrap(rg.cudaGraph_t, graph)

    return rg._run(get, 1)


# -- structure and execs ----------------------------------------------------------------------


def cudaGraphNodeGetDependentNodes(node: Any, pNumDependentNodes: int = 0) -> tuple[Any, ...]:
    def get() -> tuple[Any, ...]:
        err, nodes, _, n = da.cuGraphNodeGetDependentNodes(node, pNumDependentNodes)
        if err:
            return (err, None, None, None)
        items = [rg.cudaGraphNode_t(int(h)) for h in nodes]
        return (err, items, [rg.cudaGraphEdgeData() for _ in items], n)

    return rg._run(get, 3)


def cudaGraphRemoveDependencies(
    graph: Any, from_: Sequence[Any] | None, to: Sequence[Any] | None, edgeData: Any,
    numDependencies: int,
) -> tuple[Any]:
    return rg._run(  # type: ignore[return-value]
        lambda: da.cuGraphRemoveDependencies(graph, from_, to, edgeData, numDependencies), 0
    )


def cudaGraphExecGetFlags(graphExec: Any) -> tuple[Any, Any]:
    def get() -> tuple[Any, ...]:
        err, flags = da.cuGraphExecGetFlags(graphExec)
        return err, None if err else int(flags)

    return rg._run(get, 1)


def cudaGraphUpload(graphExec: Any, stream: Any) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphUpload(graphExec, 0 if stream is None else stream), 0)  # type: ignore[return-value]


def cudaGraphInstantiateWithParams(graph: Any, instantiateParams: Any) -> tuple[Any, Any]:
    call = "cudaGraphInstantiateWithParams"
    p = instantiateParams
    if not hasattr(p, "uploadStream"):
        return rg._fail(_INVALID, f"{call}: instantiateParams is not a cudaGraphInstantiateParams", 1)  # type: ignore[return-value]

    def instantiate() -> tuple[Any, ...]:
        driver_params: Any = da.CUDA_GRAPH_INSTANTIATE_PARAMS(
            flags=p.flags, hUploadStream=0 if p.uploadStream is None else p.uploadStream
        )
        err, exec_ = da.cuGraphInstantiateWithParams(graph, driver_params)
        p.result_out = cudaGraphInstantiateResult(int(driver_params.result_out))
        p.errNode_out = rg.cudaGraphNode_t(0)
        return err, rg._wrap(rg.cudaGraphExec_t, exec_)

    return rg._run(instantiate, 1)


def cudaGraphNodeSetEnabled(hGraphExec: Any, hNode: Any, isEnabled: int) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphNodeSetEnabled(hGraphExec, hNode, isEnabled), 0)  # type: ignore[return-value]


def cudaGraphNodeGetEnabled(hGraphExec: Any, hNode: Any) -> tuple[Any, Any]:
    return rg._run(lambda: da.cuGraphNodeGetEnabled(hGraphExec, hNode), 1)  # type: ignore[return-value]


def cudaGraphDebugDotPrint(graph: Any, path: Any, flags: int) -> tuple[Any]:
    return rg._run(lambda: da.cuGraphDebugDotPrint(graph, path, flags), 0)  # type: ignore[return-value]


def cudaGraphNodeFindInClone(originalNode: Any, clonedGraph: Any) -> tuple[Any, Any]:
    def find() -> tuple[Any, ...]:
        err, node = da.cuGraphNodeFindInClone(originalNode, clonedGraph)
        return err, rg._wrap(rg.cudaGraphNode_t, node)

    return rg._run(find, 1)


def cudaGraphExecChildGraphNodeSetParams(hGraphExec: Any, node: Any, childGraph: Any) -> tuple[Any]:
    return rg._run(  # type: ignore[return-value]
        lambda: da.cuGraphExecChildGraphNodeSetParams(hGraphExec, node, childGraph), 0
    )
