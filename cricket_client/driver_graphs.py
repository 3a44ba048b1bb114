"""CUDA graphs and stream capture of `cricket_client.driver`: cuda-python's names, arguments,
types and return tuples (re-exported by `cricket_client.driver`).

Graphs live on the server. What a graph reads or writes of client host memory (memcpy nodes
from or to host memory, captured cuMemcpyHtoDAsync/DtoHAsync) is a *slot* the client keeps:
the host object and its size. Each launch sends the current bytes of the exec's
host-to-device slots (so a launch sees the host buffer as it is when cuGraphLaunch is
called); an exec with device-to-host slots launches synchronously and writes their bytes
into the host memory before cuGraphLaunch returns. Other launches are pipelined (D6).
What a launch reads and writes is planned once, when the exec is made (`_LaunchPlan`).

Host nodes and host functions (cuGraphAddHostNode, cuLaunchHostFunc, cuStreamAddCallback)
answer CUDA_ERROR_NOT_SUPPORTED: their function would have to run on the client in the
middle of the server's stream.
"""

from __future__ import annotations

import ctypes
import itertools
import struct
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import capture_modes, host_functions
from ._args import size_t, u64, uint
from ._driver_base import _WIRE_PER_THREAD
from ._driver_base import _stream as _wire_stream
from ._enums import (
    CUgraphNodeType,
    CUmemorytype,
    CUresult,
    CUstreamCaptureStatus,
)
from ._types import Handle, as_int
from .array_types import CUDA_MEMCPY3D
from .connection import Connection, get_connection
from .host_buffers import HostBufferError, host_address, read_host, write_host
from .kernel_args import LaunchArgumentError, LaunchName, pack_kernel_params
from .known_answers import answered_here, context_answers_changed, known_current_context, rule
from .launch_batch import GRAPHS as GRAPH_LAUNCH_BATCH

__all__ = [
    "CUgraph",
    "CUgraphExec",
    "CUgraphNode",
    "CUgraphEdgeData",
    "CUDA_KERNEL_NODE_PARAMS",
    "CUDA_KERNEL_NODE_PARAMS_v2",
    "CUDA_MEMCPY3D",
    "CUDA_MEMSET_NODE_PARAMS",
    "CUDA_HOST_NODE_PARAMS",
    "GRAPH_FUNCTIONS",
]

_SUCCESS = CUresult.CUDA_SUCCESS
_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE
_NOT_SUPPORTED = CUresult.CUDA_ERROR_NOT_SUPPORTED
_KERNEL, _MEMCPY, _MEMSET = 0, 1, 2
_CHILD, _EMPTY, _WAIT, _RECORD = 4, 5, 6, 7


# -- types ----------------------------------------------------------------------------------


class CUgraph(Handle):
    __slots__ = ()


class CUgraphExec(Handle):
    __slots__ = ()


class CUgraphNode(Handle):
    __slots__ = ()


class _Params:
    """A parameter struct: attributes with cuda-python's names, default 0/None."""

    _fields: tuple[str, ...] = ()

    def __init__(self, **values: Any) -> None:
        for name in self._fields:
            setattr(self, name, values.pop(name, None if name in _OBJECT_FIELDS else 0))
        if values:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(values)}")

    def getPtr(self) -> int:
        return id(self)

    if TYPE_CHECKING:  # fields are set by name, as on cuda-python's structs

        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def __repr__(self) -> str:
        return "\n".join(f"{name} : {getattr(self, name)!r}" for name in self._fields)


_OBJECT_FIELDS = frozenset(
    {"func", "kern", "ctx", "kernelParams", "extra", "srcHost", "dstHost", "srcArray",
     "dstArray", "fn", "userData"}
)


class CUDA_KERNEL_NODE_PARAMS(_Params):
    _fields = (
        "func", "gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ",
        "sharedMemBytes", "kernelParams", "extra", "kern", "ctx",
    )


CUDA_KERNEL_NODE_PARAMS_v2 = CUDA_KERNEL_NODE_PARAMS


class CUDA_MEMSET_NODE_PARAMS(_Params):
    _fields = ("dst", "pitch", "value", "elementSize", "width", "height")


class CUDA_HOST_NODE_PARAMS(_Params):
    _fields = ("fn", "userData")


class CUgraphEdgeData(_Params):
    _fields = ("from_port", "to_port", "type")


# -- per-connection state ---------------------------------------------------------------------


@dataclass
class _HostSlot:
    obj: Any  # the host memory: a buffer object (kept alive) or an integer address
    size: int


