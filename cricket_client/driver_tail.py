"""Small driver calls written by hand: loading modules and libraries from files (read here,
sent as data), listing a module's functions and a library's kernels, kernel attributes and
parameters, loading states, pitched memsets of 16 and 32-bit values, PCI bus ids, and
cuEventRecordWithFlags.

A file named to cuModuleLoad or cuLibraryLoadFromFile is a file of the client (as the program
meant): it is read here, and a missing or unreadable one is CUDA_ERROR_FILE_NOT_FOUND, as
locally. Kernel calls that take a device (cuKernelGetAttribute, cuKernelSetAttribute,
cuKernelSetCacheConfig) act on the kernel's function in the current context, which must be on
that device.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from . import driver_arrays as da
from ._args import c_int, size_t, uint, unsigned
from ._driver_base import _SUCCESS, _conn, _fail, _handle, _out, _stream
from ._enums import (
    CUevent_record_flags,
    CUfunctionLoadingState,
    CUmoduleLoadingMode,
    CUresult,
    CUsharedconfig,
)
from ._types import CUdevice, CUfunction, CUkernel, CUlibrary, CUmodule, as_int
from .array_types import CUDA_MEMCPY3D
from .connection import Connection
from .runtime_types import Struct

__all__ = [
    "CUtensorMap",
    "cuTensorMapEncodeIm2col",
    "cuTensorMapEncodeTiled",
    "cuTensorMapReplaceAddress",
    "CUDA_MEMCPY3D_PEER",
    "cuMemcpy3DPeer",
    "cuMemcpy3DPeerAsync",
    "cuDeviceGetByPCIBusId",
    "cuEventRecordWithFlags",
    "cuFuncGetParamCount",
    "cuFuncIsLoaded",
    "cuKernelGetAttribute",
    "cuKernelGetParamCount",
    "cuKernelGetParamInfo",
    "cuKernelSetAttribute",
    "cuKernelSetCacheConfig",
    "cuLibraryEnumerateKernels",
    "cuLibraryGetKernelCount",
    "cuLibraryLoadFromFile",
    "cuMemcpyAtoHAsync",
    "cuMemcpyHtoAAsync",
    "cuMemsetD2D8",
    "cuMemsetD2D8Async",
    "cuMemsetD2D16",
    "cuMemsetD2D16Async",
    "cuMemsetD2D32",
    "cuMemsetD2D32Async",
    "cuModuleEnumerateFunctions",
    "cuModuleGetFunctionCount",
    "cuModuleGetLoadingMode",
    "cuModuleLoad",
    "cuCtxGetSharedMemConfig",
    "cuStreamBatchMemOp",
    "cuStreamGetCtx_v2",
    "cuStreamWaitValue32",
    "cuStreamWaitValue64",
    "cuStreamWriteValue32",
    "cuStreamWriteValue64",
]

_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE
_INVALID_DEVICE = CUresult.CUDA_ERROR_INVALID_DEVICE
_FILE_NOT_FOUND = CUresult.CUDA_ERROR_FILE_NOT_FOUND


# -- modules and libraries from files --------------------------------------------------------


def read_image_file(conn: Connection, call: str, name: Any) -> bytes | None:
    """The bytes of the client's file `name` (str, bytes or path), or None with the
    connection's last error saying why (the caller answers CUDA_ERROR_FILE_NOT_FOUND)."""
    try:
        path = os.fsdecode(name)
        with open(path, "rb") as f:
            return f.read()
    except (OSError, TypeError, ValueError) as exc:
        conn.set_local_error(f"{call}: cannot read {name!r} on the client: {exc}")
        return None


def cuModuleLoad(fname: Any) -> tuple[Any, CUmodule | None]:
    from .driver import cuModuleLoadData

    conn = _conn()
    data = read_image_file(conn, "cuModuleLoad", fname)
    if data is None:
        return (_FILE_NOT_FOUND, None)
    return cuModuleLoadData(data)  # type: ignore[no-any-return]


