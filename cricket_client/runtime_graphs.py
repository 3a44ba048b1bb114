"""CUDA graphs and stream capture of `cricket_client.runtime`: cuda.bindings.runtime's names,
arguments and return tuples, over the driver forms of `cricket_client.driver_graphs` (see
there for how host memory in memcpy nodes moves). Re-exported by `cricket_client.runtime`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import driver
from . import driver_graphs as dg
from ._args import size_t, uint
from ._runtime_enums import (
    cudaError_t,
    cudaGraphNodeType,
    cudaMemcpyKind,
    cudaStreamCaptureStatus,
)
from ._types import CUfunction, as_int
from .array_types import cudaExtent, cudaMemcpy3DParms, cudaPitchedPtr, cudaPos
from .connection import Connection, get_connection
from .runtime_arrays import make_cudaExtent, make_cudaPitchedPtr, make_cudaPos
from .runtime_state import activate
from .runtime_types import as_dim3

__all__ = [
    "cudaGraph_t",
    "cudaGraphExec_t",
    "cudaGraphNode_t",
    "cudaKernelNodeParams",
    "cudaMemsetParams",
    "cudaMemcpy3DParms",
    "cudaPitchedPtr",
    "cudaPos",
    "cudaExtent",
    "cudaHostNodeParams",
    "cudaGraphEdgeData",
    "make_cudaPitchedPtr",
    "make_cudaPos",
    "make_cudaExtent",
]

_SUCCESS = cudaError_t.cudaSuccess


class cudaGraph_t(dg.CUgraph):
    __slots__ = ()


class cudaGraphExec_t(dg.CUgraphExec):
    __slots__ = ()


class cudaGraphNode_t(dg.CUgraphNode):
    __slots__ = ()


class _Struct(dg._Params):
    pass


class cudaKernelNodeParams(_Struct):
    _fields = ("func", "gridDim", "blockDim", "sharedMemBytes", "kernelParams", "extra")


class cudaMemsetParams(_Struct):
    _fields = ("dst", "pitch", "value", "elementSize", "width", "height")


class cudaHostNodeParams(_Struct):
    _fields = ("fn", "userData")


class cudaGraphEdgeData(_Struct):
    _fields = ("from_port", "to_port", "type")


# -- helpers --------------------------------------------------------------------------------


def _run(call: Callable[[], tuple[Any, ...]], outputs: int) -> tuple[Any, ...]:
    """The driver form with the runtime's context current; CUresult -> cudaError_t."""
    from .runtime import _ret

    conn = get_connection()
    err = activate(conn)
    if err:
        return _ret(err, *([None] * outputs))
    result = call()
    return _ret(result[0], *result[1:])


def _wrap(kind: type, value: Any) -> Any:
    return None if value is None else kind(int(value))


def _fail(code: cudaError_t, message: str, outputs: int) -> tuple[Any, ...]:
    from .runtime import _fail as runtime_fail

    return runtime_fail(get_connection(), code, message, outputs)


def _kernel_params(conn: Connection, call: str, p: Any) -> Any:
    """A driver CUDA_KERNEL_NODE_PARAMS of a cudaKernelNodeParams (a cudaKernel_t, CUkernel or
    CUfunction as func); (CUresult, params)."""
    from .runtime import _function

    if not hasattr(p, "func"):
        conn.set_local_error(f"{call}: pNodeParams is not a cudaKernelNodeParams")
        return int(cudaError_t.cudaErrorInvalidValue), None
    err, fn = _function(conn, p.func)
    if err:
        return err, None
    grid = as_dim3(p.gridDim, f"{call}: gridDim")
    block = as_dim3(p.blockDim, f"{call}: blockDim")
    out = dg.CUDA_KERNEL_NODE_PARAMS()
    out.func = CUfunction(fn)
    out.gridDimX, out.gridDimY, out.gridDimZ = grid
    out.blockDimX, out.blockDimY, out.blockDimZ = block
    out.sharedMemBytes = p.sharedMemBytes
    out.kernelParams = p.kernelParams
    out.extra = p.extra
    return 0, out


def _memset(p: Any) -> Any:
    if not hasattr(p, "elementSize"):
        return None
    return dg.CUDA_MEMSET_NODE_PARAMS(
        dst=p.dst, pitch=p.pitch, value=p.value, elementSize=p.elementSize, width=p.width,
        height=p.height,
    )