@dataclass(frozen=True)
class _LaunchPlan:
    """What each launch of an exec reads and writes of client host memory, in the order of
    its host copies: the host object, its size, and a view of it when it is an address (the
    bytes read and written in place, no copy); buffer objects are viewed at each launch (a
    view kept would pin a bytearray's size)."""

    inputs: tuple[tuple[Any, int, memoryview | None], ...]
    outputs: tuple[tuple[Any, int, memoryview | None], ...]
    in_total: int


_NO_PLAN = _LaunchPlan((), (), 0)


def _address_view(obj: Any, size: int) -> memoryview | None:
    addr = host_address(obj)
    if not addr or not size:
        return None  # a buffer object, or NULL (refused at each launch, by name)
    return memoryview((ctypes.c_ubyte * size).from_address(addr)).cast("B")


def _plan(state: _GraphState, copies: Sequence[Any]) -> _LaunchPlan:
    sides: dict[bool, list[tuple[Any, int, memoryview | None]]] = {True: [], False: []}
    for c in copies:
        slot = state.slots[c.slot]
        sides[bool(c.to_device)].append((slot.obj, c.size, _address_view(slot.obj, c.size)))
    return _LaunchPlan(
        tuple(sides[True]), tuple(sides[False]), sum(size for _, size, _ in sides[True])
    )


@dataclass
class _GraphState:
    capturing: set[int] = field(default_factory=set)  # wire stream handles
    slots: dict[int, _HostSlot] = field(default_factory=dict)
    execs: dict[int, _LaunchPlan] = field(default_factory=dict)  # exec -> its launch plan
    lock: threading.Lock = field(default_factory=threading.Lock)


