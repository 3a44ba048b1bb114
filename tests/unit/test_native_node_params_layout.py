"""The graph node parameter structs the native libcuda.so.1 reads and writes back
(CUgraphNodeParams and its union's members, CUDA_MEM_ALLOC_NODE_PARAMS) have the layout of
cuda.h 12.4+/13 on LP64: sizes and offsets derived by hand from the header, and, where
cuda-bindings is installed, each field found where its own struct objects keep it."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest

cffi = pytest.importorskip("cffi")

from cricket_client.native.signatures import C_TYPES  # noqa: E402

# struct -> (sizeof, {field: offset}); the union's members start at 16
LAYOUT: dict[str, tuple[int, dict[str, int]]] = {
    "CUgraphNodeParams": (
        256,
        {"type": 0, "reserved0": 4, "reserved1": 16, "kernel": 16, "memcpy": 16, "memset": 16,
         "host": 16, "graph": 16, "eventWait": 16, "eventRecord": 16, "extSemSignal": 16,
         "extSemWait": 16, "alloc": 16, "free": 16, "memOp": 16, "conditional": 16,
         "reserved2": 248},
    ),
    "CUDA_MEMCPY3D_PEER": (
        200,
        {"srcXInBytes": 0, "srcMemoryType": 32, "srcHost": 40, "srcDevice": 48, "srcArray": 56,
         "srcContext": 64, "srcPitch": 72, "srcHeight": 80, "dstXInBytes": 88,
         "dstMemoryType": 120, "dstHost": 128, "dstDevice": 136, "dstArray": 144,
         "dstContext": 152, "dstPitch": 160, "dstHeight": 168, "WidthInBytes": 176,
         "Height": 184, "Depth": 192},
    ),
    "CUDA_ARRAY_MEMORY_REQUIREMENTS": (32, {"size": 0, "alignment": 8, "reserved": 16}),
    "CUDA_ARRAY_SPARSE_PROPERTIES": (
        48, {"tileExtent": 0, "miptailFirstLevel": 12, "miptailSize": 16, "flags": 24, "reserved": 28},
    ),
    "CUstreamMemOpValueParams": (
        40, {"operation": 0, "address": 8, "value": 16, "value64": 16, "flags": 24, "alias": 32},
    ),
    "CUstreamBatchMemOpParams": (
        48, {"operation": 0, "waitValue": 0, "writeValue": 0, "flushRemoteWrites": 0,
             "memoryBarrier": 0, "pad": 0},
    ),
    "CUtensorMap": (128, {"opaque": 0}),
    "CUdevResource": (144, {"type": 0, "_internal_padding": 4, "sm": 96, "_oversize": 96, "nextResource": 136}),
    "CUDA_MEMCPY_NODE_PARAMS": (216, {"flags": 0, "reserved": 4, "copyCtx": 8, "copyParams": 16}),
    "CUDA_MEMSET_NODE_PARAMS_v2": (
        48, {"dst": 0, "pitch": 8, "value": 16, "elementSize": 20, "width": 24, "height": 32, "ctx": 40},
    ),
    "CUDA_HOST_NODE_PARAMS_v2": (32, {"fn": 0, "userData": 8, "syncMode": 16, "ctx": 24}),
    "CUDA_CHILD_GRAPH_NODE_PARAMS": (16, {"graph": 0, "ownership": 8}),
    "CUDA_EVENT_NODE_PARAMS": (8, {"event": 0}),
    "CUDA_EXT_SEM_NODE_PARAMS_v2": (32, {"extSemArray": 0, "paramsArray": 8, "numExtSems": 16, "ctx": 24}),
    "CUDA_MEM_ALLOC_NODE_PARAMS": (
        120, {"poolProps": 0, "accessDescs": 88, "accessDescCount": 96, "bytesize": 104, "dptr": 112},
    ),
    "CUDA_MEM_FREE_NODE_PARAMS": (8, {"dptr": 0}),
    "CUDA_BATCH_MEM_OP_NODE_PARAMS_v2": (32, {"ctx": 0, "count": 8, "paramArray": 16, "flags": 24}),
    "CUDA_CONDITIONAL_NODE_PARAMS": (
        32, {"handle": 0, "type": 8, "size": 12, "phGraph_out": 16, "ctx": 24},
    ),
}  # fmt: skip


@pytest.fixture(scope="module", name="ffi")
def c_types() -> Any:
    """The project's C declarations, parsed (sizes and offsets as the C compiler lays them)."""
    parsed = cffi.FFI()
    parsed.cdef(C_TYPES)
    return parsed


@pytest.mark.parametrize("name", sorted(LAYOUT))
def test_struct_size_and_offsets(ffi: Any, name: str) -> None:
    size, offsets = LAYOUT[name]
    assert ffi.sizeof(name) == size
    assert {field: ffi.offsetof(name, field) for field in offsets} == offsets


def _first_nonzero(struct: Any, size: int) -> int:
    raw = ctypes.string_at(struct.getPtr(), size)
    return next(i for i, b in enumerate(raw) if b)


