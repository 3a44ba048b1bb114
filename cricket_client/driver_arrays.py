"""Arrays, 2D/3D copies, texture and surface objects of `cuda.bindings.driver`, remote.

Every copy is one form: `depth` slices of `height` rows of `width` bytes between two places,
each host memory (the client's: its rows travel packed in the call or its reply), device
memory (address, pitch, rows a slice) or an array (x in bytes, y, z). cuMemcpy2D/3D, the
runtime's cudaMemcpy2DToArray/FromArray/ToArray/FromArray and cudaMemcpy3D all become
`copy_3d`; a copy larger than the client's chunk travels as several calls, whole rows each.
Asynchronous forms are ordered on their stream but answered when done (host memory is the
client's). Texture and surface objects are the values the server's driver issued.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ._args import size_t, uint
from ._enums import (
    CUaddress_mode,
    CUarray_format,
    CUfilter_mode,
    CUresourcetype,
    CUresourceViewFormat,
    CUresult,
)
from ._types import CUdeviceptr, as_int
from .array_types import (
    CUDA_ARRAY3D_DESCRIPTOR,
    CUDA_ARRAY_DESCRIPTOR,
    CUDA_MEMCPY2D,
    CUDA_MEMCPY3D,
    CUDA_RESOURCE_DESC,
    CUDA_RESOURCE_VIEW_DESC,
    CUDA_TEXTURE_DESC,
    MEMORY_ARRAY,
    MEMORY_DEVICE,
    MEMORY_HOST,
    MEMORY_UNIFIED,
    CUarray,
    CUsurfObject,
    CUtexObject,
)
from .connection import Connection, get_connection
from .errors import to_result
from .host_buffers import HostBufferError, read_host, write_host

__all__ = [
    "CUarray",
    "CUtexObject",
    "CUsurfObject",
    "CUDA_ARRAY_DESCRIPTOR",
    "CUDA_ARRAY3D_DESCRIPTOR",
    "CUDA_MEMCPY2D",
    "CUDA_MEMCPY3D",
    "CUDA_RESOURCE_DESC",
    "CUDA_TEXTURE_DESC",
    "CUDA_RESOURCE_VIEW_DESC",
    "cuArrayCreate",
    "cuArray3DCreate",
    "cuArrayDestroy",
    "cuArrayGetDescriptor",
    "cuArray3DGetDescriptor",
    "cuMemcpy2D",
    "cuMemcpy2DAsync",
    "cuMemcpy2DUnaligned",
    "cuMemcpy3D",
    "cuMemcpy3DAsync",
    "cuMemcpyHtoA",
    "cuMemcpyAtoH",
    "cuMemcpyAtoA",
    "cuMemcpyDtoA",
    "cuMemcpyAtoD",
    "cuTexObjectCreate",
    "cuTexObjectDestroy",
    "cuTexObjectGetResourceDesc",
    "cuTexObjectGetTextureDesc",
    "cuTexObjectGetResourceViewDesc",
    "cuSurfObjectCreate",
    "cuSurfObjectDestroy",
    "cuSurfObjectGetResourceDesc",
]

_SUCCESS = CUresult.CUDA_SUCCESS
_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE
COPY_CHUNK = 4 << 20  # bytes one call carries at most (whole rows; at least one row)
FORMAT_BYTES = {0x01: 1, 0x02: 2, 0x03: 4, 0x08: 1, 0x09: 2, 0x0A: 4, 0x10: 2, 0x20: 4}
_WIRE_PER_THREAD = 2
_STREAM_LEGACY, _STREAM_PER_THREAD = 1, 2  # CU_STREAM_LEGACY / CU_STREAM_PER_THREAD values


def _out(err: int, *values: Any) -> tuple[Any, ...]:
    if err:
        return (to_result(err),) + (None,) * len(values)
    return (_SUCCESS, *values)


def _fail(
    conn: Connection, message: str, outputs: int, code: int = _INVALID_VALUE
) -> tuple[Any, ...]:
    conn.set_local_error(message)
    return (to_result(code),) + (None,) * outputs


def wire_stream(h: Any) -> int:
    value = as_int(h)
    if value in (0, _STREAM_LEGACY):
        return 0
    return _WIRE_PER_THREAD if value == _STREAM_PER_THREAD else value


# -- array descriptors ----------------------------------------------------------------------


@dataclass(frozen=True)
class ArrayInfo:
    width: int
    height: int
    depth: int
    format: int
    channels: int
    flags: int

    @property
    def element_size(self) -> int:
        return FORMAT_BYTES.get(self.format, 1) * self.channels

    @property
    def row_bytes(self) -> int:
        return self.width * self.element_size


def _cache(conn: Connection) -> dict[int, ArrayInfo]:
    cache: dict[int, ArrayInfo] | None = getattr(conn, "_array_infos", None)
    if cache is None:
        cache = {}
        conn._array_infos = cache  # type: ignore[attr-defined]
    return cache


def array_info(conn: Connection, handle: int, *, ask: bool = False) -> tuple[int, ArrayInfo | None]:
    """(CUresult, the array's descriptor): kept once known (an array does not change; copies
    need its element size), asked again with `ask` (the queries: it may be gone)."""
    cache = _cache(conn)
    info = cache.get(handle)
    if info is not None and not ask:
        return 0, info
    err, r = conn.sync("ARRAY_GET_DESCRIPTOR", handle)
    if err:
        cache.pop(handle, None)
        return err, None
    v = r.value
    info = cache[handle] = ArrayInfo(v.width, v.height, v.depth, v.format, v.channels, v.flags)
    return 0, info


def array_create(
    conn: Connection, w: int, h: int, d: int, fmt: int, ch: int, flags: int
) -> tuple[int, int]:
    from rpc_spec import cricket_rpc as proto

    desc = proto.array_desc(width=w, height=h, depth=d, format=fmt, channels=ch, flags=flags)
    err, r = conn.sync("ARRAY_CREATE", desc)
    if err:
        return err, 0
    _cache(conn)[r.value] = ArrayInfo(w, h, d, fmt, ch, flags)
    return 0, r.value


def array_destroy(conn: Connection, handle: int) -> int:
    err, _ = conn.sync("ARRAY_DESTROY", handle)
    if not err:
        _cache(conn).pop(handle, None)
    return err


def cuArrayCreate(pAllocateArray: Any) -> tuple[Any, CUarray | None]:
    d = pAllocateArray
    err, h = array_create(
        get_connection(), size_t(d.Width, "cuArrayCreate: Width"), size_t(d.Height, "cuArrayCreate: Height"),
        0, int(d.Format), uint(d.NumChannels, "cuArrayCreate: NumChannels"), 0,
    )  # fmt: skip
    return _out(err, CUarray(h))


def cuArray3DCreate(pAllocateArray: Any) -> tuple[Any, CUarray | None]:
    d = pAllocateArray
    call = "cuArray3DCreate"
    err, h = array_create(
        get_connection(), size_t(d.Width, f"{call}: Width"), size_t(d.Height, f"{call}: Height"),
        size_t(d.Depth, f"{call}: Depth"), int(d.Format), uint(d.NumChannels, f"{call}: NumChannels"),
        uint(d.Flags, f"{call}: Flags"),
    )  # fmt: skip
    return _out(err, CUarray(h))


def cuArrayDestroy(hArray: Any) -> tuple[Any]:
    return _out(array_destroy(get_connection(), as_int(hArray)))


def cuArrayGetDescriptor(hArray: Any) -> tuple[Any, CUDA_ARRAY_DESCRIPTOR | None]:
    err, info = array_info(get_connection(), as_int(hArray), ask=True)
    if err or info is None:
        return _out(err or _INVALID_VALUE, None)
    return _out(0, CUDA_ARRAY_DESCRIPTOR(
        Width=info.width, Height=info.height, Format=CUarray_format(info.format),
        NumChannels=info.channels,
    ))  # fmt: skip


def cuArray3DGetDescriptor(hArray: Any) -> tuple[Any, CUDA_ARRAY3D_DESCRIPTOR | None]:
    err, info = array_info(get_connection(), as_int(hArray), ask=True)
    if err or info is None:
        return _out(err or _INVALID_VALUE, None)
    return _out(0, CUDA_ARRAY3D_DESCRIPTOR(
        Width=info.width, Height=info.height, Depth=info.depth, Format=CUarray_format(info.format),
        NumChannels=info.channels, Flags=info.flags,
    ))  # fmt: skip


# -- copies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One place of a copy: `kind` a CUmemorytype (host, device or array). Host: `host` (a
    buffer or an address), `pitch` and `height` (rows a slice). Device: `ptr`, `pitch`,
    `height`. Array: `array` (handle). x in bytes, y in rows, z in slices."""

    kind: int
    host: Any = None
    ptr: int = 0
    array: int = 0
    pitch: int = 0
    height: int = 0
    x: int = 0
    y: int = 0
    z: int = 0