_STATES: weakref.WeakKeyDictionary[Connection, _GraphState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()
_slot_ids = itertools.count(1)


def _state(conn: Connection) -> _GraphState:
    state = _STATES.get(conn)
    if state is None:
        with _STATES_LOCK:
            state = _STATES.setdefault(conn, _GraphState())
    return state


def capturing(conn: Connection, stream: int) -> bool:
    """Whether this client began a capture on wire stream `stream` (and has not ended it)."""
    state = _STATES.get(conn)
    return state is not None and stream in state.capturing


def capturing_any(conn: Connection) -> bool:
    """Whether a capture this client began is under way."""
    state = _STATES.get(conn)
    return state is not None and bool(state.capturing)


def _slot(conn: Connection, obj: Any, size: int) -> int:
    slot = next(_slot_ids)
    _state(conn).slots[slot] = _HostSlot(obj, size)
    return slot


def capture_host_copy(
    conn: Connection, call: str, to_device: bool, dev: int, host: Any, n: int, stream: int
) -> tuple[Any]:
    """A cuMemcpyHtoDAsync/DtoHAsync on a capturing stream: a memcpy node with a host slot."""
    try:
        read_host(host, n, f"{call}: host memory")  # refused now if it is no host memory
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    slot = _slot(conn, host, n)
    params = conn.proto.graph_memcpy_params(
        dst_host=not to_device, dst=dev if to_device else slot,
        src_host=to_device, src=slot if to_device else dev, size=n,
    )
    conn.post("CU_STREAM_CAPTURE_HOST_COPY", stream, params)
    return (_SUCCESS,)


# -- helpers --------------------------------------------------------------------------------


def _out(err: int, *values: Any) -> tuple[Any, ...]:
    if err:
        try:
            code: Any = CUresult(err)
        except ValueError:
            code = err
        return (code,) + (None,) * len(values)
    return (_SUCCESS, *values)


def _fail(conn: Connection, code: Any, message: str, outputs: int) -> tuple[Any, ...]:
    conn.set_local_error(message)
    return (code,) + (None,) * outputs


def _u64(value: Any, what: str) -> int:
    number = as_int(value)
    return number if 0 <= number < 1 << 64 else u64(number, what)


def _stream(h: Any) -> int:
    return _wire_stream(h)


def _deps(call: str, deps: Sequence[Any] | None, n: Any) -> list[int]:
    count = size_t(n, f"{call}: numDependencies")
    items = list(deps or [])
    if len(items) < count:
        raise RuntimeError(f"List is too small: {len(items)} < {count}")
    return [_u64(d, f"{call}: dependencies") for d in items[:count]]


_EDGES_WHY = "edge data other than default edges (ports, programmatic dependencies) is not remoted"


def _edge_data_given(data: Sequence[Any] | None) -> bool:
    """Whether `data` (CUgraphEdgeData per dependency) asks for anything but default edges."""
    fields = ("from_port", "to_port", "type")
    return any(int(getattr(edge, name, 0) or 0) for edge in data or () for name in fields)


def _add(conn: Connection, graph: Any, deps: list[int], params: Any) -> tuple[Any, ...]:
    err, r = conn.sync("CU_GRAPH_ADD_NODE", _u64(graph, "hGraph"), deps, params)
    return _out(err, CUgraphNode(r.value) if not err else None)


def _node(conn: Connection, kind: int, value: Any = None) -> Any:
    return conn.proto.graph_node_params(kind, value)


# -- stream capture -------------------------------------------------------------------------


def cuStreamBeginCapture(hStream: Any, mode: Any) -> tuple[Any]:
    conn = get_connection()
    stream = _stream(hStream)
    err, _ = conn.sync("CU_STREAM_BEGIN_CAPTURE", stream, int(mode))
    if not err:
        _began(conn, stream, int(mode))
    return _out(err)



def cuStreamBeginCaptureToGraph(
    hStream: Any,
    hGraph: Any,
    dependencies: Sequence[Any] | None,
    dependencyData: Any,
    numDependencies: int,
    mode: Any,
) -> tuple[Any]:
    """Capture into `hGraph`; the first captured work depends on `dependencies` (default
    edges: edge data is not remoted)."""
    call = "cuStreamBeginCaptureToGraph"
    conn = get_connection()
    stream = _stream(hStream)
    deps = _deps(call, dependencies, numDependencies)
    if _edge_data_given(dependencyData):
        return _fail(conn, _NOT_SUPPORTED, f"{call}: {_EDGES_WHY}", 0)
    err, _ = conn.sync("CU_STREAM_BEGIN_CAPTURE_TO_GRAPH", stream, _u64(hGraph, "hGraph"), deps, int(mode))
    if not err:
        _began(conn, stream, int(mode))
    return _out(err)


def _began(conn: Connection, stream: int, mode: int) -> None:
    """A capture of this client began: "not capturing" answers kept elsewhere (the native
    library's, in C) are dropped."""
    _state(conn).capturing.add(stream)
    capture_modes.began(conn, stream, mode)
    context_answers_changed()


def cuStreamUpdateCaptureDependencies(
    hStream: Any, dependencies: Sequence[Any] | None, dependencyData: Any, numDependencies: int, flags: int
) -> tuple[Any]:
    """Add (flags 0) or set (1) the nodes the stream's next captured work depends on."""
    call = "cuStreamUpdateCaptureDependencies"
    conn = get_connection()
    deps = _deps(call, dependencies, numDependencies)
    if _edge_data_given(dependencyData):
        return _fail(conn, _NOT_SUPPORTED, f"{call}: {_EDGES_WHY}", 0)
    err, _ = conn.sync(
        "CU_STREAM_UPDATE_CAPTURE_DEPENDENCIES", _stream(hStream), deps, uint(flags, f"{call}: flags")
    )
    return _out(err)


def cuStreamEndCapture(hStream: Any) -> tuple[Any, CUgraph | None]:
    conn = get_connection()
    stream = _stream(hStream)
    err, r = conn.sync("CU_STREAM_END_CAPTURE", stream)
    _state(conn).capturing.discard(stream)
    if err in (0, CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED):  # the capture is over
        capture_modes.ended(conn, stream)
    return _out(err, CUgraph(r.value) if not err else None)


_NOT_CAPTURING = CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def not_capturing_here(conn: Connection, stream: int) -> bool:
    """Whether the client knows that wire stream `stream` is not capturing: a default stream,
    a context known current (so the stream is valid) and no capture of this client under way
    (a stream joins a capture only through one begun: known_answers)."""
    if stream not in (0, _WIRE_PER_THREAD) or capturing_any(conn):
        return False
    return known_current_context(conn) is not None


def cuStreamIsCapturing(hStream: Any) -> tuple[Any, Any]:
    conn = get_connection()
    stream = _stream(hStream)
    if not_capturing_here(conn, stream):
        answered_here(conn, "CU_STREAM_GET_CAPTURE_INFO")
        return (_SUCCESS, _NOT_CAPTURING)
    err, r = conn.sync("CU_STREAM_GET_CAPTURE_INFO", stream)
    return _out(err, CUstreamCaptureStatus(r.value.status) if not err else None)


def cuStreamGetCaptureInfo(hStream: Any) -> tuple[Any, ...]:
    """(err, captureStatus, id, graph, dependencies, edgeData, numDependencies)."""
    conn = get_connection()
    stream = _stream(hStream)
    if not_capturing_here(conn, stream):
        answered_here(conn, "CU_STREAM_GET_CAPTURE_INFO")
        return (_SUCCESS, _NOT_CAPTURING, 0, CUgraph(0), [], [], 0)
    err, r = conn.sync("CU_STREAM_GET_CAPTURE_INFO", stream)
    if err:
        return _out(err, None, None, None, None, None, None)
    info = r.value
    deps = [CUgraphNode(h) for h in info.dependencies]
    return (
        _SUCCESS,
        CUstreamCaptureStatus(info.status),
        info.id,
        CUgraph(info.graph),
        deps,
        [CUgraphEdgeData() for _ in deps],
        len(deps),
    )


# -- graphs and nodes -----------------------------------------------------------------------


def cuGraphCreate(flags: int) -> tuple[Any, CUgraph | None]:
    err, r = get_connection().sync("CU_GRAPH_CREATE", uint(flags, "cuGraphCreate: flags"))
    return _out(err, CUgraph(r.value) if not err else None)


def cuGraphDestroy(hGraph: Any) -> tuple[Any]:
    return _out(get_connection().sync("CU_GRAPH_DESTROY", _u64(hGraph, "hGraph"))[0])


def _kernel_params(conn: Connection, call: str, p: Any) -> tuple[int, Any]:
    """(CUresult, graph_kernel_params) of a CUDA_KERNEL_NODE_PARAMS: arguments packed as a
    launch's (D5)."""
    from .driver import _function_id

    if not hasattr(p, "func"):
        conn.set_local_error(f"{call}: nodeParams is not a CUDA_KERNEL_NODE_PARAMS")
        return int(_INVALID_VALUE), None
    fn = p.func if as_int(p.func) else p.kern
    err, func = _function_id(conn, fn)
    if err:
        return err, None
    err, layout = conn.param_layout(func)
    if err:
        return err, None
    try:
        packed = pack_kernel_params(LaunchName(call, func), layout, p.kernelParams, p.extra)
    except LaunchArgumentError as exc:
        conn.set_local_error(str(exc))
        return int(_INVALID_VALUE), None
    return 0, conn.proto.graph_kernel_params(
        function=func,
        grid_x=uint(p.gridDimX, f"{call}: gridDimX"),
        grid_y=uint(p.gridDimY, f"{call}: gridDimY"),
        grid_z=uint(p.gridDimZ, f"{call}: gridDimZ"),
        block_x=uint(p.blockDimX, f"{call}: blockDimX"),
        block_y=uint(p.blockDimY, f"{call}: blockDimY"),
        block_z=uint(p.blockDimZ, f"{call}: blockDimZ"),
        shared_mem_bytes=uint(p.sharedMemBytes, f"{call}: sharedMemBytes"),
        params=packed,
    )


def cuGraphAddKernelNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, nodeParams: Any
) -> tuple[Any, CUgraphNode | None]:
    call = "cuGraphAddKernelNode"
    conn = get_connection()
    deps = _deps(call, dependencies, numDependencies)
    if not hasattr(nodeParams, "func"):
        return _fail(conn, _INVALID_VALUE, f"{call}: nodeParams is not a CUDA_KERNEL_NODE_PARAMS", 1)
    err, kernel = _kernel_params(conn, call, nodeParams)
    if err:
        return _out(err, None)
    return _add(conn, hGraph, deps, _node(conn, _KERNEL, kernel))


