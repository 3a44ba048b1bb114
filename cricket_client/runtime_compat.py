"""Runtime calls built from calls already remoted: cudaMemset3D(Async) (one 2D memset per
slice), cudaMemcpyArrayToArray (array-to-array copies cut at row ends), cudaMemcpy3DPeer(Async)
(a 3D copy when source and destination are the same device), getLocalRuntimeVersion (the
runtime that does the work is the server's), cudaGraphDestroyNode and the graph, exec and node ids (the driver's forms), cudaGraphAddNode
(the typed cudaGraphAdd*Node of the node's type), and the execution contexts of devices (their
primary contexts; green contexts are not remoted). Arguments are checked as the calls they build on
check them; each answers as its cuda-python form does.
"""

from __future__ import annotations

from typing import Any, ClassVar

from . import driver_arrays as da
from . import runtime_graph_mem_cond as rm
from . import runtime_graphs as rg
from ._args import c_int, size_t
from ._runtime_enums import cudaError_t, cudaGraphNodeType, cudaMemcpyKind
from ._types import as_int
from .array_types import cudaMemcpy3DParms
from .plain_types import ValueStruct, copy_value
from .runtime_arrays import (
    _fail,
    _ready,
    _ret,
    cudaMemcpy2DArrayToArray,
    cudaMemcpy3D,
    cudaMemcpy3DAsync,
)

__all__ = [
    "cudaMemset3D",
    "cudaMemset3DAsync",
    "cudaMemcpyArrayToArray",
    "cudaMemcpy3DPeer",
    "cudaMemcpy3DPeerAsync",
    "getLocalRuntimeVersion",
    "cudaGraphDestroyNode",
    "cudaGraphGetId",
    "cudaGraphExecGetId",
    "cudaGraphNodeGetLocalId",
    "cudaGraphNodeGetToolsId",
    "cudaGraphNodeGetContainingGraph",
    "cudaGraphNodeParams",
    "cudaGraphAddNode",
    "cudaDeviceGetExecutionCtx",
    "cudaExecutionCtxGetDevice",
    "cudaExecutionCtxGetId",
    "cudaExecutionCtxStreamCreate",
]

_SUCCESS = cudaError_t.cudaSuccess
_NOT_SUPPORTED = cudaError_t.cudaErrorNotSupported


def _memset3d(call: str, pitchedDevPtr: Any, value: int, extent: Any, stream: Any) -> tuple[Any]:
    from . import runtime

    value = c_int(value, f"{call}: value")
    pitch, ysize = size_t(pitchedDevPtr.pitch, f"{call}: pitch"), int(pitchedDevPtr.ysize)
    width = size_t(extent.width, f"{call}: extent.width")
    height = size_t(extent.height, f"{call}: extent.height")
    depth = size_t(extent.depth, f"{call}: extent.depth")
    base = as_int(pitchedDevPtr.ptr)
    for z in range(depth):
        slice_ptr = base + z * pitch * ysize
        if stream is None:
            (err,) = runtime.cudaMemset2D(slice_ptr, pitch, value, width, height)
        else:
            (err,) = runtime.cudaMemset2DAsync(slice_ptr, pitch, value, width, height, stream)
        if err != _SUCCESS:
            return (err,)
    return (_SUCCESS,)


def cudaMemset3D(pitchedDevPtr: Any, value: int, extent: Any) -> tuple[Any]:
    return _memset3d("cudaMemset3D", pitchedDevPtr, value, extent, None)


def cudaMemset3DAsync(pitchedDevPtr: Any, value: int, extent: Any, stream: Any) -> tuple[Any]:
    return _memset3d("cudaMemset3DAsync", pitchedDevPtr, value, extent, stream)


def cudaMemcpyArrayToArray(dst: Any, wOffsetDst: int, hOffsetDst: int, src: Any, wOffsetSrc: int,
                           hOffsetSrc: int, count: int, kind: Any) -> tuple[Any]:  # fmt: skip
    """`count` bytes from `src` at (wOffsetSrc bytes, hOffsetSrc rows) to `dst`, the arrays
    seen as their rows one after another (a copy may run past a row's end)."""
    c = "cudaMemcpyArrayToArray"
    count = size_t(count, f"{c}: count")
    err, conn = _ready()
    if err:
        return _ret(err)
    err, sinfo = da.array_info(conn, as_int(src))
    if err or sinfo is None:
        return _ret(err or cudaError_t.cudaErrorInvalidResourceHandle, conn=conn)
    err, dinfo = da.array_info(conn, as_int(dst))
    if err or dinfo is None:
        return _ret(err or cudaError_t.cudaErrorInvalidResourceHandle, conn=conn)
    s_at = size_t(hOffsetSrc, f"{c}: hOffsetSrc") * sinfo.row_bytes + size_t(
        wOffsetSrc, f"{c}: wOffsetSrc"
    )
    d_at = size_t(hOffsetDst, f"{c}: hOffsetDst") * dinfo.row_bytes + size_t(
        wOffsetDst, f"{c}: wOffsetDst"
    )
    while count:
        sy, sx = divmod(s_at, sinfo.row_bytes)
        dy, dx = divmod(d_at, dinfo.row_bytes)
        n = min(count, sinfo.row_bytes - sx, dinfo.row_bytes - dx)
        (err,) = cudaMemcpy2DArrayToArray(dst, dx, dy, src, sx, sy, n, 1, kind)
        if err != _SUCCESS:
            return (err,)
        s_at, d_at, count = s_at + n, d_at + n, count - n
    return (_SUCCESS,)


