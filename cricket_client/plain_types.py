"""Value types of cuda.bindings that hold no GPU state, so they live on the client alone.

Programs (and cuda-python's own tests) build and read these without any call travelling:
`cuuint32_t`, callback pointer types, the v1 `_st` structs, external-semaphore parameters,
stream batch memory operations, EGL frames, IPC handles, execution affinity, decompression
parameters, the polymorphic `CUgraphNodeParams`, and the runtime's counterparts. They behave
as cuda-python's do where a program can tell: nested structs are assigned by value (a copy),
unions share their bytes (`cudaEglFrame.frame`), host buffers set as struct members stay alive
and read back as their address, and printing lists the fields as cuda-python prints them.
Calls that would take them and are not remoted still answer "not supported remotely".
"""

from __future__ import annotations

import ctypes
from typing import Any, ClassVar

from ._enums import (
    CUexecAffinityType,
    CUgraphConditionalNodeType,
    CUgraphNodeType,
    CUstreamBatchMemOpType,
)
from ._types import CUcontext, CUdeviceptr, CUfunction, Handle, as_int
from ._types_vmm import CUmemPoolProps, cuuint64_t
from .array_types import (
    CUDA_MEMCPY3D,
    CUDA_TEXTURE_DESC,
    CUarray,
    cudaArray_t,
    cudaChannelFormatDesc,
    cudaExtent,
    cudaPitchedPtr,
    cudaPos,
)
from .driver_graphs import CUDA_KERNEL_NODE_PARAMS, CUgraph
from .runtime_types import Struct

__all__ = [
    "cuuint32_t",
    "CUoccupancyB2DSize",
    "CUDA_KERNEL_NODE_PARAMS_st",
    "CUDA_TEXTURE_DESC_st",
    "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS",
    "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_st",
    "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_v1",
    "CUstreamBatchMemOpParams",
    "CUstreamBatchMemOpParams_union",
    "CUstreamBatchMemOpParams_v1",
    "CUeglFrame",
    "CUeglFrame_st",
    "CUeglFrame_v1",
    "CUipcMemHandle",
    "CUipcMemHandle_st",
    "CUipcMemHandle_v1",
    "CUexecAffinityParam",
    "CUexecAffinityParam_st",
    "CUexecAffinityParam_v1",
    "CUmemDecompressParams",
    "CUmemDecompressParams_st",
    "CUgraphNodeParams",
    "CUgraphNodeParams_st",
    "CUgraphConditionalHandle",
    "CUDA_MEM_ALLOC_NODE_PARAMS",
    "CUDA_MEM_ALLOC_NODE_PARAMS_v1",
    "CUDA_MEM_ALLOC_NODE_PARAMS_v1_st",
    "CUDA_MEM_ALLOC_NODE_PARAMS_v2",
    "CUDA_MEM_ALLOC_NODE_PARAMS_v2_st",
    "CUDA_MEM_FREE_NODE_PARAMS",
    "CUDA_MEM_FREE_NODE_PARAMS_st",
    "CUDA_CONDITIONAL_NODE_PARAMS",
    "CUDA_BATCH_MEM_OP_NODE_PARAMS",
    "CUDA_BATCH_MEM_OP_NODE_PARAMS_st",
    "CUDA_BATCH_MEM_OP_NODE_PARAMS_v1",
    "CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st",
]  # the driver's; the runtime's (cuda*) are imported by name in cricket_client.runtime


# -- scalars and pointers ---------------------------------------------------------------------


class cuuint32_t(Handle):
    """An unsigned 32-bit value; a value that does not fit raises OverflowError."""

    _ctype = ctypes.c_uint32
    _hex = False
    __slots__ = ()

    def __init__(self, init_value: Any = 0) -> None:
        value = as_int(init_value)
        if not 0 <= value < 1 << 32:
            raise OverflowError(f"cuuint32_t: {value} does not fit in 32 unsigned bits")
        super().__init__(value)


class CUoccupancyB2DSize(Handle):
    """The address of a block-size-to-shared-memory callback (only ever held, never called)."""

    __slots__ = ()


class cudaExternalSemaphore_t(Handle):
    __slots__ = ()


class cudaExecutionContext_t(Handle):
    """An execution context: a device's primary context or a green context's context."""

    __slots__ = ()


# -- by-value structs -------------------------------------------------------------------------