def _memory_side(
    conn: Connection, call: str, side: str, p: Any
) -> tuple[bool, Any] | str:
    """(is_host, device address or host object) of a CUDA_MEMCPY3D side, or why not."""
    kind = int(getattr(p, f"{side}MemoryType") or 0)
    device, host = getattr(p, f"{side}Device"), getattr(p, f"{side}Host")
    if getattr(p, f"{side}XInBytes") or getattr(p, f"{side}Y") or getattr(p, f"{side}Z"):
        return f"{side}XInBytes/{side}Y/{side}Z offsets are not supported remotely"
    if kind == CUmemorytype.CU_MEMORYTYPE_DEVICE:
        return False, _u64(device, f"{call}: {side}Device")
    if kind == CUmemorytype.CU_MEMORYTYPE_HOST:
        return True, host
    if kind == CUmemorytype.CU_MEMORYTYPE_UNIFIED:
        addr = _u64(device, f"{call}: {side}Device")
        return (False, addr) if conn.is_device_address(addr) else (True, addr)
    return f"{side}MemoryType {kind} is not supported remotely (device, host or unified)"


def memcpy_node_params(conn: Connection, call: str, p: Any) -> Any:
    """graph_memcpy_params of a 1D CUDA_MEMCPY3D, host sides as new slots; a str says why
    it cannot be."""
    if (p.Height or 1) != 1 or (p.Depth or 1) != 1:
        return "only 1D copies (Height and Depth 1) are supported remotely"
    size = size_t(p.WidthInBytes, f"{call}: WidthInBytes")
    dst = _memory_side(conn, call, "dst", p)
    src = _memory_side(conn, call, "src", p)
    for side in (dst, src):
        if isinstance(side, str):
            return side
    assert not isinstance(dst, str) and not isinstance(src, str)
    if dst[0] and src[0]:
        return "host-to-host memcpy nodes are not supported remotely"
    try:
        if src[0]:
            read_host(src[1], size, f"{call}: srcHost")
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    return conn.proto.graph_memcpy_params(
        dst_host=dst[0], dst=_slot(conn, dst[1], size) if dst[0] else dst[1],
        src_host=src[0], src=_slot(conn, src[1], size) if src[0] else src[1],
        size=size,
    )