def _peer(call: str, p: Any, stream: Any) -> tuple[Any]:
    if p is None:
        err, conn = _ready()
        return _fail(conn, cudaError_t.cudaErrorInvalidValue, f"{call}: p is None", 0)
    if int(p.srcDevice) != int(p.dstDevice):
        err, conn = _ready()
        return _fail(
            conn, _NOT_SUPPORTED,
            f"{call}: copies between two devices (srcDevice {int(p.srcDevice)}, dstDevice "
            f"{int(p.dstDevice)}) are not supported remotely; use cudaMemcpyPeer for linear memory",
            0,
        )  # fmt: skip
    same = cudaMemcpy3DParms(kind=cudaMemcpyKind.cudaMemcpyDefault)
    for name in ("srcArray", "srcPos", "srcPtr", "dstArray", "dstPos", "dstPtr", "extent"):
        setattr(same, name, copy_value(getattr(p, name)))
    return cudaMemcpy3D(same) if stream is None else cudaMemcpy3DAsync(same, stream)


def cudaMemcpy3DPeer(p: Any) -> tuple[Any]:
    return _peer("cudaMemcpy3DPeer", p, None)


def cudaMemcpy3DPeerAsync(p: Any, stream: Any) -> tuple[Any]:
    return _peer("cudaMemcpy3DPeerAsync", p, stream)


def getLocalRuntimeVersion() -> tuple[Any, int | None]:
    """The version of the runtime that runs this program's calls: the server's."""
    from . import runtime

    return runtime.cudaRuntimeGetVersion()


def cudaGraphDestroyNode(node: Any) -> tuple[Any]:
    from . import driver_graph_nodes as dn
    from .runtime_graphs import _run

    return _run(lambda: dn.cuGraphDestroyNode(node), 0)


def _graph_call(name: str, handle: Any, outputs: int = 1) -> tuple[Any, ...]:
    from . import driver_graph_nodes as dn
    from .runtime_graphs import _run

    return _run(lambda: getattr(dn, name)(handle), outputs)


def cudaGraphGetId(hGraph: Any) -> tuple[Any, int | None]:
    return _graph_call("cuGraphGetId", hGraph)  # type: ignore[return-value]


def cudaGraphExecGetId(hGraphExec: Any) -> tuple[Any, int | None]:
    return _graph_call("cuGraphExecGetId", hGraphExec)  # type: ignore[return-value]


def cudaGraphNodeGetLocalId(hNode: Any) -> tuple[Any, int | None]:
    return _graph_call("cuGraphNodeGetLocalId", hNode)  # type: ignore[return-value]


def cudaGraphNodeGetToolsId(hNode: Any) -> tuple[Any, int | None]:
    return _graph_call("cuGraphNodeGetToolsId", hNode)  # type: ignore[return-value]


def cudaGraphNodeGetContainingGraph(hNode: Any) -> tuple[Any, Any]:
    from .runtime_graphs import cudaGraph_t

    err, graph = _graph_call("cuGraphNodeGetContainingGraph", hNode)
    return (err, None if graph is None else cudaGraph_t(int(graph)))


class _RtMemcpyNode(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"copyParams": cudaMemcpy3DParms, "ctx": 0}


class _RtChildGraph(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"graph": 0, "ownership": 0}


class _RtEventNode(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"event": 0, "ctx": 0}