def cuLibraryLoadFromFile(
    fileName: Any,
    jitOptions: Sequence[Any] | None,
    jitOptionsValues: Sequence[Any] | None,
    numJitOptions: int,
    libraryOptions: Sequence[Any] | None,
    libraryOptionValues: Sequence[Any] | None,
    numLibraryOptions: int,
) -> tuple[Any, CUlibrary | None]:
    from .driver import cuLibraryLoadData

    conn = _conn()
    data = read_image_file(conn, "cuLibraryLoadFromFile", fileName)
    if data is None:
        return (_FILE_NOT_FOUND, None)
    return cuLibraryLoadData(  # type: ignore[no-any-return]
        data,
        jitOptions,
        jitOptionsValues,
        numJitOptions,
        libraryOptions,
        libraryOptionValues,
        numLibraryOptions,
    )


# -- listing functions and kernels -----------------------------------------------------------


def _listed(proc: str, handle: Any, what: str) -> tuple[int, list[int]]:
    err, r = _conn().sync(proc, _handle(handle, what))
    return (err, []) if err else (0, [int(h) for h in r.value])


def cuModuleGetFunctionCount(mod: Any) -> tuple[Any, int | None]:
    err, handles = _listed("CU_MODULE_ENUMERATE_FUNCTIONS", mod, "mod")
    return _out(err, len(handles))


def _enumerated(call: str, proc: str, n: int, handle: Any, what: str, kind: type) -> tuple[Any, Any]:
    """The first `n` handles of the list (as many entries as asked, as cuda-python gives);
    `what` names the handle's parameter ("mod", "lib")."""
    count = uint(n, f"{call}: count")
    err, handles = _listed(proc, handle, what)
    if err:
        return _out(err, None)
    return (_SUCCESS, [kind(h) for h in (handles + [0] * count)[:count]])


def cuModuleEnumerateFunctions(numFunctions: int, mod: Any) -> tuple[Any, list[CUfunction] | None]:
    call, proc = "cuModuleEnumerateFunctions", "CU_MODULE_ENUMERATE_FUNCTIONS"
    return _enumerated(call, proc, numFunctions, mod, "mod", CUfunction)


def cuLibraryGetKernelCount(lib: Any) -> tuple[Any, int | None]:
    err, handles = _listed("CU_LIBRARY_ENUMERATE_KERNELS", lib, "lib")
    return _out(err, len(handles))


def cuLibraryEnumerateKernels(numKernels: int, lib: Any) -> tuple[Any, list[CUkernel] | None]:
    call, proc = "cuLibraryEnumerateKernels", "CU_LIBRARY_ENUMERATE_KERNELS"
    return _enumerated(call, proc, numKernels, lib, "lib", CUkernel)


def cuModuleGetLoadingMode() -> tuple[Any, CUmoduleLoadingMode | None]:
    err, value = _conn().call("CU_MODULE_GET_LOADING_MODE")
    return _out(err, CUmoduleLoadingMode(value) if not err else None)


def cuFuncIsLoaded(function: Any) -> tuple[Any, CUfunctionLoadingState | None]:
    err, value = _conn().call("CU_FUNC_IS_LOADED", _handle(function, "function"))
    return _out(err, CUfunctionLoadingState(value) if not err else None)


# -- parameters and attributes of kernels and functions --------------------------------------


def _param_count(call: str, func: Any, what: str) -> tuple[Any, int | None]:
    err, layout = _conn().param_layout(_handle(func, what))
    return _out(err, len(layout))


def cuFuncGetParamCount(func: Any) -> tuple[Any, int | None]:
    return _param_count("cuFuncGetParamCount", func, "func")


def cuKernelGetParamCount(kernel: Any) -> tuple[Any, int | None]:
    return _param_count("cuKernelGetParamCount", kernel, "kernel")