def cuGraphAddMemcpyNode(
    hGraph: Any,
    dependencies: Sequence[Any] | None,
    numDependencies: int,
    copyParams: Any,
    ctx: Any,
) -> tuple[Any, CUgraphNode | None]:
    call = "cuGraphAddMemcpyNode"
    conn = get_connection()
    deps = _deps(call, dependencies, numDependencies)
    if not hasattr(copyParams, "WidthInBytes"):
        return _fail(conn, _INVALID_VALUE, f"{call}: copyParams is not a CUDA_MEMCPY3D", 1)
    params = memcpy_node_params(conn, call, copyParams)
    if isinstance(params, str):
        return _fail(conn, _NOT_SUPPORTED, f"{call}: {params}", 1)
    return _add(conn, hGraph, deps, _node(conn, _MEMCPY, params))


def memset_node_params(conn: Connection, call: str, p: Any) -> Any:
    return conn.proto.graph_memset_params(
        dst=_u64(p.dst, f"{call}: dst"),
        pitch=size_t(p.pitch, f"{call}: pitch"),
        value=uint(p.value, f"{call}: value"),
        element_size=uint(p.elementSize, f"{call}: elementSize"),
        width=size_t(p.width, f"{call}: width"),
        height=size_t(p.height, f"{call}: height"),
    )


def cuGraphAddMemsetNode(
    hGraph: Any,
    dependencies: Sequence[Any] | None,
    numDependencies: int,
    memsetParams: Any,
    ctx: Any,
) -> tuple[Any, CUgraphNode | None]:
    call = "cuGraphAddMemsetNode"
    conn = get_connection()
    deps = _deps(call, dependencies, numDependencies)
    if not hasattr(memsetParams, "elementSize"):
        return _fail(
            conn, _INVALID_VALUE, f"{call}: memsetParams is not a CUDA_MEMSET_NODE_PARAMS", 1
        )
    return _add(conn, hGraph, deps, _node(conn, _MEMSET, memset_node_params(conn, call, memsetParams)))


def cuGraphAddEmptyNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int
) -> tuple[Any, CUgraphNode | None]:
    conn = get_connection()
    deps = _deps("cuGraphAddEmptyNode", dependencies, numDependencies)
    return _add(conn, hGraph, deps, _node(conn, _EMPTY))


def cuGraphAddEventRecordNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, event: Any
) -> tuple[Any, CUgraphNode | None]:
    conn = get_connection()
    deps = _deps("cuGraphAddEventRecordNode", dependencies, numDependencies)
    return _add(conn, hGraph, deps, _node(conn, _RECORD, _u64(event, "event")))


def cuGraphAddEventWaitNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, event: Any
) -> tuple[Any, CUgraphNode | None]:
    conn = get_connection()
    deps = _deps("cuGraphAddEventWaitNode", dependencies, numDependencies)
    return _add(conn, hGraph, deps, _node(conn, _WAIT, _u64(event, "event")))


def cuGraphAddChildGraphNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, childGraph: Any
) -> tuple[Any, CUgraphNode | None]:
    conn = get_connection()
    deps = _deps("cuGraphAddChildGraphNode", dependencies, numDependencies)
    return _add(conn, hGraph, deps, _node(conn, _CHILD, _u64(childGraph, "childGraph")))


def _host_functions_refused(call: str, outputs: int) -> tuple[Any, ...]:
    conn = get_connection()
    return _fail(
        conn,
        _NOT_SUPPORTED,
        f"{call}: host functions are not supported remotely (the function would have to run "
        "on the client in the middle of the server's stream); synchronize the stream and call "
        "it from the program instead",
        outputs,
    )


def cuGraphAddHostNode(
    hGraph: Any, dependencies: Sequence[Any] | None, numDependencies: int, nodeParams: Any
) -> tuple[Any, CUgraphNode | None]:
    return _host_functions_refused("cuGraphAddHostNode", 1)  # type: ignore[return-value]