class ValueStruct(Struct):
    """A Struct whose nested struct fields are copied on assignment, as C structs are (and
    cuda-python's); a default that is a class is a fresh instance of it per object."""

    def __init__(self, **values: Any) -> None:
        for name, default in self.FIELDS.items():
            if name not in values and isinstance(default, type):
                values[name] = default()
        super().__init__(**values)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, copy_value(value))

    def __repr__(self) -> str:
        lines = []
        for name in self.FIELDS:
            value = getattr(self, name)
            if isinstance(value, (Struct, _Shown)):
                inner = repr(value).splitlines()
                lines += [f"{name} :"] + [f"    {line}" for line in inner]
            else:
                lines.append(f"{name} : {value!r}")
        return "\n".join(lines)

    __str__ = __repr__


def copy_value(value: Any) -> Any:
    """A copy of a struct (recursively, struct members only; what else it holds, such as the
    owner of a host buffer, is shared); other values as they are."""
    if isinstance(value, Struct):
        twin = object.__new__(type(value))
        for name, member in vars(value).items():
            object.__setattr__(twin, name, copy_value(member))
        return twin
    if isinstance(value, list):
        return [copy_value(v) for v in value]
    return value


class _Shown:
    """A nested part printed field by field (base of hand-written unions)."""

    _shown: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        return repr_fields(self, self._shown)


def repr_fields(obj: Any, names: tuple[str, ...]) -> str:
    lines = []
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, (Struct, _Shown)):
            lines += [f"{name} :"] + [f"    {line}" for line in repr(value).splitlines()]
        else:
            lines.append(f"{name} : {value!r}")
    return "\n".join(lines)


class CUDA_KERNEL_NODE_PARAMS_st(ValueStruct):
    """The v1 kernel node parameters (without the kernel and context of v2)."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "func": CUfunction(0), "gridDimX": 0, "gridDimY": 0, "gridDimZ": 0, "blockDimX": 0,
        "blockDimY": 0, "blockDimZ": 0, "sharedMemBytes": 0, "kernelParams": 0, "extra": 0,
    }  # fmt: skip


CUDA_TEXTURE_DESC_st = CUDA_TEXTURE_DESC


# -- external semaphores ----------------------------------------------------------------------


class _Fence(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"value": 0}


class _HexInt(int):
    def __repr__(self) -> str:
        return hex(self)


class _NvSciSync(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"fence": _HexInt(0), "reserved": 0}

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, _HexInt(as_int(value)) if name == "fence" else value)


class _KeyedMutex(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"key": 0}


class _SignalUnion(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "fence": _Fence, "nvSciSync": _NvSciSync, "keyedMutex": _KeyedMutex, "reserved": [0] * 12,
    }  # fmt: skip


class CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"params": _SignalUnion, "flags": 0, "reserved": [0] * 16}


CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_st = CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS
CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_v1 = CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS


class cudaExternalSemaphoreSignalParams(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS):
    pass


class cudaExternalSemaphoreSignalNodeParams(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"extSemArray": [], "paramsArray": [], "numExtSems": 0}

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "extSemArray":
            value = [cudaExternalSemaphore_t(v) for v in value]
        super().__setattr__(name, value)


# -- stream batch memory operations -----------------------------------------------------------


class _MemOpValueC(ctypes.Structure):
    _fields_ = [("operation", ctypes.c_uint32), ("address", ctypes.c_uint64),
                ("value64", ctypes.c_uint64), ("flags", ctypes.c_uint32), ("alias", ctypes.c_uint64)]  # fmt: skip


class _MemOpFlagsC(ctypes.Structure):
    _fields_ = [("operation", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


class _MemOpUnionC(ctypes.Union):
    """CUstreamBatchMemOpParams_union of cuda.h: every arm starts with the operation."""

    _fields_ = [("operation", ctypes.c_uint32), ("waitValue", _MemOpValueC),
                ("writeValue", _MemOpValueC), ("flushRemoteWrites", _MemOpFlagsC),
                ("memoryBarrier", _MemOpFlagsC), ("pad", ctypes.c_uint64 * 6)]  # fmt: skip


class _Bytes:
    """A field of a union view: read from and written to its ctypes bytes (`self._c`)."""

    def __init__(self, read: Any = int, write: Any = int, path: str = "") -> None:
        self.read, self.write, self.path = read, write, path

    def __set_name__(self, owner: type, name: str) -> None:
        self.path = self.path or name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self.read(getattr(obj._c, self.path))

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj._c, self.path, self.write(value))


class _Arm(_Bytes):
    """An arm of a union: a view of its bytes; assigning an arm copies the other's bytes."""

    def __set__(self, obj: Any, value: Any) -> None:
        ctypes.pointer(getattr(obj._c, self.path))[0] = value._c


