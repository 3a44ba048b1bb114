"""The Python side of the native library for the later families (families.py): memory pools,
virtual memory, graphs and capture, context flags, arrays and 2D/3D copies, peers.

Most entries are generated (_entries_generated.py, by tools/gen_mirrors.py): outputs (non-const
pointers to a number or handle) are written from the result tuple of the `cricket_client.driver`
function of the same name (ABI suffix dropped), structs are read field by field through a
StructView that gives their pointers as integers (NULL as None, as cuda-python's structs
default), and everything else is passed as is. What does not fit that shape is written by hand
here (docs/internals.md says why for each).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from .. import driver
from .._enums import CUdevResourceType
from .._types import as_int
from ..connection import get_connection as _conn
from ..driver_flags import _STREAM_FIELDS
from ..driver_graphs import CUDA_KERNEL_NODE_PARAMS
from ..driver_tail import CUtensorMap
from ..launch_types import CLUSTER_DIMENSION, PREFERRED_CLUSTER_DIMENSION, SCALAR_FIELDS
from ..resource_types import CUdevResource
from .entries import (
    INVALID_VALUE,
    SUCCESS,
    _entry,
    _err,
    _func,
    _ints,
    _known,
    _no_capture_epoch,
    _words,
    ffi,
)

__all__ = ["StructView", "_write_struct"]

_KERNEL_NODE = ffi.typeof("CUDA_KERNEL_NODE_PARAMS")
_U64_POOL_ATTRS = frozenset({4, 5, 6, 7, 8, 13})  # CUmemPool_attribute values held as cuuint64_t


class StructView:
    """A C struct read as cuda-python's struct objects are: numbers as ints, pointers and
    handles as integer addresses (NULL as None), nested structs as views."""

    __slots__ = ("_c",)

    def __init__(self, cdata: Any) -> None:
        self._c = cdata

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._c, name)
        if isinstance(value, ffi.CData):
            kind = ffi.typeof(value).kind
            if kind == "pointer":
                return int(ffi.cast("uintptr_t", value)) or None
            if kind in ("struct", "union"):
                if ffi.typeof(value) is _KERNEL_NODE:  # kernelParams laid out by the function
                    return _kernel_node(value)
                return StructView(value)
            if kind == "array":
                return list(value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        """What a driver function writes back into the caller's struct (cuGraphAddNode's
        allocation address and body graphs): numbers and handles as integers; a list for a
        pointer field becomes an array the library owns (CUDA owns phGraph_out's)."""
        if name == "_c":
            object.__setattr__(self, name, value)
            return
        field = ffi.typeof(self._c).fields if ffi.typeof(self._c).kind != "pointer" else \
            ffi.typeof(self._c).item.fields
        ctype = dict(field)[name].type
        if ctype.kind == "pointer" and isinstance(value, list | tuple):
            array = ffi.new(f"{ffi.getctype(ctype.item)}[]", max(len(value), 1))
            for i, item in enumerate(value):
                array[i] = ffi.cast(ctype.item, as_int(item)) if ctype.item.kind == "pointer" \
                    else as_int(item)
            _OWNED[int(ffi.cast("uintptr_t", ffi.addressof(self._c, name)))] = array
            setattr(self._c, name, array)
        elif ctype.kind == "pointer":
            setattr(self._c, name, ffi.cast(ctype, 0 if value is None else as_int(value)))
        elif ctype.kind == "primitive" and ctype.cname in ("float", "double"):
            setattr(self._c, name, float(value))
        else:
            setattr(self._c, name, _number(0 if value is None else value))


# Arrays handed out inside a caller's struct (a conditional node's body graphs), by the address
# of the field holding them: kept while that field may still point to them.
_OWNED: dict[int, Any] = {}


def _write_struct(out: Any, value: Any) -> None:
    """Fill the caller's C struct `out` (zeroed first) from a driver function's answer, field
    by field as cuda-python's struct objects name them (nested structs alike)."""
    ctype = ffi.typeof(out)
    if ctype.kind == "pointer":
        ffi.memmove(out, bytes(ffi.sizeof(ctype.item)), ffi.sizeof(ctype.item))
        out = out[0]
    _fill_struct(out, value)


def _fill_struct(out: Any, value: Any) -> None:
    view = StructView(out)
    for name, field in ffi.typeof(out).fields:
        if not name or name.startswith("reserved"):
            continue
        try:
            got = getattr(value, name)
        except AttributeError:
            continue
        if field.type.kind in ("struct", "union"):
            _fill_struct(getattr(out, name), got)
        elif field.type.kind != "array":
            if field.type.kind == "pointer" and got is not None and not isinstance(got, int):
                try:
                    as_int(got)
                except (TypeError, ValueError):
                    continue  # a host object of a Python caller: no address to give
            setattr(view, name, got)


def _number(value: Any) -> int:
    return int(value) if isinstance(value, bool) else as_int(value)


def _uuid(value: Any) -> bytes:
    """The 16 bytes of a CUuuid."""
    return bytes(value.bytes)


# -- written by hand --------------------------------------------------------------------------


@_entry
def cuMemPoolGetAttribute(pool: int, attr: int, value: int) -> int:
    if not value:
        return INVALID_VALUE
    err, got = driver.cuMemPoolGetAttribute(pool, attr)
    if not err:
        ctype = "unsigned long long *" if attr in _U64_POOL_ATTRS else "int *"
        ffi.cast(ctype, value)[0] = _number(got)
    return int(err)


@_entry
def cuMemPoolSetAttribute(pool: int, attr: int, value: int) -> int:
    if not value:
        return INVALID_VALUE
    ctype = "unsigned long long *" if attr in _U64_POOL_ATTRS else "int *"
    return _err(driver.cuMemPoolSetAttribute(pool, attr, ffi.cast(ctype, value)[0]))


def _descs(desc: Any, count: int) -> list[StructView] | None:
    if count and desc == ffi.NULL:
        return None
    return [StructView(desc[i]) for i in range(count)]


@_entry
def cuMemPoolSetAccess(pool: int, desc: Any, count: int) -> int:
    descs = _descs(desc, count)
    return INVALID_VALUE if descs is None else _err(driver.cuMemPoolSetAccess(pool, descs, count))


@_entry
def cuMemSetAccess(ptr: int, size: int, desc: Any, count: int) -> int:
    descs = _descs(desc, count)
    return INVALID_VALUE if descs is None else _err(driver.cuMemSetAccess(ptr, size, descs, count))


@_entry
def cuMemGetAllocationPropertiesFromHandle(prop: Any, handle: int) -> int:
    if prop == ffi.NULL:
        return INVALID_VALUE
    err, got = driver.cuMemGetAllocationPropertiesFromHandle(handle)
    if not err and got is not None:
        prop.type = int(got.type)
        prop.requestedHandleTypes = int(got.requestedHandleTypes)
        prop.location.type = int(got.location.type)
        prop.location.id = int(got.location.id)
        prop.allocFlags.compressionType = int(got.allocFlags.compressionType)
        prop.allocFlags.gpuDirectRDMACapable = int(got.allocFlags.gpuDirectRDMACapable)
        prop.allocFlags.usage = int(got.allocFlags.usage)
    return int(err)


# What cuStreamGetCaptureInfo handed out, per stream: valid until the next call on that stream
# (CUDA: until the next capture call on it).
_capture_arrays: dict[int, tuple[Any, Any]] = {}


def _capture_info(stream: int, status: Any, ident: Any, graph: Any, deps: Any, edges: Any, count: Any) -> int:
    epoch = _no_capture_epoch(stream)
    err, st, number, g, nodes, _edge_data, n = driver.cuStreamGetCaptureInfo(stream)
    if err:
        return int(err)
    if epoch is not None and status != ffi.NULL:
        _known.note_no_capture(epoch)
    handles = [as_int(h) for h in nodes]
    if handles:
        kept = _capture_arrays[stream] = (
            ffi.new("uintptr_t[]", handles), ffi.new("CUgraphEdgeData[]", len(handles))
        )
    else:  # nothing handed out (the common case: no capture): nothing to allocate
        _capture_arrays.pop(stream, None)
    if status != ffi.NULL:
        status[0] = int(st)
    if ident != ffi.NULL:
        ident[0] = int(number)
    if graph != ffi.NULL:
        graph[0] = as_int(g)
    if deps != ffi.NULL:
        deps[0] = int(ffi.cast("uintptr_t", kept[0])) if handles else 0
    if edges is not None and edges != ffi.NULL:
        edges[0] = kept[1] if handles else ffi.NULL
    if count != ffi.NULL:
        count[0] = len(handles)
    return SUCCESS


@_entry
def cuStreamGetCaptureInfo_v2(stream: int, status: Any, ident: Any, graph: Any, deps: Any, count: Any) -> int:
    return _capture_info(stream, status, ident, graph, deps, None, count)


@_entry
def cuStreamGetCaptureInfo_v3(
    stream: int, status: Any, ident: Any, graph: Any, deps: Any, edges: Any, count: Any
) -> int:
    return _capture_info(stream, status, ident, graph, deps, edges, count)


def _listing(call: Callable[..., tuple[Any, ...]], graph: int, nodes: Any, count: Any) -> int:
    """CUDA's counts-then-arrays: nodes NULL gives the number; else up to *count entries (NULL
    past the actual ones) and the number filled in."""
    if count == ffi.NULL:
        return INVALID_VALUE
    asked = 0 if nodes == ffi.NULL else int(count[0])
    err, items, n = call(graph, asked)
    if err:
        return int(err)
    for i, item in enumerate(items or []):
        nodes[i] = as_int(item)
    count[0] = n
    return SUCCESS


@_entry
def cuGraphGetNodes(graph: int, nodes: Any, count: Any) -> int:
    return _listing(driver.cuGraphGetNodes, graph, nodes, count)


@_entry
def cuGraphGetRootNodes(graph: int, nodes: Any, count: Any) -> int:
    return _listing(driver.cuGraphGetRootNodes, graph, nodes, count)


def _handles(array: Any, count: int) -> list[int]:
    """An array of `count` handles (a generated entry checked it is not NULL)."""
    return list(ffi.unpack(array, count)) if count else []


def _deps(deps: Any, count: int) -> list[int] | None:
    if count and deps == ffi.NULL:
        return None
    return _handles(deps, count)


def _add(call: Callable[..., tuple[Any, ...]], out: Any, graph: int, deps: Any, count: int, *rest: Any) -> int:
    nodes = _deps(deps, count)
    if out == ffi.NULL or nodes is None:
        return INVALID_VALUE
    err, node = call(graph, nodes, len(nodes), *rest)
    if not err:
        out[0] = as_int(node)
    return int(err)


@_entry
def cuGraphAddKernelNode_v2(out: Any, graph: int, deps: Any, count: int, p: Any) -> int:
    if p == ffi.NULL:
        return INVALID_VALUE
    return _add(driver.cuGraphAddKernelNode, out, graph, deps, count, _kernel_node(p))


def _add_node(out: Any, graph: int, deps: Any, edges: Any, count: int, p: Any) -> int:
    if p == ffi.NULL:
        return INVALID_VALUE
    data = None if edges == ffi.NULL else [StructView(edges[i]) for i in range(count)]

    def add(graph: int, nodes: list[int], n: int, params: Any) -> tuple[Any, ...]:
        return driver.cuGraphAddNode(graph, nodes, data, n, params)

    return _add(add, out, graph, deps, count, StructView(p))


@_entry
def cuGraphAddNode(out: Any, graph: int, deps: Any, count: int, p: Any) -> int:
    return _add_node(out, graph, deps, ffi.NULL, count, p)


@_entry
def cuGraphAddNode_v2(out: Any, graph: int, deps: Any, edges: Any, count: int, p: Any) -> int:
    return _add_node(out, graph, deps, edges, count, p)


@_entry
def cuDeviceSetGraphMemAttribute(device: int, attr: int, value: int) -> int:
    if not value:
        return INVALID_VALUE
    return _err(driver.cuDeviceSetGraphMemAttribute(device, attr, ffi.cast("cuuint64_t *", value)[0]))


# -- device resources: the server's id kept in the struct's internal bytes -------------------

_SM_FIELDS = ("smCount", "minSmPartitionSize", "smCoscheduledAlignment", "flags")


def _resource(c: Any) -> CUdevResource:
    ident = int.from_bytes(bytes(c._internal_padding[0:8]), "little")
    r = CUdevResource(type=CUdevResourceType(c.type), _resource_id=ident)
    for name in _SM_FIELDS:
        setattr(r.sm, name, getattr(c.sm, name))  # type: ignore[attr-defined]
    return r


def _write_resource_struct(out: Any, r: Any) -> None:
    ffi.memmove(ffi.addressof(out), bytes(ffi.sizeof("CUdevResource")), ffi.sizeof("CUdevResource"))
    out.type = int(r.type)
    ident = int(getattr(r, "_resource_id", 0))
    ffi.memmove(out._internal_padding, ident.to_bytes(8, "little"), 8)
    for name in _SM_FIELDS:
        setattr(out.sm, name, int(getattr(r.sm, name)))


@_entry
def cuDeviceGetDevResource(device: int, out: Any, kind: int) -> int:
    return _resource_of(driver.cuDeviceGetDevResource, device, out, kind)


def _resource_of(call: Callable[..., tuple[Any, ...]], handle: int, out: Any, kind: int) -> int:
    if out == ffi.NULL:
        return INVALID_VALUE
    err, got = call(handle, kind)
    if not err:
        _write_resource_struct(out[0], got)
    return int(err)


@_entry
def cuCtxGetDevResource(ctx: int, out: Any, kind: int) -> int:
    return _resource_of(driver.cuCtxGetDevResource, ctx, out, kind)


@_entry
def cuGreenCtxGetDevResource(ctx: int, out: Any, kind: int) -> int:
    return _resource_of(driver.cuGreenCtxGetDevResource, ctx, out, kind)


@_entry
def cuDevResourceGenerateDesc(out: Any, resources: Any, count: int) -> int:
    if out == ffi.NULL or (count and resources == ffi.NULL):
        return INVALID_VALUE
    err, desc = driver.cuDevResourceGenerateDesc([_resource(resources[i]) for i in range(count)], count)
    if not err:
        out[0] = as_int(desc)
    return int(err)


@_entry
def cuDevSmResourceSplitByCount(
    result: Any, groups: Any, input_: Any, remaining: Any, flags: int, min_count: int
) -> int:
    if groups == ffi.NULL or input_ == ffi.NULL or (groups[0] and result == ffi.NULL):
        return INVALID_VALUE
    err, made, count, rest = driver.cuDevSmResourceSplitByCount(
        groups[0], _resource(input_[0]), flags, min_count
    )
    if err:
        return int(err)
    if result != ffi.NULL:
        for i, group in enumerate(made[: groups[0]]):
            _write_resource_struct(result[i], group)
    groups[0] = int(count)
    if remaining != ffi.NULL:
        _write_resource_struct(remaining[0], rest)
    return SUCCESS


# -- batches of stream memory operations, tensor maps, enumerations, libraries from files -----


@_entry
def cuStreamBatchMemOp_v2(stream: int, count: int, params: Any, flags: int) -> int:
    if count and params == ffi.NULL:
        return INVALID_VALUE
    ops = [StructView(params[i]) for i in range(count)]
    return _err(driver.cuStreamBatchMemOp(stream, count, ops, flags))


def _tensor_map(out: Any, result: tuple[Any, ...]) -> int:
    err, got = result
    if not err:
        ffi.memmove(out, bytes(got), 128)
    return int(err)


def _array(values: Any, count: int) -> list[int] | None:
    return None if values == ffi.NULL else list(ffi.unpack(values, count))


@_entry
def cuTensorMapEncodeTiled(
    out: Any, kind: int, rank: int, address: int, dims: Any, strides: Any, box: Any,
    element_strides: Any, interleave: int, swizzle: int, promotion: int, fill: int,
) -> int:  # fmt: skip
    if out == ffi.NULL:
        return INVALID_VALUE
    return _tensor_map(out, driver.cuTensorMapEncodeTiled(
        kind, rank, address, _array(dims, rank), _array(strides, max(rank - 1, 0)),
        _array(box, rank), _array(element_strides, rank), interleave, swizzle, promotion, fill,
    ))  # fmt: skip


@_entry
def cuTensorMapEncodeIm2col(
    out: Any, kind: int, rank: int, address: int, dims: Any, strides: Any, lower: Any,
    upper: Any, channels: int, pixels: int, element_strides: Any, interleave: int, swizzle: int,
    promotion: int, fill: int,
) -> int:  # fmt: skip
    if out == ffi.NULL:
        return INVALID_VALUE
    corners = max(rank - 2, 0)
    return _tensor_map(out, driver.cuTensorMapEncodeIm2col(
        kind, rank, address, _array(dims, rank), _array(strides, max(rank - 1, 0)),
        _array(lower, corners), _array(upper, corners), channels, pixels,
        _array(element_strides, rank), interleave, swizzle, promotion, fill,
    ))  # fmt: skip


@_entry
def cuTensorMapReplaceAddress(tensor_map: Any, address: int) -> int:
    if tensor_map == ffi.NULL:
        return INVALID_VALUE
    mine = CUtensorMap()
    mine._set(bytes(ffi.buffer(tensor_map, 128)))
    err = _err(driver.cuTensorMapReplaceAddress(mine, address))
    if not err:
        ffi.memmove(tensor_map, bytes(mine), 128)
    return err


def _enumerate(call: Callable[..., tuple[Any, ...]], out: Any, count: int, owner: int) -> int:
    if count and out == ffi.NULL:
        return INVALID_VALUE
    err, got = call(count, owner)
    if not err:
        for i, handle in enumerate((got or [])[:count]):
            out[i] = ffi.cast(ffi.typeof(out).item, as_int(handle))
    return int(err)


@_entry
def cuModuleEnumerateFunctions(out: Any, count: int, module: int) -> int:
    return _enumerate(driver.cuModuleEnumerateFunctions, out, count, module)


@_entry
def cuLibraryEnumerateKernels(out: Any, count: int, library: int) -> int:
    return _enumerate(driver.cuLibraryEnumerateKernels, out, count, library)


@_entry
def cuLibraryLoadFromFile(
    library: Any, path: Any, jit_options: Any, jit_values: int, n_jit: int, lib_options: Any,
    lib_values: int, n_lib: int,
) -> int:  # fmt: skip
    if library == ffi.NULL or path == ffi.NULL:
        return INVALID_VALUE
    jo, lo = _ints(jit_options, n_jit), _ints(lib_options, n_lib)
    err, got = driver.cuLibraryLoadFromFile(
        ffi.string(path), jo, _words(jit_values, len(jo)), len(jo), lo,
        _words(lib_values, len(lo)), len(lo),
    )  # fmt: skip
    if not err:
        library[0] = as_int(got)
    return int(err)


@_entry
def cuMemRangeGetAttribute(data: int, size: int, attribute: int, ptr: int, count: int) -> int:
    return _err(driver.cuMemRangeGetAttribute(size, attribute, ptr, count))  # refused by the client


# -- occupancy of clusters, stream attributes ------------------------------------------------


def _cluster(call: Callable[..., tuple[Any, ...]], out: Any, func: int, config: Any) -> int:
    if out == ffi.NULL or config == ffi.NULL:
        return INVALID_VALUE
    err, value = call(_func(func), launch_config(config))
    if not err:
        out[0] = int(value)
    return int(err)


@_entry
def cuOccupancyMaxActiveClusters(out: Any, func: int, config: Any) -> int:
    return _cluster(driver.cuOccupancyMaxActiveClusters, out, func, config)


@_entry
def cuOccupancyMaxPotentialClusterSize(out: Any, func: int, config: Any) -> int:
    return _cluster(driver.cuOccupancyMaxPotentialClusterSize, out, func, config)


@_entry
def cuStreamGetAttribute(stream: int, attr: int, value: int) -> int:
    """The scalar stream attributes (the union's first 4 bytes), as the driver module has them."""
    if not value:
        return INVALID_VALUE
    err, got = driver.cuStreamGetAttribute(stream, attr)
    if not err:
        field = _STREAM_FIELDS.get(attr)
        ffi.cast("int *", value)[0] = int(getattr(got, field)) if field else 0
    return int(err)


@_entry
def cuStreamSetAttribute(stream: int, attr: int, value: int) -> int:
    if not value:
        return INVALID_VALUE
    field = _STREAM_FIELDS.get(attr)
    given = SimpleNamespace(**{field: ffi.cast("int *", value)[0]}) if field else SimpleNamespace()
    return _err(driver.cuStreamSetAttribute(stream, attr, given))


# -- array descriptors, graph edits -----------------------------------------------------------


def _descriptor(call: Callable[..., tuple[Any, ...]], out: Any, array: int, fields: tuple[str, ...]) -> int:
    if out == ffi.NULL:
        return INVALID_VALUE
    err, got = call(array)
    if not err and got is not None:
        for name in fields:
            setattr(out, name, int(getattr(got, name)))
    return int(err)


@_entry
def cuArrayGetDescriptor_v2(out: Any, array: int) -> int:
    return _descriptor(driver.cuArrayGetDescriptor, out, array, ("Width", "Height", "Format", "NumChannels"))


@_entry
def cuArray3DGetDescriptor_v2(out: Any, array: int) -> int:
    fields = ("Width", "Height", "Depth", "Format", "NumChannels", "Flags")
    return _descriptor(driver.cuArray3DGetDescriptor, out, array, fields)


def _kernel_node(p: Any) -> CUDA_KERNEL_NODE_PARAMS:
    v = StructView(p)
    return CUDA_KERNEL_NODE_PARAMS(
        func=_func(v.func or v.kern or 0),
        gridDimX=v.gridDimX, gridDimY=v.gridDimY, gridDimZ=v.gridDimZ,
        blockDimX=v.blockDimX, blockDimY=v.blockDimY, blockDimZ=v.blockDimZ,
        sharedMemBytes=v.sharedMemBytes, kernelParams=v.kernelParams, extra=v.extra,
    )  # fmt: skip


# What cuGraphKernelNodeGetParams handed out per node: the argument bytes and the void *[] into
# them (CUDA: valid while the node's parameters are unchanged).
_node_params: dict[int, tuple[Any, Any]] = {}


@_entry
def cuGraphKernelNodeGetParams_v2(node: int, out: Any) -> int:
    if out == ffi.NULL:
        return INVALID_VALUE
    err, got = driver.cuGraphKernelNodeGetParams(node)
    if err or got is None:
        return int(err)
    func = as_int(got.func)
    failed, layout = _conn().param_layout(func)
    if failed:
        return failed
    packed = ffi.new("char[]", bytes(got.kernelParams) or b"\0")
    pointers = ffi.new("void *[]", max(len(layout), 1))
    for i, (offset, _size) in enumerate(layout):
        pointers[i] = packed + offset
    _node_params[node] = (packed, pointers)
    ffi.memmove(out, bytes(ffi.sizeof("CUDA_KERNEL_NODE_PARAMS")), ffi.sizeof("CUDA_KERNEL_NODE_PARAMS"))
    out.func = ffi.cast("CUfunction", func)
    out.gridDimX, out.gridDimY, out.gridDimZ = got.gridDimX, got.gridDimY, got.gridDimZ
    out.blockDimX, out.blockDimY, out.blockDimZ = got.blockDimX, got.blockDimY, got.blockDimZ
    out.sharedMemBytes = got.sharedMemBytes
    out.kernelParams = pointers
    return SUCCESS


@_entry
def cuGraphKernelNodeSetParams_v2(node: int, p: Any) -> int:
    if p == ffi.NULL:
        return INVALID_VALUE
    return _err(driver.cuGraphKernelNodeSetParams(node, _kernel_node(p)))


@_entry
def cuGraphExecKernelNodeSetParams_v2(exe: int, node: int, p: Any) -> int:
    if p == ffi.NULL:
        return INVALID_VALUE
    return _err(driver.cuGraphExecKernelNodeSetParams(exe, node, _kernel_node(p)))


_UPDATE_ERROR = 1  # CU_GRAPH_EXEC_UPDATE_ERROR


@_entry
def cuGraphExecUpdate_v2(exe: int, graph: int, info: Any) -> int:
    err, got = driver.cuGraphExecUpdate(exe, graph)
    if info != ffi.NULL:
        info.result = int(got.result) if not err and got is not None else _UPDATE_ERROR
        info.errorNode = ffi.NULL
        info.errorFromNode = ffi.NULL
    return int(err)


def _fill(out: Any, items: list[Any]) -> None:
    if out != ffi.NULL:
        for i, item in enumerate(items):
            out[i] = as_int(item)


def _node_answer(fetch: Any, node: int, nodes: Any, edges: Any, count: Any) -> int:
    """A node's dependencies or dependents (`fetch`) into the caller's arrays, as C does."""
    if count == ffi.NULL:
        return INVALID_VALUE
    asked = 0 if nodes == ffi.NULL else int(count[0])
    err, items, _edge_data, n = fetch(node, asked)
    if err:
        return int(err)
    _fill(nodes, items or [])
    if edges != ffi.NULL and asked:
        ffi.memmove(edges, bytes(8 * asked), 8 * asked)  # default edges
    count[0] = n
    return SUCCESS


@_entry
def cuGraphNodeGetDependencies_v2(node: int, deps: Any, edges: Any, count: Any) -> int:
    return _node_answer(driver.cuGraphNodeGetDependencies, node, deps, edges, count)


@_entry
def cuGraphNodeGetDependentNodes_v2(node: int, nodes: Any, edges: Any, count: Any) -> int:
    return _node_answer(driver.cuGraphNodeGetDependentNodes, node, nodes, edges, count)


@_entry
def cuGraphGetEdges_v2(graph: int, froms: Any, tos: Any, edges: Any, count: Any) -> int:
    if count == ffi.NULL:
        return INVALID_VALUE
    asked = 0 if froms == ffi.NULL or tos == ffi.NULL else int(count[0])
    err, f, t, _edge_data, n = driver.cuGraphGetEdges(graph, asked)
    if err:
        return int(err)
    _fill(froms, f or [])
    _fill(tos, t or [])
    if edges != ffi.NULL and asked:
        ffi.memmove(edges, bytes(8 * asked), 8 * asked)
    count[0] = n
    return SUCCESS


def _edges(edges: Any, count: int) -> list[StructView] | None:
    """CUgraphEdgeData per dependency, or None where all are default edges (or NULL)."""
    if edges == ffi.NULL or not count or not any(bytes(ffi.buffer(edges, 8 * count))):
        return None
    return [StructView(edges[i]) for i in range(count)]


def _batch(dsts: Any, srcs: Any, sizes: Any, count: int, attrs: Any, idxs: Any, num: int, stream: int) -> int:
    if count and (dsts == ffi.NULL or srcs == ffi.NULL or sizes == ffi.NULL):
        return INVALID_VALUE
    if num and (attrs == ffi.NULL or idxs == ffi.NULL):
        return INVALID_VALUE
    return _err(driver.cuMemcpyBatchAsync(
        [int(dsts[i]) for i in range(count)], [int(srcs[i]) for i in range(count)],
        [int(sizes[i]) for i in range(count)], count, [StructView(attrs[j]) for j in range(num)],
        [int(idxs[j]) for j in range(num)], num, stream,
    ))  # fmt: skip


@_entry
def cuMemcpyWithAttributesAsync(dst: int, src: int, size: int, attr: Any, stream: int) -> int:
    if attr == ffi.NULL:
        return INVALID_VALUE
    return _err(driver.cuMemcpyWithAttributesAsync(dst, src, size, StructView(attr[0]), stream))


@_entry
def cuMemcpyBatchAsync_v2(dsts: Any, srcs: Any, sizes: Any, count: int, attrs: Any, idxs: Any, num: int, stream: int) -> int:
    return _batch(dsts, srcs, sizes, count, attrs, idxs, num, stream)


@_entry
def cuMemcpyBatchAsync(
    dsts: Any, srcs: Any, sizes: Any, count: int, attrs: Any, idxs: Any, num: int, fail: Any, stream: int
) -> int:
    """CUDA 12.8's form: *failIdx is SIZE_MAX, as for an error that no one copy caused (the
    copies run in order; a failing one is reported by the call's result)."""
    err = _batch(dsts, srcs, sizes, count, attrs, idxs, num, stream)
    if fail != ffi.NULL:
        fail[0] = (1 << 64) - 1
    return err


def _batch_3d(count: int, ops: Any, flags: int, stream: int) -> int:
    if count and ops == ffi.NULL:
        return INVALID_VALUE
    return _err(driver.cuMemcpy3DBatchAsync(count, [StructView(ops[i]) for i in range(count)], flags, stream))


@_entry
def cuMemcpy3DWithAttributesAsync(op: Any, flags: int, stream: int) -> int:
    if op == ffi.NULL:
        return INVALID_VALUE
    return _err(driver.cuMemcpy3DWithAttributesAsync(StructView(op[0]), flags, stream))


@_entry
def cuMemcpy3DBatchAsync_v2(count: int, ops: Any, flags: int, stream: int) -> int:
    return _batch_3d(count, ops, flags, stream)


@_entry
def cuMemcpy3DBatchAsync(count: int, ops: Any, fail: Any, flags: int, stream: int) -> int:
    """CUDA 12.8's form: *failIdx is SIZE_MAX, as cuMemcpyBatchAsync's."""
    err = _batch_3d(count, ops, flags, stream)
    if fail != ffi.NULL:
        fail[0] = (1 << 64) - 1
    return err


@_entry
def cuStreamBeginCaptureToGraph(stream: int, graph: int, deps: Any, edges: Any, count: int, mode: int) -> int:
    nodes = _deps(deps, count)
    if nodes is None:
        return INVALID_VALUE
    return _err(driver.cuStreamBeginCaptureToGraph(stream, graph, nodes, _edges(edges, count), count, mode))


@_entry
def cuStreamUpdateCaptureDependencies(stream: int, deps: Any, count: int, flags: int) -> int:
    nodes = _deps(deps, count)
    if nodes is None:
        return INVALID_VALUE
    return _err(driver.cuStreamUpdateCaptureDependencies(stream, nodes, None, count, flags))


@_entry
def cuStreamUpdateCaptureDependencies_v2(stream: int, deps: Any, edges: Any, count: int, flags: int) -> int:
    nodes = _deps(deps, count)
    if nodes is None:
        return INVALID_VALUE
    return _err(driver.cuStreamUpdateCaptureDependencies(stream, nodes, _edges(edges, count), count, flags))


@_entry
def cuGraphAddDependencies_v2(graph: int, froms: Any, tos: Any, edges: Any, count: int) -> int:
    f, t = _deps(froms, count), _deps(tos, count)
    if f is None or t is None:
        return INVALID_VALUE
    return _err(driver.cuGraphAddDependencies(graph, f, t, _edges(edges, count), count))


@_entry
def cuGraphRemoveDependencies_v2(graph: int, froms: Any, tos: Any, edges: Any, count: int) -> int:
    f, t = _deps(froms, count), _deps(tos, count)
    if f is None or t is None:
        return INVALID_VALUE
    return _err(driver.cuGraphRemoveDependencies(graph, f, t, None, count))


# the CUgraphNodeParams union member each node type's parameters are in
_NODE_ARMS = {0: "kernel", 1: "memcpy", 2: "memset", 4: "graph", 6: "eventWait", 7: "eventRecord",
              10: "alloc", 11: "free", 13: "conditional"}  # fmt: skip


@_entry
def cuGraphNodeGetParams(node: int, out: Any) -> int:
    """The type and its union member only (the others share its bytes)."""
    if out == ffi.NULL:
        return INVALID_VALUE
    err, got = driver.cuGraphNodeGetParams(node)
    if err:
        return int(err)
    ffi.memmove(out, bytes(ffi.sizeof("CUgraphNodeParams")), ffi.sizeof("CUgraphNodeParams"))
    kind = int(got.type)
    out.type = kind
    arm = _NODE_ARMS.get(kind)
    if arm is not None:
        _fill_struct(getattr(out, arm), getattr(got, arm))
    return SUCCESS


# -- texture and surface objects ---------------------------------------------------------------


@_entry
def cuTexObjectCreate(out: Any, res: Any, tex: Any, view: Any) -> int:
    if out == ffi.NULL or res == ffi.NULL or tex == ffi.NULL:
        return INVALID_VALUE
    given = None if view == ffi.NULL else StructView(view)
    err, made = driver.cuTexObjectCreate(StructView(res), StructView(tex), given)
    if not err:
        out[0] = as_int(made)
    return int(err)


def _write_resource(out: Any, desc: Any) -> None:
    """A CUDA_RESOURCE_DESC (the driver module's object) into the C struct."""
    ffi.memmove(out, bytes(ffi.sizeof("CUDA_RESOURCE_DESC")), ffi.sizeof("CUDA_RESOURCE_DESC"))
    kind = int(desc.resType)
    out.resType, out.flags = kind, int(desc.flags)
    if kind == 0:
        out.res.array.hArray = ffi.cast("CUarray", as_int(desc.res.array.hArray))
    elif kind == 1:
        out.res.mipmap.hMipmappedArray = ffi.cast("CUmipmappedArray", as_int(desc.res.mipmap.hMipmappedArray))
    elif kind == 2:
        lin, given = out.res.linear, desc.res.linear
        lin.devPtr, lin.format = as_int(given.devPtr), int(given.format)
        lin.numChannels, lin.sizeInBytes = int(given.numChannels), int(given.sizeInBytes)
    elif kind == 3:
        p2, given = out.res.pitch2D, desc.res.pitch2D
        p2.devPtr, p2.format, p2.numChannels = as_int(given.devPtr), int(given.format), int(given.numChannels)
        p2.width, p2.height, p2.pitchInBytes = int(given.width), int(given.height), int(given.pitchInBytes)


def _described(call: Callable[..., tuple[Any, ...]], out: Any, handle: int, write: Callable[[Any, Any], None]) -> int:
    if out == ffi.NULL:
        return INVALID_VALUE
    err, desc = call(handle)
    if not err and desc is not None:
        write(out, desc)
    return int(err)


def _write_texture(out: Any, t: Any) -> None:
    ffi.memmove(out, bytes(ffi.sizeof("CUDA_TEXTURE_DESC")), ffi.sizeof("CUDA_TEXTURE_DESC"))
    for i, mode in enumerate(list(t.addressMode)[:3]):
        out.addressMode[i] = int(mode)
    out.filterMode, out.flags, out.maxAnisotropy = int(t.filterMode), int(t.flags), int(t.maxAnisotropy)
    out.mipmapFilterMode, out.mipmapLevelBias = int(t.mipmapFilterMode), float(t.mipmapLevelBias)
    out.minMipmapLevelClamp, out.maxMipmapLevelClamp = float(t.minMipmapLevelClamp), float(t.maxMipmapLevelClamp)
    for i, color in enumerate(list(t.borderColor)[:4]):
        out.borderColor[i] = float(color)


_VIEW_FIELDS = ("format", "width", "height", "depth", "firstMipmapLevel", "lastMipmapLevel", "firstLayer", "lastLayer")


def _write_view(out: Any, v: Any) -> None:
    ffi.memmove(out, bytes(ffi.sizeof("CUDA_RESOURCE_VIEW_DESC")), ffi.sizeof("CUDA_RESOURCE_VIEW_DESC"))
    for name in _VIEW_FIELDS:
        setattr(out, name, int(getattr(v, name)))


@_entry
def cuTexObjectGetResourceDesc(out: Any, tex: int) -> int:
    return _described(driver.cuTexObjectGetResourceDesc, out, tex, _write_resource)


@_entry
def cuTexObjectGetTextureDesc(out: Any, tex: int) -> int:
    return _described(driver.cuTexObjectGetTextureDesc, out, tex, _write_texture)


@_entry
def cuTexObjectGetResourceViewDesc(out: Any, tex: int) -> int:
    return _described(driver.cuTexObjectGetResourceViewDesc, out, tex, _write_view)


_MEMSET_FIELDS = ("dst", "pitch", "value", "elementSize", "width", "height")


def _write_memset(out: Any, p: Any) -> None:
    for name in _MEMSET_FIELDS:
        setattr(out, name, _number(getattr(p, name)))


@_entry
def cuGraphMemsetNodeGetParams(node: int, out: Any) -> int:
    return _described(driver.cuGraphMemsetNodeGetParams, out, node, _write_memset)


@_entry
def cuSurfObjectGetResourceDesc(out: Any, surf: int) -> int:
    return _described(driver.cuSurfObjectGetResourceDesc, out, surf, _write_resource)


# -- the linker ------------------------------------------------------------------------------


def _jit(options: Any, values: int, count: int) -> tuple[list[int], list[int]]:
    if not count:
        return [], []
    if options == ffi.NULL or not values:
        raise ValueError("JIT options without their values")
    return list(ffi.unpack(options, count)), list(ffi.unpack(ffi.cast("uintptr_t *", values), count))


@_entry
def cuLinkCreate_v2(count: int, options: Any, values: int, out: Any) -> int:
    if out == ffi.NULL:
        return INVALID_VALUE
    keys, vals = _jit(options, values, count)
    err, state = driver.cuLinkCreate(len(keys), keys, vals)
    if not err:
        out[0] = as_int(state)
    return int(err)


@_entry
def cuLinkAddData_v2(
    state: int, kind: int, data: int, size: int, name: Any, count: int, options: Any, values: int
) -> int:
    if not data:
        return INVALID_VALUE
    label = ffi.string(name) if name != ffi.NULL else b""
    keys, vals = _jit(options, values, count)
    return _err(driver.cuLinkAddData(state, kind, data, size, label, len(keys), keys, vals))


@_entry
def cuLinkAddFile_v2(state: int, kind: int, path: Any, count: int, options: Any, values: int) -> int:
    if path == ffi.NULL:
        return INVALID_VALUE
    keys, vals = _jit(options, values, count)
    return _err(driver.cuLinkAddFile(state, kind, ffi.string(path), len(keys), keys, vals))


@_entry
def cuLinkComplete(state: int, image: int, size: Any) -> int:
    if not image:
        return INVALID_VALUE
    err, address, length = driver.cuLinkComplete(state)
    if not err and address is not None and length is not None:
        ffi.cast("uintptr_t *", image)[0] = int(address)
        if size != ffi.NULL:
            size[0] = int(length)
    return int(err)


# -- cuLaunchKernelEx with launch attributes ------------------------------------------------

_ATTRIBUTE_SIZE = 72  # CUlaunchAttribute: id, padding to 8, a 64-byte value union
_DIMENSIONS = ("clusterDim", "preferredClusterDim")


class _AttributeValue:
    """A CUlaunchAttributeValue read as cuda-python's: every scalar member is the union's first
    4 bytes; cluster dimensions are its first three unsigned ints."""

    __slots__ = ("_at",)

    def __init__(self, address: int) -> None:
        self._at = address

    def __getattr__(self, name: str) -> Any:
        if name in _DIMENSIONS:
            x, y, z = ffi.unpack(ffi.cast("unsigned int *", self._at), 3)
            return SimpleNamespace(x=x, y=y, z=z)
        return ffi.cast("int *", self._at)[0]


def launch_config(c: Any) -> SimpleNamespace:
    """A CUlaunchConfig (C) as the object cricket_client.driver.cuLaunchKernelEx reads."""
    base = int(ffi.cast("uintptr_t", c.attrs))
    attrs = [
        SimpleNamespace(
            id=ffi.cast("int *", base + i * _ATTRIBUTE_SIZE)[0],
            value=_AttributeValue(base + i * _ATTRIBUTE_SIZE + 8),
        )
        for i in range(c.numAttrs)
    ]
    return SimpleNamespace(
        gridDimX=c.gridDimX, gridDimY=c.gridDimY, gridDimZ=c.gridDimZ,
        blockDimX=c.blockDimX, blockDimY=c.blockDimY, blockDimZ=c.blockDimZ,
        sharedMemBytes=c.sharedMemBytes, hStream=int(ffi.cast("uintptr_t", c.hStream)),
        attrs=attrs, numAttrs=len(attrs),
    )  # fmt: skip


# -- a kernel node's launch attributes (CUkernelNodeAttrValue: CUlaunchAttributeValue's union) --


@_entry
def cuGraphKernelNodeGetAttribute(node: int, attr: int, value: Any) -> int:
    """The value written into the caller's union as cuda.h lays it out (cluster dimensions
    as three unsigned ints, a scalar in the first four bytes, the rest zero)."""
    at = int(ffi.cast("uintptr_t", value))  # `void *` arrives as its address
    if not at:
        return INVALID_VALUE
    err, got = driver.cuGraphKernelNodeGetAttribute(node, attr)
    if err:
        return int(err)
    ffi.memmove(ffi.cast("void *", at), bytes(_ATTRIBUTE_SIZE - 8), _ATTRIBUTE_SIZE - 8)
    if attr in (CLUSTER_DIMENSION, PREFERRED_CLUSTER_DIMENSION):
        dim = got.clusterDim if attr == CLUSTER_DIMENSION else got.preferredClusterDim
        cells = ffi.cast("unsigned int *", at)
        cells[0], cells[1], cells[2] = int(dim.x), int(dim.y), int(dim.z)
    elif attr in SCALAR_FIELDS:
        ffi.cast("int *", at)[0] = int(getattr(got, SCALAR_FIELDS[attr]))
    return SUCCESS


@_entry
def cuGraphKernelNodeSetAttribute(node: int, attr: int, value: Any) -> int:
    at = int(ffi.cast("uintptr_t", value))
    if not at:
        return INVALID_VALUE
    return _err(driver.cuGraphKernelNodeSetAttribute(node, attr, _AttributeValue(at)))


@_entry
def cuGraphKernelNodeCopyAttributes(dst: int, src: int) -> int:
    return _err(driver.cuGraphKernelNodeCopyAttributes(dst, src))