def _run_on_client(call: str, hStream: Any, fn: Any, run: Callable[[int, int, int], None]) -> tuple[Any]:
    """A host function or stream callback (cricket_client.host_functions): after the stream's
    earlier work, on this thread, before the call returns; refused in a capture."""
    conn = get_connection()
    stream = _stream(hStream)
    address = host_functions.function_address(fn)
    if not address:
        return _fail(conn, _INVALID_VALUE, f"{call}: no function given", 0)  # type: ignore[return-value]
    if stream in _state(conn).capturing:
        return _host_functions_refused(call, 0)  # type: ignore[return-value]
    from .driver import cuStreamSynchronize

    err = cuStreamSynchronize(hStream)[0]
    if not err:
        run(address, as_int(hStream), 0)
    return _out(err)


def cuLaunchHostFunc(hStream: Any, fn: Any, userData: Any) -> tuple[Any]:
    """Runs `fn(userData)` once the stream's earlier work is done (host_functions)."""
    data = host_functions.user_data_address(userData)
    return _run_on_client(
        "cuLaunchHostFunc", hStream, fn, lambda f, _s, _e: host_functions.HOST_FN(f)(data)
    )


def cuLaunchHostFunc_v2(hStream: Any, fn: Any, userData: Any, syncMode: int) -> tuple[Any]:
    """As cuLaunchHostFunc (the function always runs before the call returns, so every
    CUhostTaskSyncMode is met)."""
    uint(syncMode, "cuLaunchHostFunc_v2: syncMode")
    return cuLaunchHostFunc(hStream, fn, userData)


def cuStreamAddCallback(hStream: Any, callback: Any, userData: Any, flags: int) -> tuple[Any]:
    """Runs `callback(hStream, CUDA_SUCCESS, userData)` once the stream's earlier work is done."""
    if uint(flags, "cuStreamAddCallback: flags"):
        return _fail(get_connection(), _INVALID_VALUE, "cuStreamAddCallback: flags must be 0", 0)  # type: ignore[return-value]
    data = host_functions.user_data_address(userData)
    return _run_on_client(
        "cuStreamAddCallback",
        hStream,
        callback,
        lambda f, s, status: host_functions.STREAM_CALLBACK(f)(s, status, data),
    )


def _listed(
    err: int, handles: list[int] | None, count: int, kind: type[Handle]
) -> tuple[Any, list[Any] | None, int | None]:
    """cuda-python's counts-then-arrays answer: `count` 0 gives ([], actual number); else
    `count` entries (NULL past the actual ones) and the number filled in."""
    if err or handles is None:
        return _out(err, None, None)  # type: ignore[return-value]
    actual = len(handles)
    if count == 0:
        return (_SUCCESS, [], actual)
    items = [kind(h) for h in handles[:count]] + [kind(0)] * max(count - actual, 0)
    return (_SUCCESS, items, min(count, actual))


def cuGraphGetNodes(hGraph: Any, numNodes: int = 0) -> tuple[Any, ...]:
    count = size_t(numNodes, "cuGraphGetNodes: numNodes")
    err, r = get_connection().sync("CU_GRAPH_GET_NODES", _u64(hGraph, "hGraph"))
    return _listed(err, None if err else list(r.value), count, CUgraphNode)


def cuGraphGetRootNodes(hGraph: Any, numRootNodes: int = 0) -> tuple[Any, ...]:
    count = size_t(numRootNodes, "cuGraphGetRootNodes: numRootNodes")
    err, r = get_connection().sync("CU_GRAPH_GET_ROOT_NODES", _u64(hGraph, "hGraph"))
    return _listed(err, None if err else list(r.value), count, CUgraphNode)


def cuGraphGetEdges(hGraph: Any, numEdges: int = 0) -> tuple[Any, ...]:
    """(err, from, to, edgeData, numEdges), as cuda-python 13."""
    count = size_t(numEdges, "cuGraphGetEdges: numEdges")
    err, r = get_connection().sync("CU_GRAPH_GET_EDGES", _u64(hGraph, "hGraph"))
    if err:
        return _out(err, None, None, None, None)
    froms, tos = list(r.value.from_nodes), list(r.value.to_nodes)
    _, f, n = _listed(0, froms, count, CUgraphNode)
    _, t, _ = _listed(0, tos, count, CUgraphNode)
    assert f is not None and t is not None
    return (_SUCCESS, f, t, [CUgraphEdgeData() for _ in f], n)


def cuGraphNodeGetDependencies(hNode: Any, numDependencies: int = 0) -> tuple[Any, ...]:
    count = size_t(numDependencies, "cuGraphNodeGetDependencies: numDependencies")
    err, r = get_connection().sync("CU_GRAPH_NODE_GET_DEPENDENCIES", _u64(hNode, "hNode"))
    if err:
        return _out(err, None, None, None)
    _, items, n = _listed(0, list(r.value), count, CUgraphNode)
    assert items is not None
    return (_SUCCESS, items, [CUgraphEdgeData() for _ in items], n)


