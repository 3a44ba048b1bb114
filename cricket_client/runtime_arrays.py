"""Arrays, 2D/3D copies, texture and surface objects of `cuda.bindings.runtime`, remote.

Channel descriptors and make_cudaPos/Extent/PitchedPtr are computed here; everything else
goes through the driver forms of `cricket_client.driver_arrays` on the same connection, with
the runtime's lazy context (`runtime_state.activate`) and last error. cudaMemcpy3D counts
positions and extents in elements of the array taking part (bytes without one), as CUDA does.
"""

from __future__ import annotations

from typing import Any

from . import driver_arrays as da
from ._args import size_t, uint
from ._runtime_enums import (
    cudaChannelFormatKind,
    cudaError_t,
    cudaMemcpyKind,
    cudaResourceType,
    cudaResourceViewFormat,
    cudaTextureAddressMode,
    cudaTextureFilterMode,
    cudaTextureReadMode,
)
from ._types import as_int
from .array_types import (
    MEMORY_ARRAY,
    MEMORY_DEVICE,
    MEMORY_HOST,
    cudaArray_t,
    cudaChannelFormatDesc,
    cudaExtent,
    cudaMemcpy3DParms,
    cudaPitchedPtr,
    cudaPos,
    cudaResourceDesc,
    cudaResourceViewDesc,
    cudaSurfaceObject_t,
    cudaTextureDesc,
    cudaTextureObject_t,
)
from .connection import Connection, get_connection
from .host_buffers import HostBufferError
from .runtime_state import STICKY_ERRORS, activate, thread_state

__all__ = [
    "cudaArray_t",
    "cudaTextureObject_t",
    "cudaSurfaceObject_t",
    "cudaChannelFormatDesc",
    "cudaExtent",
    "cudaPos",
    "cudaPitchedPtr",
    "cudaMemcpy3DParms",
    "cudaResourceDesc",
    "cudaTextureDesc",
    "cudaResourceViewDesc",
    "make_cudaPos",
    "make_cudaExtent",
    "make_cudaPitchedPtr",
    "cudaCreateChannelDesc",
    "cudaGetChannelDesc",
    "cudaMallocArray",
    "cudaMalloc3DArray",
    "cudaMalloc3D",
    "cudaFreeArray",
    "cudaArrayGetInfo",
    "cudaMemcpy2DToArray",
    "cudaMemcpy2DToArrayAsync",
    "cudaMemcpy2DFromArray",
    "cudaMemcpy2DFromArrayAsync",
    "cudaMemcpy2DArrayToArray",
    "cudaMemcpyToArray",
    "cudaMemcpyFromArray",
    "cudaMemcpy3D",
    "cudaMemcpy3DAsync",
    "cudaCreateTextureObject",
    "cudaDestroyTextureObject",
    "cudaGetTextureObjectResourceDesc",
    "cudaGetTextureObjectTextureDesc",
    "cudaGetTextureObjectResourceViewDesc",
    "cudaCreateSurfaceObject",
    "cudaDestroySurfaceObject",
    "cudaGetSurfaceObjectResourceDesc",
]

_SUCCESS = cudaError_t.cudaSuccess
_INVALID_VALUE = cudaError_t.cudaErrorInvalidValue
_BAD_CHANNELS = cudaError_t.cudaErrorInvalidChannelDescriptor
_BAD_DIRECTION = cudaError_t.cudaErrorInvalidMemcpyDirection
READ_AS_INTEGER = 0x01  # CU_TRSF_*
NORMALIZED_COORDINATES = 0x02
SRGB = 0x10
DISABLE_TRILINEAR_OPTIMIZATION = 0x20
SEAMLESS_CUBEMAP = 0x40

# (cudaChannelFormatKind, bits) <-> CUarray_format
_FORMATS = {(1, 8): 0x01, (1, 16): 0x02, (1, 32): 0x03, (0, 8): 0x08, (0, 16): 0x09,
            (0, 32): 0x0A, (2, 16): 0x10, (2, 32): 0x20}  # fmt: skip