def _pad(values: Any) -> Any:
    items = [as_int(v) for v in values]
    if len(items) != 6:
        raise ValueError(f"pad: expected 6 values, got {len(items)}")
    return (ctypes.c_uint64 * 6)(*items)


class _MemOpValue(_Shown):
    """The wait or write arm (value is value64's low 32 bits, as in cuda.h's inner union)."""

    _shown = ("operation", "address", "value", "value64", "flags", "alias")
    operation = _Bytes(CUstreamBatchMemOpType)
    address = _Bytes(CUdeviceptr, as_int)
    value64 = _Bytes(cuuint64_t, as_int)
    flags = _Bytes()
    alias = _Bytes(CUdeviceptr, as_int)

    def __init__(self, arm: _MemOpValueC) -> None:
        self._c = arm

    @property
    def value(self) -> cuuint32_t:
        return cuuint32_t(self._c.value64 & 0xFFFFFFFF)

    @value.setter
    def value(self, v: Any) -> None:
        self._c.value64 = (self._c.value64 & ~0xFFFFFFFF) | (as_int(v) & 0xFFFFFFFF)


class _MemOpFlags(_Shown):
    """The flush or barrier arm."""

    _shown = ("operation", "flags")
    operation = _Bytes(CUstreamBatchMemOpType)
    flags = _Bytes()

    def __init__(self, arm: _MemOpFlagsC) -> None:
        self._c = arm


class CUstreamBatchMemOpParams(_Shown):
    """A union, as in cuda.h and cuda-bindings: `operation` and each arm share their bytes, so
    setting `writeValue.operation` sets `operation` too; assigning an arm copies its bytes."""

    _shown = ("operation", "waitValue", "writeValue", "flushRemoteWrites", "memoryBarrier", "pad")
    operation = _Bytes(CUstreamBatchMemOpType)
    waitValue = _Arm(_MemOpValue)
    writeValue = _Arm(_MemOpValue)
    flushRemoteWrites = _Arm(_MemOpFlags)
    memoryBarrier = _Arm(_MemOpFlags)
    pad = _Bytes(list, _pad)

    def __init__(self) -> None:
        self._c = _MemOpUnionC()


CUstreamBatchMemOpParams_union = CUstreamBatchMemOpParams
CUstreamBatchMemOpParams_v1 = CUstreamBatchMemOpParams


# -- EGL frames: the frame union shares its bytes between its arms ----------------------------


class _PitchedC(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("ptr", "pitch", "xsize", "ysize")]


class _DriverFrameC(ctypes.Union):
    _fields_ = [("pArray", ctypes.c_uint64 * 3), ("pPitch", ctypes.c_uint64 * 3)]


class _RuntimeFrameC(ctypes.Union):
    _fields_ = [("pArray", ctypes.c_uint64 * 3), ("pPitch", _PitchedC * 3)]


class _DriverFrame(_Shown):
    """CUeglFrame.frame: three CUarray or three pitched pointers, in the same bytes."""

    _shown = ("pArray", "pPitch")

    def __init__(self) -> None:
        self._c = _DriverFrameC()

    @property
    def pArray(self) -> list[CUarray]:
        return [CUarray(v) for v in self._c.pArray]

    @pArray.setter
    def pArray(self, values: Any) -> None:
        self._c.pArray[:] = _three(values, "pArray")

    @property
    def pPitch(self) -> list[int]:
        return list(self._c.pPitch)

    @pPitch.setter
    def pPitch(self, values: Any) -> None:
        self._c.pPitch[:] = _three(values, "pPitch")


class _RuntimeFrame(_Shown):
    """cudaEglFrame.frame: three cudaArray_t or three cudaPitchedPtr, in the same bytes."""

    _shown = ("pArray", "pPitch")

    def __init__(self) -> None:
        self._c = _RuntimeFrameC()

    @property
    def pArray(self) -> list[cudaArray_t]:
        return [cudaArray_t(v) for v in self._c.pArray]

    @pArray.setter
    def pArray(self, values: Any) -> None:
        self._c.pArray[:] = _three(values, "pArray")

    @property
    def pPitch(self) -> list[cudaPitchedPtr]:
        return [
            cudaPitchedPtr(ptr=p.ptr, pitch=p.pitch, xsize=p.xsize, ysize=p.ysize)
            for p in self._c.pPitch
        ]

    @pPitch.setter
    def pPitch(self, values: Any) -> None:
        values = list(values)
        if len(values) != 3:
            raise ValueError(f"pPitch: expected 3 cudaPitchedPtr, got {len(values)}")
        for slot, v in zip(self._c.pPitch, values, strict=True):
            slot.ptr, slot.pitch = as_int(v.ptr), int(v.pitch)
            slot.xsize, slot.ysize = int(v.xsize), int(v.ysize)