def _side(conn: Connection, kind: int, ptr: Any, to: bool) -> tuple[int, Any, Any]:
    """(CUmemorytype, device, host) of one side of a runtime copy."""
    host_types = (
        (cudaMemcpyKind.cudaMemcpyHostToDevice, cudaMemcpyKind.cudaMemcpyHostToHost)
        if not to
        else (cudaMemcpyKind.cudaMemcpyDeviceToHost, cudaMemcpyKind.cudaMemcpyHostToHost)
    )
    if kind == cudaMemcpyKind.cudaMemcpyDefault:
        is_host = not (_is_int(ptr) and conn.is_device_address(as_int(ptr)))
    else:
        is_host = kind in host_types
    if is_host:
        return driver.CUmemorytype.CU_MEMORYTYPE_HOST, 0, ptr
    return driver.CUmemorytype.CU_MEMORYTYPE_DEVICE, ptr, None


def _is_int(obj: Any) -> bool:
    """Whether `obj` is an address (an int or a handle), not a buffer object."""
    if isinstance(obj, bytes | bytearray | memoryview):
        return False
    try:
        as_int(obj)
    except (TypeError, ValueError):
        return False
    return True


def _copy_1d(conn: Connection, dst: Any, src: Any, count: int, kind: int) -> Any:
    p: Any = dg.CUDA_MEMCPY3D()
    p.dstMemoryType, p.dstDevice, p.dstHost = _side(conn, kind, dst, True)
    p.srcMemoryType, p.srcDevice, p.srcHost = _side(conn, kind, src, False)
    p.WidthInBytes, p.Height, p.Depth = count, 1, 1
    return p


# -- stream capture -------------------------------------------------------------------------


def cudaStreamBeginCapture(stream: Any, mode: Any) -> tuple[Any]:
    return _run(lambda: dg.cuStreamBeginCapture(stream, mode), 0)


def cudaStreamBeginCaptureToGraph(
    stream: Any, graph: Any, dependencies: Any, dependencyData: Any, numDependencies: int, mode: Any
) -> tuple[Any]:
    return _run(
        lambda: dg.cuStreamBeginCaptureToGraph(
            stream, graph, dependencies, dependencyData, numDependencies, mode
        ),
        0,
    )


def cudaStreamUpdateCaptureDependencies(
    stream: Any, dependencies: Any, dependencyData: Any, numDependencies: int, flags: int
) -> tuple[Any]:
    return _run(
        lambda: dg.cuStreamUpdateCaptureDependencies(
            stream, dependencies, dependencyData, numDependencies, flags
        ),
        0,
    )


def cudaStreamEndCapture(stream: Any) -> tuple[Any, cudaGraph_t | None]:
    def end() -> tuple[Any, ...]:
        err, graph = dg.cuStreamEndCapture(stream)
        return err, _wrap(cudaGraph_t, graph)

    return _run(end, 1)


def cudaStreamIsCapturing(stream: Any) -> tuple[Any, Any]:
    def query() -> tuple[Any, ...]:
        err, status = dg.cuStreamIsCapturing(stream)
        return err, None if status is None else cudaStreamCaptureStatus(int(status))

    return _run(query, 1)


def cudaStreamGetCaptureInfo(stream: Any) -> tuple[Any, ...]:
    def info() -> tuple[Any, ...]:
        err, status, seq, graph, deps, _, n = dg.cuStreamGetCaptureInfo(stream)
        if err:
            return (err,)
        return (
            err, cudaStreamCaptureStatus(int(status)), seq, _wrap(cudaGraph_t, graph),
            [cudaGraphNode_t(int(d)) for d in deps], [cudaGraphEdgeData() for _ in deps], n,
        )

    return _run(info, 6)


# -- graphs and nodes -----------------------------------------------------------------------


def cudaGraphCreate(flags: int) -> tuple[Any, cudaGraph_t | None]:
    flags = uint(flags, "cudaGraphCreate: flags")

    def create() -> tuple[Any, ...]:
        err, graph = dg.cuGraphCreate(flags)
        return err, _wrap(cudaGraph_t, graph)

    return _run(create, 1)


def cudaGraphDestroy(graph: Any) -> tuple[Any]:
    return _run(lambda: dg.cuGraphDestroy(graph), 0)


def _node(add: Callable[[], tuple[Any, Any]]) -> tuple[Any, ...]:
    def run() -> tuple[Any, ...]:
        err, node = add()
        return err, _wrap(cudaGraphNode_t, node)

    return _run(run, 1)


def cudaGraphAddKernelNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, pNodeParams: Any
) -> tuple[Any, cudaGraphNode_t | None]:
    call = "cudaGraphAddKernelNode"

    def add() -> tuple[Any, Any]:
        err, params = _kernel_params(get_connection(), call, pNodeParams)
        if err:
            return err, None
        return dg.cuGraphAddKernelNode(graph, pDependencies, numDependencies, params)

    return _node(add)