_KINDS = {fmt: kind_bits for kind_bits, fmt in _FORMATS.items()}


def _error(code: Any) -> Any:
    try:
        return cudaError_t(int(code))
    except ValueError:
        return int(code)


def _ret(err: Any, *values: Any, conn: Connection | None = None) -> tuple[Any, ...]:
    code = _error(err)
    if code != _SUCCESS:
        thread_state().record(int(code), conn if int(code) in STICKY_ERRORS else None)
        return (code,) + (None,) * len(values)
    return (code, *values)


def _fail(conn: Connection | None, code: Any, message: str, outputs: int) -> tuple[Any, ...]:
    if conn is not None:
        conn.set_local_error(message)
    return _ret(code, *([None] * outputs))


def _ready() -> tuple[int, Connection]:
    conn = get_connection()
    return activate(conn), conn


# -- channel descriptors and small structs (local) ------------------------------------------


def make_cudaPos(x: int, y: int, z: int) -> cudaPos:
    return cudaPos(x=size_t(x, "make_cudaPos: x"), y=size_t(y, "make_cudaPos: y"),
                   z=size_t(z, "make_cudaPos: z"))  # fmt: skip


def make_cudaExtent(w: int, h: int, d: int) -> cudaExtent:
    return cudaExtent(width=size_t(w, "make_cudaExtent: w"), height=size_t(h, "make_cudaExtent: h"),
                      depth=size_t(d, "make_cudaExtent: d"))  # fmt: skip


def make_cudaPitchedPtr(d: Any, p: int, xsz: int, ysz: int) -> cudaPitchedPtr:
    """`d` is a device or host address, or a host buffer (kept as given: copies read it)."""
    return cudaPitchedPtr(
        ptr=d if _is_buffer(d) else as_int(d),
        pitch=size_t(p, "make_cudaPitchedPtr: p"),
        xsize=size_t(xsz, "make_cudaPitchedPtr: xsz"),
        ysize=size_t(ysz, "make_cudaPitchedPtr: ysz"),
    )


def cudaCreateChannelDesc(
    x: int, y: int, z: int, w: int, f: Any
) -> tuple[Any, cudaChannelFormatDesc]:
    return (_SUCCESS, cudaChannelFormatDesc(x=int(x), y=int(y), z=int(z), w=int(w),
                                            f=cudaChannelFormatKind(int(f))))  # fmt: skip


def format_of(desc: Any) -> tuple[int, int] | None:
    """(CUarray_format, channels) of a channel descriptor, None when CUDA has none for it."""
    bits = [int(desc.x), int(desc.y), int(desc.z), int(desc.w)]
    channels = len([b for b in bits if b])
    if (
        channels not in (1, 2, 4)
        or any(b != bits[0] for b in bits[:channels])
        or any(bits[channels:])
    ):
        return None
    fmt = _FORMATS.get((int(desc.f), bits[0]))
    return None if fmt is None else (fmt, channels)


def channel_desc(fmt: int, channels: int) -> cudaChannelFormatDesc:
    kind, bits = _KINDS.get(fmt, (1, 8))
    xyzw = [bits if i < channels else 0 for i in range(4)]
    return cudaChannelFormatDesc(x=xyzw[0], y=xyzw[1], z=xyzw[2], w=xyzw[3],
                                 f=cudaChannelFormatKind(kind))  # fmt: skip


# -- arrays ---------------------------------------------------------------------------------


def _malloc_array(
    call: str, desc: Any, w: int, h: int, d: int, flags: int, levels: int = 0
) -> tuple[Any, ...]:
    """An array, or with `levels` a mipmapped array of that many levels."""
    err, conn = _ready()
    if err:
        return _ret(err, None)
    if desc is None:
        return _fail(conn, _INVALID_VALUE, f"{call}: desc is None", 1)
    found = format_of(desc)
    if found is None:
        return _fail(
            conn, _BAD_CHANNELS, f"{call}: no array format for {desc!r}".replace("\n", " "), 1
        )
    if levels:
        from .driver_mipmaps import mipmap_create
        from .resource_types import cudaMipmappedArray_t

        err, handle = mipmap_create(conn, w, h, d, found[0], found[1], flags, levels)
        return _ret(err, cudaMipmappedArray_t(handle), conn=conn)
    err, handle = da.array_create(conn, w, h, d, found[0], found[1], flags)
    return _ret(err, cudaArray_t(handle), conn=conn)