def _pieces(width: int, height: int, depth: int) -> Iterator[tuple[int, int, int, int]]:
    """(y0, rows, z0, slices) pieces of at most COPY_CHUNK bytes (at least one row each)."""
    slice_bytes = width * height
    if slice_bytes <= COPY_CHUNK:
        step = max(1, COPY_CHUNK // max(slice_bytes, 1))
        for z in range(0, depth, step):
            yield 0, height, z, min(step, depth - z)
        return
    rows = max(1, COPY_CHUNK // max(width, 1))
    for z in range(depth):
        for y in range(0, height, rows):
            yield y, min(rows, height - y), z, 1


def _host_offset(side: Side, y: int, z: int) -> int:
    pitch = side.pitch
    return ((side.z + z) * side.height + side.y + y) * pitch + side.x


def _pack(side: Side, width: int, y0: int, rows: int, z0: int, slices: int, what: str) -> bytes:
    parts = []
    for z in range(z0, z0 + slices):
        first = _host_offset(side, y0, z)
        span = (rows - 1) * side.pitch + width
        data = memoryview(read_host(_shift(side.host, first), span, what))
        if side.pitch == width:
            parts.append(bytes(data))
        else:
            parts += [bytes(data[r * side.pitch : r * side.pitch + width]) for r in range(rows)]
    return b"".join(parts)


def _shift(host: Any, offset: int) -> Any:
    if isinstance(host, int):
        return host + offset
    view = memoryview(host)
    view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
    return view[offset:]


def _unpack(
    side: Side, data: memoryview, width: int, y0: int, rows: int, z0: int, slices: int, what: str
) -> None:
    i = 0
    for z in range(z0, z0 + slices):
        for r in range(rows):
            write_host(side.host, data[i : i + width], what, _host_offset(side, y0 + r, z))
            i += width


def _wire(side: Side, y0: int, z0: int) -> Any:
    from rpc_spec import cricket_rpc as proto

    if side.kind == MEMORY_HOST:
        return proto.copy_place(kind=MEMORY_HOST, ptr=0, array=0, pitch=0, height=0, x=0, y=0, z=0)
    return proto.copy_place(
        kind=side.kind, ptr=side.ptr, array=side.array, pitch=side.pitch, height=side.height,
        x=side.x, y=side.y + y0, z=side.z + z0,
    )  # fmt: skip


def copy_3d(
    conn: Connection,
    call: str,
    src: Side,
    dst: Side,
    width: int,
    height: int,
    depth: int,
    stream: int,
) -> int:
    """Copy `depth` slices of `height` rows of `width` bytes from `src` to `dst`; CUresult."""
    from rpc_spec import cricket_rpc as proto

    height, depth = max(height, 1), max(depth, 1)
    if width == 0:
        return 0
    for side in (src, dst):
        if side.kind == MEMORY_HOST:
            if side.pitch == 0:
                object.__setattr__(side, "pitch", width)
            if side.height == 0:
                object.__setattr__(side, "height", height)
            if side.pitch < width and (height > 1 or depth > 1):
                conn.set_local_error(f"{call}: host pitch {side.pitch} is less than width {width}")
                return int(_INVALID_VALUE)
        if side.kind not in (MEMORY_HOST, MEMORY_DEVICE, MEMORY_ARRAY):
            conn.set_local_error(f"{call}: memory type {side.kind} is not host, device or array")
            return int(_INVALID_VALUE)
    if src.kind == MEMORY_HOST and dst.kind == MEMORY_HOST:
        try:
            for y0, rows, z0, slices in _pieces(width, height, depth):
                data = _pack(src, width, y0, rows, z0, slices, f"{call}: source")
                _unpack(dst, memoryview(data), width, y0, rows, z0, slices, f"{call}: destination")
        except HostBufferError as exc:
            raise TypeError(str(exc)) from None
        return 0
    try:
        for y0, rows, z0, slices in _pieces(width, height, depth):
            args = proto.copy_3d(
                src=_wire(src, y0, z0), dst=_wire(dst, y0, z0), width=width, height=rows,
                depth=slices, stream=stream,
            )  # fmt: skip
            if src.kind == MEMORY_HOST:
                data = _pack(src, width, y0, rows, z0, slices, f"{call}: source")
                err, _ = conn.sync("MEMCPY_3D_FROM_HOST", args, data)
            elif dst.kind == MEMORY_HOST:
                err, r = conn.sync("MEMCPY_3D_TO_HOST", args)
                if not err:
                    _unpack(
                        dst,
                        memoryview(r.value),
                        width,
                        y0,
                        rows,
                        z0,
                        slices,
                        f"{call}: destination",
                    )
            else:
                err, _ = conn.sync("MEMCPY_3D_ON_DEVICE", args)
            if err:
                return err
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    return 0


def _side(conn: Connection, p: Any, prefix: str, three_d: bool) -> Side:
    kind = int(getattr(p, f"{prefix}MemoryType"))
    if kind == MEMORY_UNIFIED:
        addr = as_int(getattr(p, f"{prefix}Device"))
        kind = MEMORY_DEVICE if conn.is_device_address(addr) else MEMORY_HOST
        host = addr
    else:
        host = getattr(p, f"{prefix}Host")
    return Side(
        kind=kind,
        host=host if host is not None else 0,
        ptr=as_int(getattr(p, f"{prefix}Device")),
        array=as_int(getattr(p, f"{prefix}Array")),
        pitch=int(getattr(p, f"{prefix}Pitch")),
        height=int(getattr(p, f"{prefix}Height")) if three_d else 0,
        x=int(getattr(p, f"{prefix}XInBytes")),
        y=int(getattr(p, f"{prefix}Y")),
        z=int(getattr(p, f"{prefix}Z")) if three_d else 0,
    )


def _host_value(host: Any) -> Any:
    """cuda-python takes host pointers as ints or buffers; 0 and None are NULL."""
    return 0 if host is None else host


def _memcpy_nd(call: str, p: Any, stream: int, three_d: bool) -> tuple[Any]:
    conn = get_connection()
    if p is None:
        return _fail(conn, f"{call}: pCopy is None", 0)
    src, dst = _side(conn, p, "src", three_d), _side(conn, p, "dst", three_d)
    if not three_d:  # a 2D copy's rows are all in one slice
        src = replace(src, height=max(int(p.Height), 1) + src.y if src.kind != MEMORY_ARRAY else 0)
        dst = replace(dst, height=max(int(p.Height), 1) + dst.y if dst.kind != MEMORY_ARRAY else 0)
    src = replace(src, host=_host_value(src.host))
    dst = replace(dst, host=_host_value(dst.host))
    depth = int(p.Depth) if three_d else 1
    return _out(copy_3d(conn, call, src, dst, int(p.WidthInBytes), int(p.Height), depth, stream))


def cuMemcpy2D(pCopy: Any) -> tuple[Any]:
    return _memcpy_nd("cuMemcpy2D", pCopy, 0, False)


def cuMemcpy2DUnaligned(pCopy: Any) -> tuple[Any]:
    return _memcpy_nd("cuMemcpy2DUnaligned", pCopy, 0, False)


def cuMemcpy2DAsync(pCopy: Any, hStream: Any) -> tuple[Any]:
    return _memcpy_nd("cuMemcpy2DAsync", pCopy, wire_stream(hStream), False)


def cuMemcpy3D(pCopy: Any) -> tuple[Any]:
    return _memcpy_nd("cuMemcpy3D", pCopy, 0, True)


def cuMemcpy3DAsync(pCopy: Any, hStream: Any) -> tuple[Any]:
    return _memcpy_nd("cuMemcpy3DAsync", pCopy, wire_stream(hStream), True)


def linear_pieces(row_bytes: int, offset: int, count: int) -> Iterator[tuple[int, int, int, int]]:
    """An array seen as its rows one after another: (x, y, bytes, rows) pieces covering
    `count` bytes from byte `offset` (a partial first row, whole rows, a partial last row)."""
    y, x = divmod(offset, row_bytes)
    if x and count:
        n = min(row_bytes - x, count)
        yield x, y, n, 1
        count -= n
        y += 1
    if count >= row_bytes:
        rows = count // row_bytes
        yield 0, y, row_bytes, rows
        count -= rows * row_bytes
        y += rows
    if count:
        yield 0, y, count, 1


def array_linear_copy(
    conn: Connection,
    call: str,
    handle: int,
    offset: int,
    other: Side,
    count: int,
    to_array: bool,
    stream: int = 0,
) -> int:
    """Copy `count` bytes between `other` (host or device, contiguous) and an array from byte
    `offset` of its rows taken one after another (cuMemcpyHtoA/AtoH/DtoA/AtoD,
    cudaMemcpyToArray/FromArray)."""
    err, info = array_info(conn, handle)
    if err or info is None:
        return err or int(_INVALID_VALUE)
    done = 0
    for x, y, n, rows in linear_pieces(info.row_bytes, offset, count):
        a = Side(MEMORY_ARRAY, array=handle, x=x, y=y)
        o = (
            Side(MEMORY_HOST, host=_shift(other.host, done), pitch=n, height=rows)
            if other.kind == MEMORY_HOST
            else Side(MEMORY_DEVICE, ptr=other.ptr + done, pitch=n, height=rows)
        )
        src, dst = (o, a) if to_array else (a, o)
        err = copy_3d(conn, call, src, dst, n, rows, 1, stream)
        if err:
            return err
        done += n * rows
    return 0


def cuMemcpyHtoA(dstArray: Any, dstOffset: int, srcHost: Any, ByteCount: int) -> tuple[Any]:
    conn = get_connection()
    return _out(array_linear_copy(
        conn, "cuMemcpyHtoA", as_int(dstArray), size_t(dstOffset, "cuMemcpyHtoA: dstOffset"),
        Side(MEMORY_HOST, host=srcHost), size_t(ByteCount, "cuMemcpyHtoA: ByteCount"), True,
    ))  # fmt: skip


def cuMemcpyAtoH(dstHost: Any, srcArray: Any, srcOffset: int, ByteCount: int) -> tuple[Any]:
    conn = get_connection()
    return _out(array_linear_copy(
        conn, "cuMemcpyAtoH", as_int(srcArray), size_t(srcOffset, "cuMemcpyAtoH: srcOffset"),
        Side(MEMORY_HOST, host=dstHost), size_t(ByteCount, "cuMemcpyAtoH: ByteCount"), False,
    ))  # fmt: skip


def cuMemcpyDtoA(dstArray: Any, dstOffset: int, srcDevice: Any, ByteCount: int) -> tuple[Any]:
    conn = get_connection()
    return _out(array_linear_copy(
        conn, "cuMemcpyDtoA", as_int(dstArray), size_t(dstOffset, "cuMemcpyDtoA: dstOffset"),
        Side(MEMORY_DEVICE, ptr=as_int(srcDevice)), size_t(ByteCount, "cuMemcpyDtoA: ByteCount"),
        True,
    ))  # fmt: skip


def cuMemcpyAtoD(dstDevice: Any, srcArray: Any, srcOffset: int, ByteCount: int) -> tuple[Any]:
    conn = get_connection()
    return _out(array_linear_copy(
        conn, "cuMemcpyAtoD", as_int(srcArray), size_t(srcOffset, "cuMemcpyAtoD: srcOffset"),
        Side(MEMORY_DEVICE, ptr=as_int(dstDevice)), size_t(ByteCount, "cuMemcpyAtoD: ByteCount"),
        False,
    ))  # fmt: skip


def cuMemcpyAtoA(
    dstArray: Any, dstOffset: int, srcArray: Any, srcOffset: int, ByteCount: int
) -> tuple[Any]:
    """Both arrays' rows taken one after another; the pieces must line up row by row."""
    conn = get_connection()
    call = "cuMemcpyAtoA"
    dst, src = as_int(dstArray), as_int(srcArray)
    err, dinfo = array_info(conn, dst)
    if not err:
        err, sinfo = array_info(conn, src)
    if err or dinfo is None or sinfo is None:
        return _out(err or int(_INVALID_VALUE))
    dpieces = list(linear_pieces(dinfo.row_bytes, dstOffset, ByteCount))
    spieces = list(linear_pieces(sinfo.row_bytes, srcOffset, ByteCount))
    if [(n, r) for _x, _y, n, r in dpieces] != [(n, r) for _x, _y, n, r in spieces]:
        return _fail(conn, f"{call}: the two arrays' rows do not line up for this copy", 0,
                     CUresult.CUDA_ERROR_NOT_SUPPORTED)  # fmt: skip
    for (dx, dy, n, rows), (sx, sy, _n, _r) in zip(dpieces, spieces, strict=True):
        err = copy_3d(
            conn, call, Side(MEMORY_ARRAY, array=src, x=sx, y=sy),
            Side(MEMORY_ARRAY, array=dst, x=dx, y=dy), n, rows, 1, 0,
        )  # fmt: skip
        if err:
            return _out(err)
    return (_SUCCESS,)


# -- texture and surface objects --------------------------------------------------------------


def wire_resource(res: Any) -> Any:
    """A CUDA_RESOURCE_DESC as the wire's resource_desc."""
    from rpc_spec import cricket_rpc as proto

    kind = int(res.resType)
    fields = dict(res_type=kind, array=0, ptr=0, format=0, channels=0, size=0, width=0,
                  height=0, pitch=0, flags=int(res.flags))  # fmt: skip
    if kind == 0:
        fields["array"] = as_int(res.res.array.hArray)
    elif kind == 2:
        lin = res.res.linear
        fields.update(ptr=as_int(lin.devPtr), format=int(lin.format), channels=int(lin.numChannels),
                      size=int(lin.sizeInBytes))  # fmt: skip
    elif kind == 3:
        p2 = res.res.pitch2D
        fields.update(ptr=as_int(p2.devPtr), format=int(p2.format), channels=int(p2.numChannels),
                      width=int(p2.width), height=int(p2.height), pitch=int(p2.pitchInBytes))  # fmt: skip
    elif kind == 1:
        fields["array"] = as_int(res.res.mipmap.hMipmappedArray)
    return proto.resource_desc(**fields)


def driver_resource(r: Any) -> CUDA_RESOURCE_DESC:
    desc = CUDA_RESOURCE_DESC(resType=CUresourcetype(r.res_type), flags=r.flags)
    if r.res_type == 0:
        desc.res.array.hArray = CUarray(r.array)
    elif r.res_type == 1:
        from .resource_types import CUmipmappedArray

        desc.res.mipmap.hMipmappedArray = CUmipmappedArray(r.array)
    elif r.res_type == 2:
        lin = desc.res.linear
        lin.devPtr, lin.format = CUdeviceptr(r.ptr), CUarray_format(r.format)
        lin.numChannels, lin.sizeInBytes = r.channels, r.size
    elif r.res_type == 3:
        p2 = desc.res.pitch2D
        p2.devPtr, p2.format, p2.numChannels = (
            CUdeviceptr(r.ptr),
            CUarray_format(r.format),
            r.channels,
        )
        p2.width, p2.height, p2.pitchInBytes = r.width, r.height, r.pitch
    return desc


def wire_texture(t: Any) -> Any:
    from rpc_spec import cricket_rpc as proto

    modes = [int(m) for m in list(t.addressMode)[:3]]
    border = [float(c) for c in list(t.borderColor)[:4]]
    return proto.texture_desc(
        address_mode=modes + [0] * (3 - len(modes)), filter_mode=int(t.filterMode),
        flags=int(t.flags), max_anisotropy=int(t.maxAnisotropy),
        mipmap_filter_mode=int(t.mipmapFilterMode), mipmap_level_bias=float(t.mipmapLevelBias),
        min_mipmap_level_clamp=float(t.minMipmapLevelClamp),
        max_mipmap_level_clamp=float(t.maxMipmapLevelClamp),
        border_color=border + [0.0] * (4 - len(border)),
    )  # fmt: skip


def driver_texture(t: Any) -> CUDA_TEXTURE_DESC:
    return CUDA_TEXTURE_DESC(
        addressMode=[CUaddress_mode(m) for m in t.address_mode], filterMode=CUfilter_mode(t.filter_mode),
        flags=t.flags, maxAnisotropy=t.max_anisotropy,
        mipmapFilterMode=CUfilter_mode(t.mipmap_filter_mode), mipmapLevelBias=t.mipmap_level_bias,
        minMipmapLevelClamp=t.min_mipmap_level_clamp, maxMipmapLevelClamp=t.max_mipmap_level_clamp,
        borderColor=list(t.border_color),
    )  # fmt: skip


def wire_view(v: Any) -> Any:
    from rpc_spec import cricket_rpc as proto

    return proto.resource_view_desc(
        format=int(v.format), width=int(v.width), height=int(v.height), depth=int(v.depth),
        first_mipmap_level=int(v.firstMipmapLevel), last_mipmap_level=int(v.lastMipmapLevel),
        first_layer=int(v.firstLayer), last_layer=int(v.lastLayer),
    )  # fmt: skip


def driver_view(v: Any) -> CUDA_RESOURCE_VIEW_DESC:
    return CUDA_RESOURCE_VIEW_DESC(
        format=CUresourceViewFormat(v.format), width=v.width, height=v.height, depth=v.depth,
        firstMipmapLevel=v.first_mipmap_level, lastMipmapLevel=v.last_mipmap_level,
        firstLayer=v.first_layer, lastLayer=v.last_layer,
    )  # fmt: skip


def tex_create(conn: Connection, res: Any, tex: Any, view: Any) -> tuple[int, int]:
    from rpc_spec import cricket_rpc as proto

    descs = proto.texture_descs(res=res, tex=tex, view=[] if view is None else [view])
    err, r = conn.sync("TEX_OBJECT_CREATE", descs)
    return err, (0 if err else r.value)


def tex_descs(conn: Connection, value: int) -> tuple[int, Any]:
    err, r = conn.sync("TEX_OBJECT_GET_DESCS", value)
    return err, (None if err else r.value)


def cuTexObjectCreate(
    pResDesc: Any, pTexDesc: Any, pResViewDesc: Any
) -> tuple[Any, CUtexObject | None]:
    conn = get_connection()
    if pResDesc is None or pTexDesc is None:
        return _fail(conn, "cuTexObjectCreate: pResDesc and pTexDesc are required", 1)
    view = None if pResViewDesc is None else wire_view(pResViewDesc)
    err, value = tex_create(conn, wire_resource(pResDesc), wire_texture(pTexDesc), view)
    return _out(err, CUtexObject(value))


def cuTexObjectDestroy(texObject: Any) -> tuple[Any]:
    return _out(get_connection().sync("TEX_OBJECT_DESTROY", as_int(texObject))[0])


def cuTexObjectGetResourceDesc(texObject: Any) -> tuple[Any, CUDA_RESOURCE_DESC | None]:
    err, d = tex_descs(get_connection(), as_int(texObject))
    return _out(err, None if err else driver_resource(d.res))


def cuTexObjectGetTextureDesc(texObject: Any) -> tuple[Any, CUDA_TEXTURE_DESC | None]:
    err, d = tex_descs(get_connection(), as_int(texObject))
    return _out(err, None if err else driver_texture(d.tex))


def cuTexObjectGetResourceViewDesc(texObject: Any) -> tuple[Any, CUDA_RESOURCE_VIEW_DESC | None]:
    err, d = tex_descs(get_connection(), as_int(texObject))
    if err:
        return _out(err, None)
    return _out(0, driver_view(d.view[0]) if d.view else CUDA_RESOURCE_VIEW_DESC())


def cuSurfObjectCreate(pResDesc: Any) -> tuple[Any, CUsurfObject | None]:
    conn = get_connection()
    if pResDesc is None:
        return _fail(conn, "cuSurfObjectCreate: pResDesc is required", 1)
    err, r = conn.sync("SURF_OBJECT_CREATE", wire_resource(pResDesc))
    return _out(err, CUsurfObject(0 if err else r.value))


def cuSurfObjectDestroy(surfObject: Any) -> tuple[Any]:
    return _out(get_connection().sync("SURF_OBJECT_DESTROY", as_int(surfObject))[0])


def cuSurfObjectGetResourceDesc(surfObject: Any) -> tuple[Any, CUDA_RESOURCE_DESC | None]:
    err, r = get_connection().sync("SURF_OBJECT_GET_RESOURCE_DESC", as_int(surfObject))
    return _out(err, None if err else driver_resource(r.value))