def copy_params(call: str, p: Any) -> Any:
    """The driver's 1D CUDA_MEMCPY3D of a cudaMemcpy3DParms, or (cudaError_t, why not)."""
    if not hasattr(p, "extent"):
        return cudaError_t.cudaErrorInvalidValue, f"{call}: pCopyParams is not a cudaMemcpy3DParms"
    if int(p.srcArray or 0) or int(p.dstArray or 0):
        return cudaError_t.cudaErrorNotSupported, f"{call}: arrays are not supported in memcpy nodes remotely"
    for pos in (p.srcPos, p.dstPos):
        if pos.x or pos.y or pos.z:
            return cudaError_t.cudaErrorNotSupported, f"{call}: srcPos/dstPos offsets are not supported remotely"
    if (p.extent.height or 1) != 1 or (p.extent.depth or 1) != 1:
        return cudaError_t.cudaErrorNotSupported, f"{call}: only 1D copies (extent height and depth 1) are supported remotely"
    count = size_t(p.extent.width, f"{call}: extent.width")
    return _copy_1d(get_connection(), p.dstPtr.ptr, p.srcPtr.ptr, count, int(p.kind))


def cudaGraphAddMemcpyNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, pCopyParams: Any
) -> tuple[Any, cudaGraphNode_t | None]:
    copy = copy_params("cudaGraphAddMemcpyNode", pCopyParams)
    if isinstance(copy, tuple):
        return _fail(copy[0], copy[1], 1)
    return _node(lambda: dg.cuGraphAddMemcpyNode(graph, pDependencies, numDependencies, copy, None))


def cudaGraphAddMemcpyNode1D(
    graph: Any,
    pDependencies: Sequence[Any] | None,
    numDependencies: int,
    dst: Any,
    src: Any,
    count: int,
    kind: Any,
) -> tuple[Any, cudaGraphNode_t | None]:
    count = size_t(count, "cudaGraphAddMemcpyNode1D: count")
    return _node(
        lambda: dg.cuGraphAddMemcpyNode(
            graph, pDependencies, numDependencies,
            _copy_1d(get_connection(), dst, src, count, int(kind)), None,
        )
    )


def cudaGraphAddMemsetNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, pMemsetParams: Any
) -> tuple[Any, cudaGraphNode_t | None]:
    return _node(
        lambda: dg.cuGraphAddMemsetNode(
            graph, pDependencies, numDependencies, _memset(pMemsetParams), None
        )
    )


def cudaGraphAddEmptyNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int
) -> tuple[Any, cudaGraphNode_t | None]:
    return _node(lambda: dg.cuGraphAddEmptyNode(graph, pDependencies, numDependencies))


def cudaGraphAddEventRecordNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, event: Any
) -> tuple[Any, cudaGraphNode_t | None]:
    return _node(lambda: dg.cuGraphAddEventRecordNode(graph, pDependencies, numDependencies, event))


def cudaGraphAddEventWaitNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, event: Any
) -> tuple[Any, cudaGraphNode_t | None]:
    return _node(lambda: dg.cuGraphAddEventWaitNode(graph, pDependencies, numDependencies, event))


def cudaGraphAddChildGraphNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, childGraph: Any
) -> tuple[Any, cudaGraphNode_t | None]:
    return _node(
        lambda: dg.cuGraphAddChildGraphNode(graph, pDependencies, numDependencies, childGraph)
    )


def _host_functions_refused(call: str, outputs: int) -> tuple[Any, ...]:
    return _fail(
        cudaError_t.cudaErrorNotSupported,
        f"{call}: host functions are not supported remotely (the function would have to run "
        "on the client in the middle of the server's stream); synchronize the stream and call "
        "it from the program instead",
        outputs,
    )


def cudaGraphAddHostNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, pNodeParams: Any
) -> tuple[Any, cudaGraphNode_t | None]:
    return _host_functions_refused("cudaGraphAddHostNode", 1)  # type: ignore[return-value]


def cudaLaunchHostFunc(stream: Any, fn: Any, userData: Any) -> tuple[Any]:
    """Runs `fn(userData)` once the stream's earlier work is done (host_functions)."""
    return _run(lambda: dg.cuLaunchHostFunc(stream, fn, userData), 0)


def cudaLaunchHostFunc_v2(stream: Any, fn: Any, userData: Any, syncMode: int) -> tuple[Any]:
    return _run(lambda: dg.cuLaunchHostFunc_v2(stream, fn, userData, syncMode), 0)


def cudaStreamAddCallback(stream: Any, callback: Any, userData: Any, flags: int) -> tuple[Any]:
    """Runs `callback(stream, cudaSuccess, userData)` once the stream's earlier work is done."""
    return _run(lambda: dg.cuStreamAddCallback(stream, callback, userData, flags), 0)


def _nodes(result: tuple[Any, ...]) -> tuple[Any, ...]:
    err, nodes, n = result
    return err, None if nodes is None else [cudaGraphNode_t(int(x)) for x in nodes], n