def cudaMallocArray(
    desc: Any, width: int, height: int, flags: int
) -> tuple[Any, cudaArray_t | None]:
    call = "cudaMallocArray"
    return _malloc_array(call, desc, size_t(width, f"{call}: width"), size_t(height, f"{call}: height"),
                         0, uint(flags, f"{call}: flags"))  # fmt: skip


def cudaMalloc3DArray(desc: Any, extent: Any, flags: int) -> tuple[Any, cudaArray_t | None]:
    call = "cudaMalloc3DArray"
    return _malloc_array(call, desc, size_t(extent.width, f"{call}: width"),
                         size_t(extent.height, f"{call}: height"), size_t(extent.depth, f"{call}: depth"),
                         uint(flags, f"{call}: flags"))  # fmt: skip


def cudaFreeArray(array: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    if as_int(array) == 0:
        return (_SUCCESS,)
    return _ret(da.array_destroy(conn, as_int(array)), conn=conn)


def cudaArrayGetInfo(array: Any) -> tuple[Any, Any, Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None, None, None)
    err, info = da.array_info(conn, as_int(array), ask=True)
    if err or info is None:
        return _ret(err or _INVALID_VALUE, None, None, None, conn=conn)
    return (_SUCCESS, channel_desc(info.format, info.channels),
            cudaExtent(width=info.width, height=info.height, depth=info.depth), info.flags)  # fmt: skip


def cudaGetChannelDesc(array: Any) -> tuple[Any, cudaChannelFormatDesc | None]:
    err, desc, _extent, _flags = cudaArrayGetInfo(array)
    return (err, desc)


def cudaMalloc3D(extent: Any) -> tuple[Any, cudaPitchedPtr | None]:
    """Pitched memory for `depth` slices of `height` rows (cudaMallocPitch's pitch)."""
    from . import driver

    call = "cudaMalloc3D"
    w, h, d = (size_t(extent.width, f"{call}: width"), size_t(extent.height, f"{call}: height"),
               size_t(extent.depth, f"{call}: depth"))  # fmt: skip
    err, conn = _ready()
    if err:
        return _ret(err, None)
    if not (w and h and d):
        return (_SUCCESS, cudaPitchedPtr(ptr=0, pitch=w, xsize=w, ysize=h))
    err, ptr, pitch = driver.cuMemAllocPitch(w, h * d, 4)
    if err:
        return _ret(err, None, conn=conn)
    return (_SUCCESS, cudaPitchedPtr(ptr=as_int(ptr), pitch=pitch, xsize=w, ysize=h))


# -- copies ---------------------------------------------------------------------------------


def _is_buffer(obj: Any) -> bool:
    if isinstance(obj, int) or hasattr(obj, "getPtr") or obj is None:
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _pointer_kinds(conn: Connection, kind: Any, src: Any, dst: Any) -> tuple[int, int] | None:
    """(source, destination) memory types of a cudaMemcpyKind; None when it is none."""
    try:
        k = int(kind)
    except (TypeError, ValueError):
        return None

    def where(obj: Any) -> int:
        if _is_buffer(obj) or not conn.is_device_address(as_int(obj)):
            return MEMORY_HOST
        return MEMORY_DEVICE

    return {
        cudaMemcpyKind.cudaMemcpyHostToHost: (MEMORY_HOST, MEMORY_HOST),
        cudaMemcpyKind.cudaMemcpyHostToDevice: (MEMORY_HOST, MEMORY_DEVICE),
        cudaMemcpyKind.cudaMemcpyDeviceToHost: (MEMORY_DEVICE, MEMORY_HOST),
        cudaMemcpyKind.cudaMemcpyDeviceToDevice: (MEMORY_DEVICE, MEMORY_DEVICE),
    }.get(k) or ((where(src), where(dst)) if k == cudaMemcpyKind.cudaMemcpyDefault else None)  # type: ignore[call-overload]


def _pointer_side(
    kind: int, obj: Any, pitch: int, height: int = 0, x: int = 0, y: int = 0, z: int = 0
) -> da.Side:
    if kind == MEMORY_HOST:
        return da.Side(MEMORY_HOST, host=obj if _is_buffer(obj) else as_int(obj), pitch=pitch,
                       height=height, x=x, y=y, z=z)  # fmt: skip
    return da.Side(MEMORY_DEVICE, ptr=as_int(obj), pitch=pitch, height=height, x=x, y=y, z=z)


def _stream(stream: Any) -> int:
    return 0 if stream is None else da.wire_stream(stream)


def _copy(call: str, src: Any, dst: Any, width: int, height: int, depth: int, stream: int,
          conn: Connection) -> tuple[Any]:  # fmt: skip
    try:
        err = da.copy_3d(conn, call, src, dst, width, height, depth, stream)
    except TypeError:
        raise
    return _ret(err, conn=conn)


def _to_array(call: str, dst: Any, wOffset: int, hOffset: int, src: Any, spitch: int, width: int,
              height: int, kind: Any, stream: Any) -> tuple[Any]:  # fmt: skip
    err, conn = _ready()
    if err:
        return _ret(err)
    kinds = _pointer_kinds(conn, kind, src, None)
    if kinds is None or kinds[1] == MEMORY_HOST and int(kind) != cudaMemcpyKind.cudaMemcpyDefault:
        return _fail(conn, _BAD_DIRECTION, f"{call}: kind {kind!r}", 0)
    if height > 1 and width > spitch:
        return _fail(conn, cudaError_t.cudaErrorInvalidPitchValue,
                     f"{call}: width {width} is larger than spitch {spitch}", 0)  # fmt: skip
    a = da.Side(MEMORY_ARRAY, array=as_int(dst), x=wOffset, y=hOffset)
    return _copy(
        call, _pointer_side(kinds[0], src, spitch), a, width, height, 1, _stream(stream), conn
    )


def _from_array(call: str, dst: Any, dpitch: int, src: Any, wOffset: int, hOffset: int, width: int,
                height: int, kind: Any, stream: Any) -> tuple[Any]:  # fmt: skip
    err, conn = _ready()
    if err:
        return _ret(err)
    kinds = _pointer_kinds(conn, kind, None, dst)
    if kinds is None or kinds[0] == MEMORY_HOST and int(kind) != cudaMemcpyKind.cudaMemcpyDefault:
        return _fail(conn, _BAD_DIRECTION, f"{call}: kind {kind!r}", 0)
    if height > 1 and width > dpitch:
        return _fail(conn, cudaError_t.cudaErrorInvalidPitchValue,
                     f"{call}: width {width} is larger than dpitch {dpitch}", 0)  # fmt: skip
    a = da.Side(MEMORY_ARRAY, array=as_int(src), x=wOffset, y=hOffset)
    return _copy(
        call, a, _pointer_side(kinds[1], dst, dpitch), width, height, 1, _stream(stream), conn
    )


def cudaMemcpy2DToArray(dst: Any, wOffset: int, hOffset: int, src: Any, spitch: int, width: int,
                        height: int, kind: Any) -> tuple[Any]:  # fmt: skip
    c = "cudaMemcpy2DToArray"
    return _to_array(c, dst, size_t(wOffset, f"{c}: wOffset"), size_t(hOffset, f"{c}: hOffset"), src,
                     size_t(spitch, f"{c}: spitch"), size_t(width, f"{c}: width"),
                     size_t(height, f"{c}: height"), kind, None)  # fmt: skip


def cudaMemcpy2DToArrayAsync(dst: Any, wOffset: int, hOffset: int, src: Any, spitch: int, width: int,
                             height: int, kind: Any, stream: Any) -> tuple[Any]:  # fmt: skip
    c = "cudaMemcpy2DToArrayAsync"
    return _to_array(c, dst, size_t(wOffset, f"{c}: wOffset"), size_t(hOffset, f"{c}: hOffset"), src,
                     size_t(spitch, f"{c}: spitch"), size_t(width, f"{c}: width"),
                     size_t(height, f"{c}: height"), kind, stream)  # fmt: skip


def cudaMemcpy2DFromArray(dst: Any, dpitch: int, src: Any, wOffset: int, hOffset: int, width: int,
                          height: int, kind: Any) -> tuple[Any]:  # fmt: skip
    c = "cudaMemcpy2DFromArray"
    return _from_array(c, dst, size_t(dpitch, f"{c}: dpitch"), src, size_t(wOffset, f"{c}: wOffset"),
                       size_t(hOffset, f"{c}: hOffset"), size_t(width, f"{c}: width"),
                       size_t(height, f"{c}: height"), kind, None)  # fmt: skip


def cudaMemcpy2DFromArrayAsync(dst: Any, dpitch: int, src: Any, wOffset: int, hOffset: int,
                               width: int, height: int, kind: Any, stream: Any) -> tuple[Any]:  # fmt: skip
    c = "cudaMemcpy2DFromArrayAsync"
    return _from_array(c, dst, size_t(dpitch, f"{c}: dpitch"), src, size_t(wOffset, f"{c}: wOffset"),
                       size_t(hOffset, f"{c}: hOffset"), size_t(width, f"{c}: width"),
                       size_t(height, f"{c}: height"), kind, stream)  # fmt: skip


def cudaMemcpy2DArrayToArray(dst: Any, wOffsetDst: int, hOffsetDst: int, src: Any, wOffsetSrc: int,
                             hOffsetSrc: int, width: int, height: int, kind: Any) -> tuple[Any]:  # fmt: skip
    c = "cudaMemcpy2DArrayToArray"
    err, conn = _ready()
    if err:
        return _ret(err)
    if int(kind) not in (cudaMemcpyKind.cudaMemcpyDeviceToDevice, cudaMemcpyKind.cudaMemcpyDefault):
        return _fail(conn, _BAD_DIRECTION, f"{c}: kind {kind!r}", 0)
    s = da.Side(MEMORY_ARRAY, array=as_int(src), x=size_t(wOffsetSrc, f"{c}: wOffsetSrc"),
                y=size_t(hOffsetSrc, f"{c}: hOffsetSrc"))  # fmt: skip
    d = da.Side(MEMORY_ARRAY, array=as_int(dst), x=size_t(wOffsetDst, f"{c}: wOffsetDst"),
                y=size_t(hOffsetDst, f"{c}: hOffsetDst"))  # fmt: skip
    return _copy(c, s, d, size_t(width, f"{c}: width"), size_t(height, f"{c}: height"), 1, 0, conn)


def _linear(call: str, array: Any, wOffset: int, hOffset: int, other: Any, count: int, kind: Any,
            to_array: bool, stream: int = 0) -> tuple[Any]:  # fmt: skip
    err, conn = _ready()
    if err:
        return _ret(err)
    kinds = _pointer_kinds(conn, kind, other if to_array else None, None if to_array else other)
    if kinds is None:
        return _fail(conn, _BAD_DIRECTION, f"{call}: kind {kind!r}", 0)
    side = kinds[0] if to_array else kinds[1]
    err, info = da.array_info(conn, as_int(array))
    if err or info is None:
        return _ret(err or _INVALID_VALUE, conn=conn)
    offset = hOffset * info.row_bytes + wOffset
    try:
        err = da.array_linear_copy(conn, call, as_int(array), offset, _pointer_side(side, other, count),
                                   count, to_array, stream)  # fmt: skip
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    return _ret(err, conn=conn)


def cudaMemcpyToArray(
    dst: Any, wOffset: int, hOffset: int, src: Any, count: int, kind: Any
) -> tuple[Any]:
    c = "cudaMemcpyToArray"
    return _linear(c, dst, size_t(wOffset, f"{c}: wOffset"), size_t(hOffset, f"{c}: hOffset"), src,
                   size_t(count, f"{c}: count"), kind, True)  # fmt: skip


def cudaMemcpyFromArray(
    dst: Any, src: Any, wOffset: int, hOffset: int, count: int, kind: Any
) -> tuple[Any]:
    c = "cudaMemcpyFromArray"
    return _linear(c, src, size_t(wOffset, f"{c}: wOffset"), size_t(hOffset, f"{c}: hOffset"), dst,
                   size_t(count, f"{c}: count"), kind, False)  # fmt: skip


def _memcpy3d(call: str, p: Any, stream: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    if p is None:
        return _fail(conn, _INVALID_VALUE, f"{call}: p is None", 0)
    src_array, dst_array = as_int(p.srcArray), as_int(p.dstArray)
    src_ptr, dst_ptr = p.srcPtr.ptr, p.dstPtr.ptr
    kinds = _pointer_kinds(conn, p.kind, src_ptr, dst_ptr)
    if kinds is None:
        return _fail(conn, _BAD_DIRECTION, f"{call}: kind {p.kind!r}", 0)
    elem = 1
    for handle in (src_array, dst_array):
        if handle:
            err, info = da.array_info(conn, handle)
            if err or info is None:
                return _ret(err or _INVALID_VALUE, conn=conn)
            elem = info.element_size
    if src_array and dst_array:
        _, sinfo = da.array_info(conn, src_array)
        assert sinfo is not None
        if sinfo.element_size != elem:
            return _fail(conn, _INVALID_VALUE, f"{call}: the arrays' elements differ in size", 0)

    def side(array: int, ptr_kind: int, pitched: Any, pos: Any) -> da.Side:
        if array:
            return da.Side(
                MEMORY_ARRAY, array=array, x=int(pos.x) * elem, y=int(pos.y), z=int(pos.z)
            )
        return _pointer_side(ptr_kind, pitched.ptr, int(pitched.pitch), int(pitched.ysize),
                             int(pos.x), int(pos.y), int(pos.z))  # fmt: skip

    src = side(src_array, kinds[0], p.srcPtr, p.srcPos)
    dst = side(dst_array, kinds[1], p.dstPtr, p.dstPos)
    ext = p.extent
    return _copy(
        call,
        src,
        dst,
        int(ext.width) * elem,
        int(ext.height),
        int(ext.depth),
        _stream(stream),
        conn,
    )


def cudaMemcpy3D(p: cudaMemcpy3DParms | None) -> tuple[Any]:
    return _memcpy3d("cudaMemcpy3D", p, None)


def cudaMemcpy3DAsync(p: cudaMemcpy3DParms | None, stream: Any) -> tuple[Any]:
    return _memcpy3d("cudaMemcpy3DAsync", p, stream)


# -- texture and surface objects --------------------------------------------------------------


def _wire_resource(conn: Connection, call: str, r: Any) -> Any:
    """A cudaResourceDesc as the wire's resource_desc; None when its channel desc has no format."""
    from rpc_spec import cricket_rpc as proto

    kind = int(r.resType)
    fields = dict(res_type=kind, array=0, ptr=0, format=0, channels=0, size=0, width=0, height=0,
                  pitch=0, flags=int(getattr(r, "flags", 0)))  # fmt: skip
    if kind == cudaResourceType.cudaResourceTypeArray:
        fields["array"] = as_int(r.res.array.array)
    elif kind in (
        cudaResourceType.cudaResourceTypeLinear,
        cudaResourceType.cudaResourceTypePitch2D,
    ):
        arm = r.res.linear if kind == cudaResourceType.cudaResourceTypeLinear else r.res.pitch2D
        found = format_of(arm.desc)
        if found is None:
            return None
        fields.update(ptr=as_int(arm.devPtr), format=found[0], channels=found[1])
        if kind == cudaResourceType.cudaResourceTypeLinear:
            fields["size"] = int(arm.sizeInBytes)
        else:
            fields.update(width=int(arm.width), height=int(arm.height), pitch=int(arm.pitchInBytes))
    elif kind == cudaResourceType.cudaResourceTypeMipmappedArray:
        fields["array"] = as_int(r.res.mipmap.mipmap)
    return proto.resource_desc(**fields)


def _runtime_resource(w: Any) -> cudaResourceDesc:
    desc = cudaResourceDesc(resType=cudaResourceType(w.res_type), flags=w.flags)
    if w.res_type == cudaResourceType.cudaResourceTypeArray:
        desc.res.array.array = cudaArray_t(w.array)
    elif w.res_type == cudaResourceType.cudaResourceTypeMipmappedArray:
        from .resource_types import cudaMipmappedArray_t

        desc.res.mipmap.mipmap = cudaMipmappedArray_t(w.array)
    elif w.res_type == cudaResourceType.cudaResourceTypeLinear:
        lin = desc.res.linear
        lin.devPtr, lin.desc, lin.sizeInBytes = w.ptr, channel_desc(w.format, w.channels), w.size
    elif w.res_type == cudaResourceType.cudaResourceTypePitch2D:
        p2 = desc.res.pitch2D
        p2.devPtr, p2.desc = w.ptr, channel_desc(w.format, w.channels)
        p2.width, p2.height, p2.pitchInBytes = w.width, w.height, w.pitch
    return desc


def _is_integer_format(fmt: int) -> bool:
    return fmt not in (0x10, 0x20)


def _wire_texture(t: Any, fmt: int) -> Any:
    from rpc_spec import cricket_rpc as proto

    flags = 0
    if int(t.readMode) == cudaTextureReadMode.cudaReadModeElementType and _is_integer_format(fmt):
        flags |= READ_AS_INTEGER
    for on, bit in ((t.normalizedCoords, NORMALIZED_COORDINATES), (t.sRGB, SRGB),
                    (t.disableTrilinearOptimization, DISABLE_TRILINEAR_OPTIMIZATION),
                    (t.seamlessCubemap, SEAMLESS_CUBEMAP)):  # fmt: skip
        if on:
            flags |= bit
    modes = [int(m) for m in list(t.addressMode)[:3]]
    border = [float(c) for c in list(t.borderColor)[:4]]
    return proto.texture_desc(
        address_mode=modes + [0] * (3 - len(modes)), filter_mode=int(t.filterMode), flags=flags,
        max_anisotropy=int(t.maxAnisotropy), mipmap_filter_mode=int(t.mipmapFilterMode),
        mipmap_level_bias=float(t.mipmapLevelBias), min_mipmap_level_clamp=float(t.minMipmapLevelClamp),
        max_mipmap_level_clamp=float(t.maxMipmapLevelClamp), border_color=border + [0.0] * (4 - len(border)),
    )  # fmt: skip


def _runtime_texture(t: Any, fmt: int) -> cudaTextureDesc:
    read = (
        cudaTextureReadMode.cudaReadModeElementType
        if t.flags & READ_AS_INTEGER or not _is_integer_format(fmt)
        else cudaTextureReadMode.cudaReadModeNormalizedFloat
    )
    return cudaTextureDesc(
        addressMode=[cudaTextureAddressMode(m) for m in t.address_mode],
        filterMode=cudaTextureFilterMode(t.filter_mode), readMode=read,
        sRGB=int(bool(t.flags & SRGB)), borderColor=list(t.border_color),
        normalizedCoords=int(bool(t.flags & NORMALIZED_COORDINATES)), maxAnisotropy=t.max_anisotropy,
        mipmapFilterMode=cudaTextureFilterMode(t.mipmap_filter_mode), mipmapLevelBias=t.mipmap_level_bias,
        minMipmapLevelClamp=t.min_mipmap_level_clamp, maxMipmapLevelClamp=t.max_mipmap_level_clamp,
        disableTrilinearOptimization=int(bool(t.flags & DISABLE_TRILINEAR_OPTIMIZATION)),
        seamlessCubemap=int(bool(t.flags & SEAMLESS_CUBEMAP)),
    )  # fmt: skip


def _resource_format(conn: Connection, res: Any) -> int:
    """The CUarray_format a resource's texels have (its array's, or its own)."""
    if res.res_type == cudaResourceType.cudaResourceTypeArray:
        _err, info = da.array_info(conn, res.array)
        return info.format if info is not None else 0
    if res.res_type == cudaResourceType.cudaResourceTypeMipmappedArray:
        from .driver_mipmaps import mipmap_info

        _err, info, _levels = mipmap_info(conn, res.array)
        return info.format if info is not None else 0
    return int(res.format)


def cudaCreateTextureObject(pResDesc: Any, pTexDesc: Any, pResViewDesc: Any) -> tuple[Any, Any]:
    call = "cudaCreateTextureObject"
    err, conn = _ready()
    if err:
        return _ret(err, None)
    if pResDesc is None or pTexDesc is None:
        return _fail(conn, _INVALID_VALUE, f"{call}: pResDesc and pTexDesc are required", 1)
    res = _wire_resource(conn, call, pResDesc)
    if res is None:
        return _fail(
            conn, _BAD_CHANNELS, f"{call}: no format for the resource's channel descriptor", 1
        )
    tex = _wire_texture(pTexDesc, _resource_format(conn, res))
    view = None if pResViewDesc is None else da.wire_view(pResViewDesc)
    err, value = da.tex_create(conn, res, tex, view)
    return _ret(err, cudaTextureObject_t(value), conn=conn)


def cudaDestroyTextureObject(texObject: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    return _ret(conn.sync("TEX_OBJECT_DESTROY", as_int(texObject))[0], conn=conn)


def _descs(texObject: Any) -> tuple[Any, Any, Connection | None]:
    err, conn = _ready()
    if err:
        return err, None, None
    err, d = da.tex_descs(conn, as_int(texObject))
    return err, d, conn


def cudaGetTextureObjectResourceDesc(texObject: Any) -> tuple[Any, Any]:
    err, d, conn = _descs(texObject)
    return _ret(err, None if err else _runtime_resource(d.res), conn=conn)


def cudaGetTextureObjectTextureDesc(texObject: Any) -> tuple[Any, Any]:
    err, d, conn = _descs(texObject)
    if err or conn is None:
        return _ret(err or _INVALID_VALUE, None)
    return _ret(0, _runtime_texture(d.tex, _resource_format(conn, d.res)))


def cudaGetTextureObjectResourceViewDesc(texObject: Any) -> tuple[Any, Any]:
    err, d, conn = _descs(texObject)
    if err:
        return _ret(err, None, conn=conn)
    if not d.view:
        return (_SUCCESS, cudaResourceViewDesc())
    v = d.view[0]
    return (_SUCCESS, cudaResourceViewDesc(
        format=cudaResourceViewFormat(v.format), width=v.width, height=v.height, depth=v.depth,
        firstMipmapLevel=v.first_mipmap_level, lastMipmapLevel=v.last_mipmap_level,
        firstLayer=v.first_layer, lastLayer=v.last_layer,
    ))  # fmt: skip


def cudaCreateSurfaceObject(pResDesc: Any) -> tuple[Any, Any]:
    call = "cudaCreateSurfaceObject"
    err, conn = _ready()
    if err:
        return _ret(err, None)
    if pResDesc is None:
        return _fail(conn, _INVALID_VALUE, f"{call}: pResDesc is required", 1)
    res = _wire_resource(conn, call, pResDesc)
    if res is None:
        return _fail(
            conn, _BAD_CHANNELS, f"{call}: no format for the resource's channel descriptor", 1
        )
    err, r = conn.sync("SURF_OBJECT_CREATE", res)
    return _ret(err, cudaSurfaceObject_t(0 if err else r.value), conn=conn)


def cudaDestroySurfaceObject(surfObject: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    return _ret(conn.sync("SURF_OBJECT_DESTROY", as_int(surfObject))[0], conn=conn)


def cudaGetSurfaceObjectResourceDesc(surfObject: Any) -> tuple[Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, r = conn.sync("SURF_OBJECT_GET_RESOURCE_DESC", as_int(surfObject))
    return _ret(err, None if err else _runtime_resource(r.value), conn=conn)