# (what cuda-bindings' CUgraphNodeParams is given, the C field path it must land in)
def _cases(d: Any) -> list[tuple[str, Callable[[Any], None]]]:
    return [
        ("type", lambda s: setattr(s, "type", d.CUgraphNodeType(1))),
        ("kernel.gridDimX", lambda s: setattr(s.kernel, "gridDimX", 1)),
        ("kernel.ctx", lambda s: setattr(s.kernel, "ctx", d.CUcontext(1))),
        ("memcpy.copyCtx", lambda s: setattr(s.memcpy, "copyCtx", d.CUcontext(1))),
        ("memcpy.copyParams.srcY", lambda s: setattr(s.memcpy.copyParams, "srcY", 1)),
        ("memcpy.copyParams.Depth", lambda s: setattr(s.memcpy.copyParams, "Depth", 1)),
        ("memset.dst", lambda s: setattr(s.memset, "dst", 1)),
        ("memset.height", lambda s: setattr(s.memset, "height", 1)),
        ("host.userData", lambda s: setattr(s.host, "userData", 1)),
        ("graph.graph", lambda s: setattr(s.graph, "graph", d.CUgraph(1))),
        ("eventWait.event", lambda s: setattr(s.eventWait, "event", d.CUevent(1))),
        ("eventRecord.event", lambda s: setattr(s.eventRecord, "event", d.CUevent(1))),
        ("extSemSignal.numExtSems", lambda s: setattr(s.extSemSignal, "numExtSems", 1)),
        ("alloc.poolProps.location.id", lambda s: setattr(s.alloc.poolProps.location, "id", 1)),
        ("alloc.accessDescCount", lambda s: setattr(s.alloc, "accessDescCount", 1)),
        ("alloc.bytesize", lambda s: setattr(s.alloc, "bytesize", 1)),
        ("alloc.dptr", lambda s: setattr(s.alloc, "dptr", 1)),
        ("free.dptr", lambda s: setattr(s.free, "dptr", 1)),
        ("memOp.ctx", lambda s: setattr(s.memOp, "ctx", d.CUcontext(1))),
        ("memOp.count", lambda s: setattr(s.memOp, "count", 1)),
        ("memOp.flags", lambda s: setattr(s.memOp, "flags", 1)),
        ("conditional.handle", lambda s: setattr(s.conditional, "handle", d.CUgraphConditionalHandle(1))),
        ("conditional.type", lambda s: setattr(s.conditional, "type", d.CUgraphConditionalNodeType(1))),
        ("conditional.size", lambda s: setattr(s.conditional, "size", 1)),
        ("conditional.ctx", lambda s: setattr(s.conditional, "ctx", d.CUcontext(1))),
    ]  # fmt: skip


def test_node_params_fields_agree_with_cuda_bindings(ffi: Any) -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    for path, setter in _cases(driver):
        struct = driver.CUgraphNodeParams()
        setter(struct)
        first = _first_nonzero(struct, 256)
        top, *rest = path.split(".")
        offset = ffi.offsetof("CUgraphNodeParams", top)
        ctype = ffi.typeof("CUgraphNodeParams")
        ctype = dict(ctype.fields)[top].type
        for name in rest:
            offset += dict(ctype.fields)[name].offset
            ctype = dict(ctype.fields)[name].type
        assert first == offset, f"CUgraphNodeParams.{path}: cuda-bindings has it at {first}"


def test_alloc_node_params_agree_with_cuda_bindings(ffi: Any) -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    for field in ("accessDescCount", "bytesize", "dptr"):
        struct = driver.CUDA_MEM_ALLOC_NODE_PARAMS()
        setattr(struct, field, 1)
        assert _first_nonzero(struct, 120) == ffi.offsetof("CUDA_MEM_ALLOC_NODE_PARAMS", field)


def test_device_resource_agrees_with_cuda_bindings(ffi: Any) -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    sm = dict(ffi.typeof("CUdevResource").fields)["sm"]
    for field in ("smCount", "minSmPartitionSize", "smCoscheduledAlignment", "flags"):
        struct = driver.CUdevResource()
        setattr(struct.sm, field, 1)
        assert _first_nonzero(struct, 144) == sm.offset + dict(sm.type.fields)[field].offset


@pytest.mark.parametrize(
    "name,fields",
    [
        ("CUDA_MEMCPY3D_PEER", ("srcY", "srcPitch", "dstXInBytes", "dstPitch", "WidthInBytes", "Depth")),
        ("CUDA_ARRAY_MEMORY_REQUIREMENTS", ("size", "alignment")),
        ("CUDA_ARRAY_SPARSE_PROPERTIES", ("miptailFirstLevel", "miptailSize", "flags")),
    ],
)  # fmt: skip
def test_more_structs_agree_with_cuda_bindings(ffi: Any, name: str, fields: tuple[str, ...]) -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    for field in fields:
        struct = getattr(driver, name)()
        setattr(struct, field, 1)
        assert _first_nonzero(struct, ffi.sizeof(name)) == ffi.offsetof(name, field), field


def test_batch_memop_arms_agree_with_cuda_bindings(ffi: Any) -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    arm = "CUstreamMemOpValueParams"
    for field in ("address", "value64", "flags", "alias"):
        struct = driver.CUstreamBatchMemOpParams()
        setattr(struct.writeValue, field, 1)
        assert _first_nonzero(struct, 48) == ffi.offsetof(arm, field), field