def cudaGraphGetNodes(graph: Any, numNodes: int = 0) -> tuple[Any, ...]:
    return _run(lambda: _nodes(dg.cuGraphGetNodes(graph, numNodes)), 2)


def cudaGraphGetRootNodes(graph: Any, pNumRootNodes: int = 0) -> tuple[Any, ...]:
    return _run(lambda: _nodes(dg.cuGraphGetRootNodes(graph, pNumRootNodes)), 2)


def cudaGraphGetEdges(graph: Any, numEdges: int = 0) -> tuple[Any, ...]:
    def edges() -> tuple[Any, ...]:
        err, froms, tos, data, n = dg.cuGraphGetEdges(graph, numEdges)
        if err:
            return (err,)
        return (
            err, [cudaGraphNode_t(int(x)) for x in froms], [cudaGraphNode_t(int(x)) for x in tos],
            [cudaGraphEdgeData() for _ in data], n,
        )

    return _run(edges, 4)


def cudaGraphNodeGetDependencies(node: Any, pNumDependencies: int = 0) -> tuple[Any, ...]:
    def deps() -> tuple[Any, ...]:
        err, items, data, n = dg.cuGraphNodeGetDependencies(node, pNumDependencies)
        if err:
            return (err,)
        return err, [cudaGraphNode_t(int(x)) for x in items], [cudaGraphEdgeData() for _ in data], n

    return _run(deps, 3)


def cudaGraphAddDependencies(
    graph: Any, from_: Sequence[Any] | None, to: Sequence[Any] | None, edgeData: Any,
    numDependencies: int,
) -> tuple[Any]:
    return _run(lambda: dg.cuGraphAddDependencies(graph, from_, to, edgeData, numDependencies), 0)


def cudaGraphNodeGetType(node: Any) -> tuple[Any, Any]:
    def kind() -> tuple[Any, ...]:
        err, t = dg.cuGraphNodeGetType(node)
        return err, None if t is None else cudaGraphNodeType(int(t))

    return _run(kind, 1)


def cudaGraphClone(originalGraph: Any) -> tuple[Any, cudaGraph_t | None]:
    def clone() -> tuple[Any, ...]:
        err, graph = dg.cuGraphClone(originalGraph)
        return err, _wrap(cudaGraph_t, graph)

    return _run(clone, 1)


def cudaGraphKernelNodeSetParams(node: Any, pNodeParams: Any) -> tuple[Any]:
    def set_params() -> tuple[Any, ...]:
        err, params = _kernel_params(get_connection(), "cudaGraphKernelNodeSetParams", pNodeParams)
        return (err,) if err else dg.cuGraphKernelNodeSetParams(node, params)

    return _run(set_params, 0)


# -- execs ----------------------------------------------------------------------------------


def cudaGraphInstantiate(graph: Any, flags: int = 0) -> tuple[Any, cudaGraphExec_t | None]:
    def instantiate() -> tuple[Any, ...]:
        err, exec_ = dg.cuGraphInstantiate(graph, flags)
        return err, _wrap(cudaGraphExec_t, exec_)

    return _run(instantiate, 1)


cudaGraphInstantiateWithFlags = cudaGraphInstantiate


def cudaGraphLaunch(graphExec: Any, stream: Any) -> tuple[Any]:
    return _run(lambda: dg.cuGraphLaunch(graphExec, 0 if stream is None else stream), 0)


def cudaGraphExecDestroy(graphExec: Any) -> tuple[Any]:
    return _run(lambda: dg.cuGraphExecDestroy(graphExec), 0)


def cudaGraphExecKernelNodeSetParams(hGraphExec: Any, node: Any, pNodeParams: Any) -> tuple[Any]:
    def set_params() -> tuple[Any, ...]:
        err, params = _kernel_params(
            get_connection(), "cudaGraphExecKernelNodeSetParams", pNodeParams
        )
        return (err,) if err else dg.cuGraphExecKernelNodeSetParams(hGraphExec, node, params)

    return _run(set_params, 0)


def cudaGraphExecMemsetNodeSetParams(hGraphExec: Any, node: Any, pNodeParams: Any) -> tuple[Any]:
    return _run(
        lambda: dg.cuGraphExecMemsetNodeSetParams(hGraphExec, node, _memset(pNodeParams), None), 0
    )


def cudaGraphExecUpdate(hGraphExec: Any, hGraph: Any) -> tuple[Any, Any]:
    return _run(lambda: dg.cuGraphExecUpdate(hGraphExec, hGraph), 1)


GRAPH_FUNCTIONS = frozenset(
    name for name, value in list(globals().items())
    if name.startswith("cuda") and callable(value) and not isinstance(value, type)
)
__all__ += sorted(GRAPH_FUNCTIONS)