class cudaGraphNodeParams(ValueStruct):
    """What cudaGraphAddNode builds: `type` names the arm that is read."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "type": cudaGraphNodeType(0), "kernel": rg.cudaKernelNodeParams, "memcpy": _RtMemcpyNode,
        "memset": rg.cudaMemsetParams, "graph": _RtChildGraph, "eventWait": _RtEventNode,
        "eventRecord": _RtEventNode, "alloc": rm.cudaMemAllocNodeParams,
        "free": rm.cudaMemFreeNodeParams, "conditional": rm.cudaConditionalNodeParams,
    }  # fmt: skip


def cudaGraphAddNode(
    graph: Any, pDependencies: Any, dependencyData: Any, numDependencies: int, nodeParams: Any
) -> tuple[Any, Any]:
    """The node of `nodeParams.type`, added as its typed call adds it; edge data and the
    types the server does not build answer cudaErrorNotSupported, named."""
    t, deps, n, p = cudaGraphNodeType, pDependencies, numDependencies, nodeParams
    kind = int(p.type)
    adders = {
        t.cudaGraphNodeTypeKernel: lambda: rg.cudaGraphAddKernelNode(graph, deps, n, p.kernel),
        t.cudaGraphNodeTypeMemcpy: lambda: rg.cudaGraphAddMemcpyNode(graph, deps, n, p.memcpy.copyParams),
        t.cudaGraphNodeTypeMemset: lambda: rg.cudaGraphAddMemsetNode(graph, deps, n, p.memset),
        t.cudaGraphNodeTypeGraph: lambda: rg.cudaGraphAddChildGraphNode(graph, deps, n, p.graph.graph),
        t.cudaGraphNodeTypeEmpty: lambda: rg.cudaGraphAddEmptyNode(graph, deps, n),
        t.cudaGraphNodeTypeWaitEvent: lambda: rg.cudaGraphAddEventWaitNode(graph, deps, n, p.eventWait.event),
        t.cudaGraphNodeTypeEventRecord: lambda: rg.cudaGraphAddEventRecordNode(graph, deps, n, p.eventRecord.event),
        t.cudaGraphNodeTypeMemAlloc: lambda: rm.cudaGraphAddMemAllocNode(graph, deps, n, p.alloc),
        t.cudaGraphNodeTypeMemFree: lambda: rm.cudaGraphAddMemFreeNode(graph, deps, n, p.free.dptr),
        t.cudaGraphNodeTypeConditional: lambda: rm.add_conditional(graph, deps, n, p.conditional),
    }  # fmt: skip
    add = adders.get(kind)  # type: ignore[call-overload]
    edges = any(int(getattr(e, "type", 0) or 0) for e in dependencyData or ())
    if add is None or edges:
        try:
            what = "edge data" if edges else f"{cudaGraphNodeType(kind).name} nodes"
        except ValueError:
            what = f"node type {kind}"
        err, conn = _ready()
        return _fail(
            conn, _NOT_SUPPORTED, f"cudaGraphAddNode: {what} are not supported remotely", 1
        )  # type: ignore[return-value]
    return add()  # type: ignore[no-any-return]


# -- execution contexts: a device's primary context ------------------------------------------


def cudaDeviceGetExecutionCtx(device: int) -> tuple[Any, Any]:
    """The primary context of `device` (retained once per connection, shared with the
    runtime's own use of it)."""
    from . import driver
    from ._types import CUdevice
    from .plain_types import cudaExecutionContext_t
    from .runtime_state import connection_state, initialize

    device = c_int(device, "cudaDeviceGetExecutionCtx: device")
    err, conn = _ready()
    if err:
        return _ret(err, None)
    state = connection_state(conn)
    with state.lock, conn.active():
        ctx = state.primary.get(device)
        if ctx is None:
            err = initialize(conn)
            if not err:
                err, ctx = driver.cuDevicePrimaryCtxRetain(CUdevice(device))
            if err or ctx is None:
                return _ret(err or cudaError_t.cudaErrorInvalidDevice, None, conn=conn)
            state.primary[device] = ctx
    return (_SUCCESS, cudaExecutionContext_t(as_int(ctx)))


def _in_context(ctx: Any, work: Any) -> tuple[Any, ...]:
    """`work()` (a driver call) with `ctx` pushed current, popped after; cudaError_t first."""
    from . import driver

    err, conn = _ready()
    if err:
        return _ret(err, None)
    (err,) = driver.cuCtxPushCurrent(driver.CUcontext(as_int(ctx)))
    if err:
        return _ret(err, None, conn=conn)
    try:
        result = work()
    finally:
        driver.cuCtxPopCurrent()
    return _ret(result[0], *result[1:], conn=conn)


def cudaExecutionCtxGetDevice(ctx: Any) -> tuple[Any, int | None]:
    from . import driver

    err, device = _in_context(ctx, driver.cuCtxGetDevice)
    return (err, None if device is None else as_int(device))


def cudaExecutionCtxGetId(ctx: Any) -> tuple[Any, int | None]:
    """An id of the context, unique in the session (its handle), once the context is found."""
    from . import driver

    err, _ = _in_context(ctx, driver.cuCtxGetDevice)
    return (err, None if err != _SUCCESS else as_int(ctx))


def cudaExecutionCtxStreamCreate(ctx: Any, flags: int, priority: int) -> tuple[Any, Any]:
    from . import driver
    from .runtime_types import cudaStream_t

    flags = c_int(flags, "cudaExecutionCtxStreamCreate: flags")
    priority = c_int(priority, "cudaExecutionCtxStreamCreate: priority")
    err, stream = _in_context(ctx, lambda: driver.cuStreamCreateWithPriority(flags, priority))
    return (err, None if stream is None else cudaStream_t(as_int(stream)))