def cuKernelGetParamInfo(kernel: Any, paramIndex: int) -> tuple[Any, int | None, int | None]:
    from .driver import _param_info

    return _param_info("cuKernelGetParamInfo", "kernel", kernel, paramIndex)


def _on_current_device(conn: Connection, call: str, dev: Any) -> int:
    """0 when `dev` is the current context's device, else the CUresult (message set)."""
    from .driver import cuCtxGetDevice

    err, current = cuCtxGetDevice()
    if err:
        return int(err)
    want = as_int(dev)
    if as_int(current) != want:
        _fail(
            conn,
            _INVALID_DEVICE,
            f"{call}: device {want} is not the current context's device {as_int(current)} "
            "(a kernel's function is taken in the current context)",
            0,
        )
        return int(_INVALID_DEVICE)
    return 0


def cuKernelGetAttribute(attrib: Any, kernel: Any, dev: Any) -> tuple[Any, int | None]:
    conn = _conn()
    err = _on_current_device(conn, "cuKernelGetAttribute", dev)
    if err:
        return _out(err, None)
    err, value = conn.call("CU_FUNC_GET_ATTRIBUTE", int(attrib), _handle(kernel, "kernel"))
    return _out(err, value)


def cuKernelSetAttribute(attrib: Any, val: int, kernel: Any, dev: Any) -> tuple[Any]:
    val = c_int(val, "cuKernelSetAttribute: val")
    conn = _conn()
    err = _on_current_device(conn, "cuKernelSetAttribute", dev)
    if err:
        return _out(err)
    return _out(conn.call("CU_FUNC_SET_ATTRIBUTE", _handle(kernel, "kernel"), int(attrib), val)[0])


def cuKernelSetCacheConfig(kernel: Any, config: Any, dev: Any) -> tuple[Any]:
    conn = _conn()
    err = _on_current_device(conn, "cuKernelSetCacheConfig", dev)
    if err:
        return _out(err)
    return _out(conn.call("CU_FUNC_SET_CACHE_CONFIG", _handle(kernel, "kernel"), int(config))[0])


# -- contexts, streams and events ------------------------------------------------------------


def cuCtxGetSharedMemConfig() -> tuple[Any, CUsharedconfig | None]:
    err, value = _conn().call("CU_CTX_GET_SHARED_MEM_CONFIG")
    return _out(err, CUsharedconfig(value) if not err else None)



def cuStreamGetCtx_v2(hStream: Any) -> tuple[Any, Any, Any]:
    """The stream's context; no stream belongs to a green context remotely (None)."""
    from .driver import cuStreamGetCtx

    err, ctx = cuStreamGetCtx(hStream)
    return (err, ctx, None) if not err else (err, None, None)


def cuEventRecordWithFlags(hEvent: Any, hStream: Any, flags: int) -> tuple[Any]:
    """CU_EVENT_RECORD_EXTERNAL only changes what a stream capture makes of the record (an
    external event node, which graphs here do not model): refused while the stream captures,
    a plain record otherwise."""
    from .driver import cuEventRecord
    from .driver_graphs import cuStreamIsCapturing

    call = "cuEventRecordWithFlags"
    flags = uint(flags, f"{call}: flags")
    external = int(CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL)
    if flags & ~external:
        return _fail(_conn(), _INVALID_VALUE, f"{call}: unknown flags {flags:#x}", 0)
    if flags & external:
        err, status = cuStreamIsCapturing(hStream)
        if err:
            return (err,)
        if int(status):
            return _fail(
                _conn(),
                CUresult.CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: CU_EVENT_RECORD_EXTERNAL in a stream capture (external event nodes) "
                "is not supported remotely",
                0,
            )
    return cuEventRecord(hEvent, hStream)  # type: ignore[no-any-return]


# -- pitched memsets -------------------------------------------------------------------------