def cuGraphAddDependencies(
    hGraph: Any,
    from_: Sequence[Any] | None,
    to: Sequence[Any] | None,
    edgeData: Any,
    numDependencies: int,
) -> tuple[Any]:
    call = "cuGraphAddDependencies"
    n = size_t(numDependencies, f"{call}: numDependencies")
    froms = _deps(call, from_, n)
    tos = _deps(call, to, n)
    err, _ = get_connection().sync("CU_GRAPH_ADD_DEPENDENCIES", _u64(hGraph, "hGraph"), froms, tos)
    return _out(err)


def cuGraphNodeGetType(hNode: Any) -> tuple[Any, Any]:
    err, r = get_connection().sync("CU_GRAPH_NODE_GET_TYPE", _u64(hNode, "hNode"))
    return _out(err, CUgraphNodeType(r.value) if not err else None)


def cuGraphClone(originalGraph: Any) -> tuple[Any, CUgraph | None]:
    err, r = get_connection().sync("CU_GRAPH_CLONE", _u64(originalGraph, "originalGraph"))
    return _out(err, CUgraph(r.value) if not err else None)


def cuGraphKernelNodeGetParams(hNode: Any) -> tuple[Any, Any]:
    """The node's parameters; kernelParams comes back as the packed argument bytes."""
    conn = get_connection()
    err, r = conn.sync("CU_GRAPH_NODE_GET_PARAMS", _u64(hNode, "hNode"))
    if err:
        return _out(err, None)
    if r.value.type != _KERNEL:
        return _fail(conn, _INVALID_VALUE, "cuGraphKernelNodeGetParams: not a kernel node", 1)
    k = r.value.value
    from .driver import CUfunction

    return (
        _SUCCESS,
        CUDA_KERNEL_NODE_PARAMS(
            func=CUfunction(k.function), gridDimX=k.grid_x, gridDimY=k.grid_y,
            gridDimZ=k.grid_z, blockDimX=k.block_x, blockDimY=k.block_y, blockDimZ=k.block_z,
            sharedMemBytes=k.shared_mem_bytes, kernelParams=bytes(k.params),
        ),
    )


def cuGraphKernelNodeSetParams(hNode: Any, nodeParams: Any) -> tuple[Any]:
    call = "cuGraphKernelNodeSetParams"
    conn = get_connection()
    err, kernel = _kernel_params(conn, call, nodeParams)
    if err:
        return _out(err)
    node = _node(conn, _KERNEL, kernel)
    return _out(conn.sync("CU_GRAPH_NODE_SET_PARAMS", _u64(hNode, "hNode"), node)[0])


# -- execs ----------------------------------------------------------------------------------


def cuGraphInstantiate(hGraph: Any, flags: int) -> tuple[Any, CUgraphExec | None]:
    conn = get_connection()
    flags = size_t(flags, "cuGraphInstantiate: flags")
    err, r = conn.sync("CU_GRAPH_INSTANTIATE", _u64(hGraph, "hGraph"), flags)
    if err:
        return _out(err, None)
    made = r.value
    state = _state(conn)
    with state.lock:
        state.execs[made.exec] = _plan(state, made.host_copies)
    return (_SUCCESS, CUgraphExec(made.exec))



def cuGraphExecDestroy(hGraphExec: Any) -> tuple[Any]:
    conn = get_connection()
    handle = _u64(hGraphExec, "hGraphExec")
    err, _ = conn.sync("CU_GRAPH_EXEC_DESTROY", handle)
    if not err:
        _state(conn).execs.pop(handle, None)
    return _out(err)


_LAUNCH_HEAD = struct.Struct(">QQI")  # graph_launch_args' exec and stream, host_in's length
_PADS = (b"", b"\0\0\0", b"\0\0", b"\0")
_SMALL = 1 << 16  # host bytes sent in the call's own buffer below this (copied once)
_FORGETS: list[Any] = []


def _forget_memory_answers(conn: Connection, args: tuple[Any, ...]) -> None:
    """What `Connection.post` does for CU_GRAPH_LAUNCH: a graph may free memory (free
    nodes), so the pointer answers the client knows go."""
    if not _FORGETS:
        _FORGETS.append(rule("CU_GRAPH_LAUNCH"))
    found = _FORGETS[0]
    if found is not None and found[0] < 0:
        conn.known.forget(*found[1])
        conn.known.memory_ends("CU_GRAPH_LAUNCH", args)