def _three(values: Any, what: str) -> list[int]:
    items = [as_int(v) for v in values]
    if len(items) != 3:
        raise ValueError(f"{what}: expected 3 values, got {len(items)}")
    return items


class CUeglFrame(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "frame": _DriverFrame, "width": 0, "height": 0, "depth": 0, "pitch": 0,
        "planeCount": 0, "numChannels": 0, "frameType": 0, "eglColorFormat": 0, "cuFormat": 0,
    }  # fmt: skip


CUeglFrame_st = CUeglFrame
CUeglFrame_v1 = CUeglFrame


class cudaEglFrame(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "frame": _RuntimeFrame, "planeCount": 0, "frameType": 0, "eglColorFormat": 0,
    }  # fmt: skip


# -- IPC handles, execution affinity, decompression -------------------------------------------


class CUipcMemHandle_st(ValueStruct):
    """64 opaque bytes; assigned values wrap to unsigned bytes as C chars do."""

    FIELDS: ClassVar[dict[str, Any]] = {"reserved": bytes(64)}

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "reserved":
            data = bytes(int(v) & 0xFF for v in value)
            if len(data) > 64:
                raise ValueError(f"reserved: at most 64 bytes, got {len(data)}")
            value = data + bytes(64 - len(data))
        super().__setattr__(name, value)


CUipcMemHandle = CUipcMemHandle_st
CUipcMemHandle_v1 = CUipcMemHandle_st


class _SmCount(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"val": 0}


class _AffinityParam(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"smCount": _SmCount}


class CUexecAffinityParam_st(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "type": CUexecAffinityType.CU_EXEC_AFFINITY_TYPE_SM_COUNT, "param": _AffinityParam,
    }  # fmt: skip


CUexecAffinityParam = CUexecAffinityParam_st
CUexecAffinityParam_v1 = CUexecAffinityParam_st


class CUmemDecompressParams_st(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "srcNumBytes": 0, "dstNumBytes": 0, "dstActBytes": cuuint32_t(0), "src": 0, "dst": 0,
        "algo": 0,
    }  # fmt: skip


CUmemDecompressParams = CUmemDecompressParams_st


# -- the polymorphic graph node parameters ----------------------------------------------------


class _HostKeepingMemcpy3D(CUDA_MEMCPY3D):
    """CUDA_MEMCPY3D whose host members keep the buffer set in them alive and read back as
    its address, as cuda-python's do."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("srcHost", "dstHost") and value is not None and not isinstance(value, int):
            object.__setattr__(self, f"_{name}_owner", value)
            value = _address(value)
        object.__setattr__(self, name, value)


def _address(obj: Any) -> int:
    """The address of a host buffer object (numpy arrays, ctypes objects, buffers)."""
    interface = getattr(obj, "__array_interface__", None)
    if interface is not None:
        return int(interface["data"][0])
    if isinstance(obj, ctypes._SimpleCData | ctypes.Structure | ctypes.Array):
        return ctypes.addressof(obj)
    if isinstance(obj, bytes):
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value or 0
    return ctypes.addressof(ctypes.c_char.from_buffer(memoryview(obj)))


class _MemcpyNode(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "copyParams": _HostKeepingMemcpy3D,
        "copyCtx": 0,
        "flags": 0,
    }


class _MemsetNode(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "dst": CUdeviceptr(0), "pitch": 0, "value": 0, "elementSize": 0, "width": 0, "height": 0,
        "ctx": 0,
    }  # fmt: skip


class _ChildGraph(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"graph": 0}


class _EventNode(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"event": 0}


# -- graph memory and conditional node parameters ---------------------------------------------


class CUgraphConditionalHandle(Handle):
    _hex = False
    __slots__ = ()


class CUDA_MEM_ALLOC_NODE_PARAMS(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "poolProps": CUmemPoolProps, "accessDescs": [], "accessDescCount": 0, "bytesize": 0,
        "dptr": CUdeviceptr(0),
    }  # fmt: skip

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, CUdeviceptr(as_int(value)) if name == "dptr" else value)


CUDA_MEM_ALLOC_NODE_PARAMS_v1 = CUDA_MEM_ALLOC_NODE_PARAMS
CUDA_MEM_ALLOC_NODE_PARAMS_v1_st = CUDA_MEM_ALLOC_NODE_PARAMS
CUDA_MEM_ALLOC_NODE_PARAMS_v2 = CUDA_MEM_ALLOC_NODE_PARAMS
CUDA_MEM_ALLOC_NODE_PARAMS_v2_st = CUDA_MEM_ALLOC_NODE_PARAMS


class CUDA_MEM_FREE_NODE_PARAMS(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"dptr": CUdeviceptr(0)}


CUDA_MEM_FREE_NODE_PARAMS_st = CUDA_MEM_FREE_NODE_PARAMS


class CUDA_CONDITIONAL_NODE_PARAMS(ValueStruct):
    """`phGraph_out` has `size` entries: 0 until the node is added, then its body graphs."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "handle": CUgraphConditionalHandle(0), "type": CUgraphConditionalNodeType(0), "size": 0,
        "phGraph_out": [], "ctx": CUcontext(0),
    }  # fmt: skip
    GRAPH: ClassVar[type[Handle]] = CUgraph

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "size":
            size = int(value)
            graphs = list(getattr(self, "phGraph_out", []))[:size]
            super().__setattr__("phGraph_out", graphs + [self.GRAPH(0)] * (size - len(graphs)))