def _memset_2d(
    size: int, dst: Any, pitch: int, value: int, width: int, height: int, stream: Any, asynchronous: bool
) -> tuple[Any]:
    call = f"cuMemsetD2D{8 * size}{'Async' if asynchronous else ''}"
    pitch = size_t(pitch, f"{call}: dstPitch")
    value = unsigned(value, size, f"{call}: value")
    width = size_t(width, f"{call}: Width")
    height = size_t(height, f"{call}: Height")
    args = (_handle(dst, "dstDevice"), pitch, value, size, width, height)
    conn = _conn()
    if not asynchronous:
        return _out(conn.sync("CU_MEMSET_D2D", *args, 0)[0])
    conn.post("CU_MEMSET_D2D", *args, _stream(stream))
    return (_SUCCESS,)


def cuMemsetD2D8(dstDevice: Any, dstPitch: int, uc: int, Width: int, Height: int) -> tuple[Any]:
    return _memset_2d(1, dstDevice, dstPitch, uc, Width, Height, None, False)


def cuMemsetD2D16(dstDevice: Any, dstPitch: int, us: int, Width: int, Height: int) -> tuple[Any]:
    return _memset_2d(2, dstDevice, dstPitch, us, Width, Height, None, False)


def cuMemsetD2D32(dstDevice: Any, dstPitch: int, ui: int, Width: int, Height: int) -> tuple[Any]:
    return _memset_2d(4, dstDevice, dstPitch, ui, Width, Height, None, False)


def cuMemsetD2D8Async(
    dstDevice: Any, dstPitch: int, uc: int, Width: int, Height: int, hStream: Any
) -> tuple[Any]:
    return _memset_2d(1, dstDevice, dstPitch, uc, Width, Height, hStream, True)


def cuMemsetD2D16Async(
    dstDevice: Any, dstPitch: int, us: int, Width: int, Height: int, hStream: Any
) -> tuple[Any]:
    return _memset_2d(2, dstDevice, dstPitch, us, Width, Height, hStream, True)


def cuMemsetD2D32Async(
    dstDevice: Any, dstPitch: int, ui: int, Width: int, Height: int, hStream: Any
) -> tuple[Any]:
    return _memset_2d(4, dstDevice, dstPitch, ui, Width, Height, hStream, True)


# -- PCI bus ids -----------------------------------------------------------------------------

# "[domain]:[bus]:[device].[function]", "[domain]:[bus]:[device]", "[bus]:[device].[function]"
_BUS_ID = re.compile(
    r"^\s*(?:(?P<domain>[0-9a-fA-F]+):)?(?P<bus>[0-9a-fA-F]+):(?P<device>[0-9a-fA-F]+)"
    r"(?:\.(?P<function>[0-9a-fA-F]+))?\s*$"
)