def cuGraphLaunch(hGraphExec: Any, hStream: Any) -> tuple[Any]:
    """Pipelined, with the current bytes of the exec's host-to-device slots; synchronous
    when the exec copies into client host memory (those bytes are then written)."""
    call = "cuGraphLaunch"
    conn = get_connection()
    if conn.mapped is not None:  # the program's writes to mapped host memory go first
        conn.mapped.push(conn)
    handle = _u64(hGraphExec, "hGraphExec")
    stream = _stream(hStream)
    plan = _state(conn).execs.get(handle, _NO_PLAN)
    try:
        pieces = [
            view if view is not None else read_host(obj, size, f"{call}: host memory of a node")
            for obj, size, view in plan.inputs
        ]
    except HostBufferError as exc:
        return _fail(conn, _INVALID_VALUE, str(exc), 0)  # type: ignore[return-value]
    if plan.outputs:
        host_in = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        err, r = conn.sync("CU_GRAPH_LAUNCH_SYNC", handle, stream, host_in)
        if err:
            return _out(err)
        return _write_outputs(conn, plan, memoryview(r.value))
    n = plan.in_total
    if n >= _SMALL or conn.replay_log.logging:  # large: sent from the host memory itself
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if conn.replay_log.logging:
            data = bytes(data)  # the log keeps the bytes of this launch
        conn.post("CU_GRAPH_LAUNCH", handle, stream, data)
        return (_SUCCESS,)
    _forget_memory_answers(conn, (handle, stream))
    # gathered as kernel launches are: a loop of launches leaves in one CU_GRAPH_LAUNCH_BATCH
    conn.post_launch(
        b"".join((_LAUNCH_HEAD.pack(handle, stream, n), *pieces, _PADS[n & 3])),
        "CU_GRAPH_LAUNCH", GRAPH_LAUNCH_BATCH,
    )
    return (_SUCCESS,)


def _write_outputs(conn: Connection, plan: _LaunchPlan, data: memoryview) -> tuple[Any]:
    """A launch's device-to-host bytes into the exec's host memory, in place."""
    offset = 0
    for obj, size, view in plan.outputs:
        if view is not None:
            view[:] = data[offset : offset + size]
        else:
            try:
                write_host(obj, data[offset : offset + size], "cuGraphLaunch: host memory of a node")
            except HostBufferError as exc:
                return _fail(conn, _INVALID_VALUE, str(exc), 0)  # type: ignore[return-value]
        offset += size
    return (_SUCCESS,)


def cuGraphExecKernelNodeSetParams(hGraphExec: Any, hNode: Any, nodeParams: Any) -> tuple[Any]:
    call = "cuGraphExecKernelNodeSetParams"
    conn = get_connection()
    err, kernel = _kernel_params(conn, call, nodeParams)
    if err:
        return _out(err)
    node = _node(conn, _KERNEL, kernel)
    return _out(
        conn.sync(
            "CU_GRAPH_EXEC_NODE_SET_PARAMS",
            _u64(hGraphExec, "hGraphExec"),
            _u64(hNode, "hNode"),
            node,
        )[0]
    )


def cuGraphExecMemsetNodeSetParams(
    hGraphExec: Any, hNode: Any, memsetParams: Any, ctx: Any
) -> tuple[Any]:
    call = "cuGraphExecMemsetNodeSetParams"
    conn = get_connection()
    if not hasattr(memsetParams, "elementSize"):
        return _fail(conn, _INVALID_VALUE, f"{call}: memsetParams is not a CUDA_MEMSET_NODE_PARAMS", 0)  # type: ignore[return-value]
    node = _node(conn, _MEMSET, memset_node_params(conn, call, memsetParams))
    return _out(
        conn.sync(
            "CU_GRAPH_EXEC_NODE_SET_PARAMS",
            _u64(hGraphExec, "hGraphExec"),
            _u64(hNode, "hNode"),
            node,
        )[0]
    )


class CUgraphExecUpdateResultInfo(_Params):
    _fields = ("result", "errorNode", "errorFromNode")


def cuGraphExecUpdate(hGraphExec: Any, hGraph: Any) -> tuple[Any, Any]:
    err, _ = get_connection().sync(
        "CU_GRAPH_EXEC_UPDATE", _u64(hGraphExec, "hGraphExec"), _u64(hGraph, "hGraph")
    )
    if err:
        return _out(err, None)  # type: ignore[return-value]
    return (_SUCCESS, CUgraphExecUpdateResultInfo(result=0))


GRAPH_FUNCTIONS = frozenset(
    name for name, value in list(globals().items()) if name.startswith("cu") and callable(value)
)
__all__ += sorted(GRAPH_FUNCTIONS) + ["CUgraphExecUpdateResultInfo"]