class CUDA_BATCH_MEM_OP_NODE_PARAMS(ValueStruct):
    """A batch memory operation node: `count` operations of `paramArray`
    (CUstreamBatchMemOpParams), in context `ctx`."""

    FIELDS: ClassVar[dict[str, Any]] = {"ctx": CUcontext(0), "count": 0, "paramArray": [], "flags": 0}


CUDA_BATCH_MEM_OP_NODE_PARAMS_st = CUDA_BATCH_MEM_OP_NODE_PARAMS
CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 = CUDA_BATCH_MEM_OP_NODE_PARAMS
CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st = CUDA_BATCH_MEM_OP_NODE_PARAMS


class CUgraphNodeParams(ValueStruct):
    """What cuGraphAddNode builds: `type` names the arm that is read."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "type": CUgraphNodeType(0), "kernel": CUDA_KERNEL_NODE_PARAMS, "memcpy": _MemcpyNode,
        "memset": _MemsetNode, "graph": _ChildGraph, "eventWait": _EventNode,
        "eventRecord": _EventNode, "alloc": CUDA_MEM_ALLOC_NODE_PARAMS,
        "free": CUDA_MEM_FREE_NODE_PARAMS, "conditional": CUDA_CONDITIONAL_NODE_PARAMS,
        "memOp": CUDA_BATCH_MEM_OP_NODE_PARAMS,
    }  # fmt: skip


CUgraphNodeParams_st = CUgraphNodeParams


# -- runtime structs --------------------------------------------------------------------------


class cudaExternalMemoryMipmappedArrayDesc(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "offset": 0, "formatDesc": cudaChannelFormatDesc, "extent": cudaExtent, "flags": 0,
        "numLevels": 0,
    }  # fmt: skip


class cudaMemcpy3DPeerParms(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "srcArray": cudaArray_t(0), "srcPos": cudaPos, "srcPtr": cudaPitchedPtr, "srcDevice": 0,
        "dstArray": cudaArray_t(0), "dstPos": cudaPos, "dstPtr": cudaPitchedPtr, "dstDevice": 0,
        "extent": cudaExtent,
    }  # fmt: skip


# -- sizeof -----------------------------------------------------------------------------------

_SIZES: dict[str, int] = {
    "dim3": 12, "cudaChannelFormatDesc": 20, "cudaExtent": 24, "cudaPos": 24,
    "cudaPitchedPtr": 32, "cuuint32_t": 4, "CUdevice": 4, "cudaExternalMemoryMipmappedArrayDesc": 64,
    "CUDA_KERNEL_NODE_PARAMS_st": 56, "CUipcMemHandle_st": 64,
}  # fmt: skip


def sizeof(objType: Any) -> int:
    """The size in bytes of the C type a cuda-python type stands for; TypeError if unknown."""
    name = getattr(objType, "__name__", None)
    if name in _SIZES:
        return _SIZES[name]
    if isinstance(objType, type) and issubclass(objType, Handle):
        return ctypes.sizeof(objType._ctype)
    raise TypeError(f"Unknown type: {objType}")