def parse_bus_id(text: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a PCI bus id, or None when it is none."""
    m = _BUS_ID.match(text)
    if m is None or (m.group("domain") is None and m.group("function") is None):
        return None
    return int(m.group("domain") or "0", 16), int(m.group("bus"), 16), int(m.group("device"), 16)


def cuDeviceGetByPCIBusId(pciBusId: Any) -> tuple[Any, CUdevice | None]:
    """The server's device with that bus id (the ids cuDeviceGetPCIBusId answers)."""
    from .driver import cuDeviceGetCount, cuDeviceGetPCIBusId

    conn = _conn()
    call = "cuDeviceGetByPCIBusId"
    text = pciBusId.decode(errors="replace") if isinstance(pciBusId, bytes) else str(pciBusId)
    wanted = parse_bus_id(text.split("\0", 1)[0])
    if wanted is None:
        return _fail(conn, _INVALID_VALUE, f"{call}: {text!r} is not a PCI bus id", 1)
    err, count = cuDeviceGetCount()
    if err or count is None:
        return (err, None)
    for dev in range(count):
        err, raw = cuDeviceGetPCIBusId(64, CUdevice(dev))
        if err or raw is None:
            return (err, None)
        if parse_bus_id(raw.split(b"\0", 1)[0].decode()) == wanted:
            return (_SUCCESS, CUdevice(dev))
    return _fail(conn, _INVALID_DEVICE, f"{call}: no device of the server has bus id {text!r}", 1)


# -- array copies ordered on a stream --------------------------------------------------------


def cuMemcpyHtoAAsync(
    dstArray: Any, dstOffset: int, srcHost: Any, ByteCount: int, hStream: Any
) -> tuple[Any]:
    """As cuMemcpyHtoA, ordered on `hStream` (answered when done: host memory is the
    client's)."""
    call = "cuMemcpyHtoAAsync"
    return _out(da.array_linear_copy(
        _conn(), call, as_int(dstArray), size_t(dstOffset, f"{call}: dstOffset"),
        da.Side(da.MEMORY_HOST, host=srcHost), size_t(ByteCount, f"{call}: ByteCount"), True,
        da.wire_stream(hStream),
    ))  # fmt: skip


def cuMemcpyAtoHAsync(
    dstHost: Any, srcArray: Any, srcOffset: int, ByteCount: int, hStream: Any
) -> tuple[Any]:
    call = "cuMemcpyAtoHAsync"
    return _out(da.array_linear_copy(
        _conn(), call, as_int(srcArray), size_t(srcOffset, f"{call}: srcOffset"),
        da.Side(da.MEMORY_HOST, host=dstHost), size_t(ByteCount, f"{call}: ByteCount"), False,
        da.wire_stream(hStream),
    ))  # fmt: skip


# -- 3D copies between contexts --------------------------------------------------------------


class CUDA_MEMCPY3D_PEER(Struct):
    """CUDA_MEMCPY3D with the context of each side."""

    FIELDS: ClassVar[dict[str, Any]] = {
        **CUDA_MEMCPY3D.FIELDS,
        "srcContext": None,
        "dstContext": None,
    }


def _peer(call: str, p: Any, stream: Any) -> tuple[Any]:
    """A copy between contexts of one device is a 3D copy (one address space); between two
    devices it is refused."""
    from .driver import cuCtxGetDevice_v2

    conn = _conn()
    if p is None:
        return _fail(conn, _INVALID_VALUE, f"{call}: pCopy is None", 0)  # type: ignore[return-value]
    devices = []
    for side in ("src", "dst"):
        err, dev = cuCtxGetDevice_v2(getattr(p, f"{side}Context"))
        if err or dev is None:
            return (err,)
        devices.append(int(dev))
    if devices[0] != devices[1]:
        return _fail(  # type: ignore[return-value]
            conn,
            CUresult.CUDA_ERROR_NOT_SUPPORTED,
            f"{call}: copies between two devices (contexts of devices {devices[0]} and "
            f"{devices[1]}) are not supported remotely; use cuMemcpyPeer for linear memory",
            0,
        )
    same = CUDA_MEMCPY3D(**{name: getattr(p, name) for name in CUDA_MEMCPY3D.FIELDS})
    if stream is None:
        return da.cuMemcpy3D(same)
    return da.cuMemcpy3DAsync(same, stream)


def cuMemcpy3DPeer(pCopy: Any) -> tuple[Any]:
    return _peer("cuMemcpy3DPeer", pCopy, None)


def cuMemcpy3DPeerAsync(pCopy: Any, hStream: Any) -> tuple[Any]:
    return _peer("cuMemcpy3DPeerAsync", pCopy, hStream)


# -- stream memory operations ----------------------------------------------------------------

_WAIT_32, _WRITE_32, _FLUSH, _WAIT_64, _WRITE_64, _BARRIER = 1, 2, 3, 4, 5, 6


def _mem_ops(call: str, hStream: Any, ops: list[tuple[int, int, int, int]], flags: int) -> tuple[Any]:
    """Posted in order on the stream (a failure arrives with the next synchronizing call)."""
    conn = _conn()
    wire = [conn.proto.stream_mem_op(op=o, flags=f, address=a, value=v) for o, f, a, v in ops]
    conn.post("CU_STREAM_BATCH_MEM_OP", _stream(hStream), wire, uint(flags, f"{call}: flags"))
    return (_SUCCESS,)


def _one_op(call: str, op: int, width: int, stream: Any, addr: Any, value: Any, flags: int) -> tuple[Any]:
    v = unsigned(as_int(value), width, f"{call}: value")
    f = uint(flags, f"{call}: flags")
    return _mem_ops(call, stream, [(op, f, _handle(addr, "addr"), v)], 0)


def cuStreamWaitValue32(stream: Any, addr: Any, value: Any, flags: int) -> tuple[Any]:
    return _one_op("cuStreamWaitValue32", _WAIT_32, 4, stream, addr, value, flags)


def cuStreamWaitValue64(stream: Any, addr: Any, value: Any, flags: int) -> tuple[Any]:
    return _one_op("cuStreamWaitValue64", _WAIT_64, 8, stream, addr, value, flags)


def cuStreamWriteValue32(stream: Any, addr: Any, value: Any, flags: int) -> tuple[Any]:
    return _one_op("cuStreamWriteValue32", _WRITE_32, 4, stream, addr, value, flags)


def cuStreamWriteValue64(stream: Any, addr: Any, value: Any, flags: int) -> tuple[Any]:
    return _one_op("cuStreamWriteValue64", _WRITE_64, 8, stream, addr, value, flags)


def _mem_op(p: Any) -> tuple[int, int, int, int]:
    """(operation, flags, address, value) of a CUstreamBatchMemOpParams, read from the arm
    its operation names."""
    op = int(p.operation)
    if op in (_WAIT_32, _WAIT_64, _WRITE_32, _WRITE_64):
        arm = p.waitValue if op in (_WAIT_32, _WAIT_64) else p.writeValue
        value = as_int(arm.value64) if op in (_WAIT_64, _WRITE_64) else as_int(arm.value)
        return op, int(arm.flags), as_int(arm.address), value
    if op == _BARRIER:
        return op, int(p.memoryBarrier.flags), 0, 0
    if op == _FLUSH:
        return op, int(p.flushRemoteWrites.flags), 0, 0
    return op, 0, 0, 0


def cuStreamBatchMemOp(stream: Any, count: int, paramArray: Sequence[Any] | None, flags: int) -> tuple[Any]:
    n = uint(count, "cuStreamBatchMemOp: count")
    params = list(paramArray or [])
    if len(params) < n:
        return _fail(  # type: ignore[return-value]
            _conn(), _INVALID_VALUE, f"cuStreamBatchMemOp: count {n} but {len(params)} operations given", 0
        )
    return _mem_ops("cuStreamBatchMemOp", stream, [_mem_op(p) for p in params[:n]], flags)


# -- tensor maps -----------------------------------------------------------------------------

_TENSOR_MAP_WORDS = 16  # 128 bytes


class CUtensorMap(ctypes.Structure):
    """A Hopper tensor map: 128 bytes the server's driver encodes. A kernel takes it by value
    (pass it with type None, as a ctypes structure)."""

    _fields_ = [("_words", ctypes.c_uint64 * _TENSOR_MAP_WORDS)]

    @property
    def opaque(self) -> list[Any]:
        from .plain_types import cuuint64_t

        return [cuuint64_t(int(w)) for w in self._words]

    @opaque.setter
    def opaque(self, values: Sequence[Any]) -> None:
        words = [as_int(v) for v in values]
        if len(words) != _TENSOR_MAP_WORDS:
            raise ValueError(f"CUtensorMap.opaque takes {_TENSOR_MAP_WORDS} values, got {len(words)}")
        self._words[:] = words

    def getPtr(self) -> int:
        return ctypes.addressof(self)

    def _set(self, raw: bytes) -> None:
        ctypes.memmove(ctypes.addressof(self), raw, ctypes.sizeof(self))


def _ints(values: Sequence[Any] | None) -> list[int]:
    return [as_int(v) for v in (values or [])]


def _encode(call: str, kind: int, tensorDataType: Any, tensorRank: Any, globalAddress: Any,
            globalDim: Any, globalStrides: Any, elementStrides: Any, interleave: Any, swizzle: Any,
            l2Promotion: Any, oobFill: Any, **im2col_or_tiled: Any) -> tuple[Any, CUtensorMap | None]:  # fmt: skip
    conn = _conn()
    fields = {
        "box_dim": [], "lower_corner": [], "upper_corner": [],
        "channels_per_pixel": 0, "pixels_per_column": 0, **im2col_or_tiled,
    }  # fmt: skip
    args = conn.proto.tensor_map_args(
        kind=kind, data_type=int(tensorDataType), rank=uint(as_int(tensorRank), f"{call}: tensorRank"),
        address=_handle(globalAddress, "globalAddress"), global_dim=_ints(globalDim),
        global_strides=_ints(globalStrides), element_strides=_ints(elementStrides),
        interleave=int(interleave), swizzle=int(swizzle), l2_promotion=int(l2Promotion),
        oob_fill=int(oobFill), **fields,
    )  # fmt: skip
    err, r = conn.sync("CU_TENSOR_MAP_ENCODE", args)
    if err:
        return _out(err, None)
    made = CUtensorMap()
    made._set(bytes(r.value))
    return (_SUCCESS, made)


def cuTensorMapEncodeTiled(
    tensorDataType: Any, tensorRank: Any, globalAddress: Any, globalDim: Any, globalStrides: Any,
    boxDim: Any, elementStrides: Any, interleave: Any, swizzle: Any, l2Promotion: Any, oobFill: Any,
) -> tuple[Any, CUtensorMap | None]:  # fmt: skip
    return _encode(
        "cuTensorMapEncodeTiled", 0, tensorDataType, tensorRank, globalAddress, globalDim,
        globalStrides, elementStrides, interleave, swizzle, l2Promotion, oobFill,
        box_dim=_ints(boxDim),
    )  # fmt: skip


def cuTensorMapEncodeIm2col(
    tensorDataType: Any, tensorRank: Any, globalAddress: Any, globalDim: Any, globalStrides: Any,
    pixelBoxLowerCorner: Any, pixelBoxUpperCorner: Any, channelsPerPixel: Any,
    pixelsPerColumn: Any, elementStrides: Any, interleave: Any, swizzle: Any, l2Promotion: Any,
    oobFill: Any,
) -> tuple[Any, CUtensorMap | None]:  # fmt: skip
    call = "cuTensorMapEncodeIm2col"
    return _encode(
        call, 1, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
        elementStrides, interleave, swizzle, l2Promotion, oobFill,
        lower_corner=[int(v) for v in pixelBoxLowerCorner or []],
        upper_corner=[int(v) for v in pixelBoxUpperCorner or []],
        channels_per_pixel=uint(as_int(channelsPerPixel), f"{call}: channelsPerPixel"),
        pixels_per_column=uint(as_int(pixelsPerColumn), f"{call}: pixelsPerColumn"),
    )  # fmt: skip


def cuTensorMapReplaceAddress(tensorMap: Any, globalAddress: Any) -> tuple[Any]:
    """The caller's CUtensorMap is changed in place, as locally."""
    conn = _conn()
    if not isinstance(tensorMap, CUtensorMap):
        return _fail(conn, _INVALID_VALUE, "cuTensorMapReplaceAddress: tensorMap is not a CUtensorMap", 0)  # type: ignore[return-value]
    err, r = conn.sync("CU_TENSOR_MAP_REPLACE_ADDRESS", bytes(tensorMap), _handle(globalAddress, "globalAddress"))
    if err:
        return _out(err)  # type: ignore[return-value]
    tensorMap._set(bytes(r.value))
    return (_SUCCESS,)
