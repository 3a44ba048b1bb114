"""Arrays, 3D copies, texture and surface objects of a session.

Arrays are server handles (kind `array`). Texture and surface objects are different: kernels
take them by value, so the client holds the value the backend (the driver) issued, and the
session keeps a table of its own values (`objects()`); a value not in it is refused. What each
was made from is kept as sent (array handles, not backend objects), for the descriptor queries
and for checkpoints.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from cricket_server.backends.arrays import (
    ARRAY3D_CUBEMAP,
    ARRAY3D_LAYERED,
    FORMAT_BYTES,
    PLACE_ARRAY,
    PLACE_DEVICE,
    PLACE_HOST,
    RESOURCE_ARRAY,
    RESOURCE_LINEAR,
    RESOURCE_MIPMAPPED_ARRAY,
    RESOURCE_PITCH2D,
    ArrayDesc,
    Copy3D,
    Place,
    ResourceDesc,
    TextureDesc,
    ViewDesc,
)
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.resources import Record
from cricket_server.session_core import FreeSummary, SessionCore
from rpc_spec import cricket_rpc as proto
from rpc_spec.handles import HandleKind

__all__ = ["ArrayRecord", "SessionArrays", "TexObject"]

log = logging.getLogger("cricket_server.session")

MAX_DIM = 1 << 31  # larger than any device accepts; keeps the products below 2**96


@dataclass
class ArrayRecord(Record):
    obj: object
    desc: ArrayDesc
    mipmap: int = 0  # a level of this mipmapped array (it goes with it)


@dataclass
class TexObject:
    """A texture (`surface` False) or surface object this session made."""

    value: int
    ctx: int
    surface: bool
    res: proto.resource_desc
    tex: proto.texture_desc | None = None
    view: proto.resource_view_desc | None = None


def array_desc_of(d: proto.array_desc, call: str) -> ArrayDesc:
    """Check a wire descriptor as cuArray3DCreate does."""
    if d.format not in FORMAT_BYTES:
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED if d.format else CUDA_ERROR_INVALID_VALUE,
            f"{call}: array format {d.format:#x} is not one of the plain integer or float "
            "formats this server takes",
        )
    if d.channels not in (1, 2, 4):
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {d.channels} channels (1, 2 or 4)")
    if not 0 < d.width < MAX_DIM or not (0 <= d.height < MAX_DIM and 0 <= d.depth < MAX_DIM):
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: extent {d.width} x {d.height} x {d.depth} (width must be > 0)",
        )
    if d.depth and not d.height and not d.flags & ARRAY3D_LAYERED:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE, f"{call}: a 3D array needs a height (depth {d.depth})"
        )
    if d.flags & ARRAY3D_CUBEMAP:
        raise CudaError(CUDA_ERROR_NOT_SUPPORTED, f"{call}: cubemap arrays are not supported")
    return ArrayDesc(d.width, d.height, d.depth, d.format, d.channels, d.flags)


def wire_desc(d: ArrayDesc) -> proto.array_desc:
    return proto.array_desc(
        width=d.width, height=d.height, depth=d.depth, format=d.format,
        channels=d.channels, flags=d.flags,
    )  # fmt: skip


class SessionArrays(SessionCore):
    """cuArray*, cuMemcpy2D/3D through arrays and pitched memory, cuTexObject*, cuSurfObject*."""

    # -- arrays -----------------------------------------------------------------------------
    def array(self, call: str, handle: int) -> ArrayRecord:
        return self.handles.get(call, HandleKind.ARRAY, handle, ArrayRecord)

    def array_create(self, d: proto.array_desc) -> int:
        call = "cuArray3DCreate"
        ctx = self.current(call)
        desc = array_desc_of(d, call)
        obj = self.bsession.array_create(desc)
        try:
            return self.handles.add(
                HandleKind.ARRAY, ArrayRecord, ctx=ctx.handle, obj=obj, desc=desc
            ).handle
        except BaseException:
            self.bsession.array_destroy(obj)
            raise

    def array_destroy(self, handle: int) -> None:
        call = "cuArrayDestroy"
        self.require_init(call)
        record = self.array(call, handle)
        if record.mipmap:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {handle:#x} is a level of mipmapped array {record.mipmap:#x}; "
                "it goes with cuMipmappedArrayDestroy",
            )
        self.bsession.synchronize()  # as cuArrayDestroy, which waits for work that may use it
        self.bsession.array_destroy(record.obj)
        self.handles.remove(handle)

    def array_get_descriptor(self, handle: int) -> proto.array_desc:
        call = "cuArray3DGetDescriptor"
        self.require_init(call)
        return wire_desc(self.array(call, handle).desc)

    # -- copies -----------------------------------------------------------------------------
    def _place(self, call: str, p: proto.copy_place, c: proto.copy_3d, side: str) -> Place:
        what = f"{call}: {side}"
        if p.kind == PLACE_HOST:
            return Place(PLACE_HOST)
        if p.kind == PLACE_DEVICE:
            pitch = p.pitch or c.width
            rows = p.height or (p.y + c.height)
            if c.width > pitch and (c.height > 1 or c.depth > 1):
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{what}: width {c.width} is larger than pitch {pitch}",
                )
            if c.height + p.y > rows and c.depth > 1:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{what}: {c.height} rows from row {p.y} do not fit slices of {rows} rows",
                )
            start = p.ptr + (p.z * rows + p.y) * pitch + p.x
            end = p.ptr + ((p.z + c.depth - 1) * rows + p.y + c.height - 1) * pitch + p.x + c.width
            self.memory.span(what, start, end - start)
            return Place(PLACE_DEVICE, ptr=p.ptr, pitch=pitch, height=rows, x=p.x, y=p.y, z=p.z)
        if p.kind == PLACE_ARRAY:
            record = self.array(what, p.array)
            d = record.desc
            if p.x % d.element_size or c.width % d.element_size:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{what}: offset {p.x} and width {c.width} bytes must be whole elements of "
                    f"{d.element_size} bytes",
                )
            if p.x + c.width > d.row_bytes or p.y + c.height > d.rows or p.z + c.depth > d.slices:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{what}: {c.width} bytes x {c.height} x {c.depth} at ({p.x}, {p.y}, {p.z}) "
                    f"leave array {p.array:#x} ({d.row_bytes} bytes x {d.rows} x {d.slices})",
                )
            return Place(PLACE_ARRAY, array=record.obj, desc=d, x=p.x, y=p.y, z=p.z)
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE, f"{what}: memory type {p.kind} is not host, device or array"
        )

    def _copy(self, call: str, c: proto.copy_3d) -> tuple[Copy3D, object | None]:
        self.current(call)
        stream = self._stream(call, c.stream)
        if c.width >= MAX_DIM * 16 or c.height >= MAX_DIM or c.depth >= MAX_DIM:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: extent too large")
        copy = Copy3D(
            self._place(call, c.src, c, "source"),
            self._place(call, c.dst, c, "destination"),
            c.width, max(c.height, 1), max(c.depth, 1),
        )  # fmt: skip
        return copy, stream

    def memcpy_3d_from_host(self, c: proto.copy_3d, data: memoryview) -> None:
        call = "cuMemcpy3D (from host)"
        copy, stream = self._copy(call, c)
        if copy.src.kind != PLACE_HOST or copy.dst.kind == PLACE_HOST:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: source must be the host, destination not"
            )
        size = copy.width * copy.height * copy.depth
        if len(data) != size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {len(data)} bytes sent for a {size}-byte copy"
            )
        if size:
            copy.src.host = memoryview(data)
            self.bsession.memcpy_3d(copy, stream)

    def memcpy_3d_to_host(self, c: proto.copy_3d) -> bytes:
        call = "cuMemcpy3D (to host)"
        copy, stream = self._copy(call, c)
        if copy.dst.kind != PLACE_HOST or copy.src.kind == PLACE_HOST:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: destination must be the host, source not"
            )
        if not copy.width:
            return b""
        return bytes(self.bsession.memcpy_3d(copy, stream) or b"")

    def memcpy_3d_on_device(self, c: proto.copy_3d) -> None:
        call = "cuMemcpy3D"
        copy, stream = self._copy(call, c)
        if PLACE_HOST in (copy.src.kind, copy.dst.kind):
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: host memory travels in the call")
        if copy.width:
            self.bsession.memcpy_3d(copy, stream)

    # -- texture and surface objects --------------------------------------------------------
    def objects(self) -> dict[int, TexObject]:
        """This session's texture and surface objects by value."""
        table: dict[int, TexObject] | None = self.__dict__.get("_tex_objects")
        if table is None:
            table = self.__dict__["_tex_objects"] = {}
        return table

    def _resource(self, call: str, r: proto.resource_desc) -> ResourceDesc:
        if r.res_type == RESOURCE_ARRAY:
            record = self.array(f"{call}: resource", r.array)
            return ResourceDesc(RESOURCE_ARRAY, array=record.obj, flags=r.flags)
        if r.res_type == RESOURCE_MIPMAPPED_ARRAY:
            mipmap = self.handles.get(
                f"{call}: resource", HandleKind.MIPMAP, r.array, ArrayRecord
            )
            return ResourceDesc(RESOURCE_MIPMAPPED_ARRAY, array=mipmap.obj, flags=r.flags)
        if r.res_type in (RESOURCE_LINEAR, RESOURCE_PITCH2D):
            if r.format not in FORMAT_BYTES or r.channels not in (1, 2, 4):
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: format {r.format:#x} with {r.channels} channels",
                )
            size = r.size if r.res_type == RESOURCE_LINEAR else r.pitch * r.height
            if (
                r.res_type == RESOURCE_PITCH2D
                and r.width * FORMAT_BYTES[r.format] * r.channels > r.pitch
            ):
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"{call}: width {r.width} exceeds pitch {r.pitch}"
                )
            if not size:
                raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: an empty resource")
            self.memory.span(f"{call}: resource", r.ptr, size)
            return ResourceDesc(
                r.res_type, ptr=r.ptr, format=r.format, channels=r.channels, size=r.size,
                width=r.width, height=r.height, pitch=r.pitch, flags=r.flags,
            )  # fmt: skip
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: resource type {r.res_type} (array 0, mipmapped array 1, linear 2 and "
            "pitch 2D 3 are taken)",
        )

    @staticmethod
    def _texture(t: proto.texture_desc) -> TextureDesc:
        return TextureDesc(
            tuple(t.address_mode), t.filter_mode, t.flags, t.max_anisotropy,  # type: ignore[arg-type]
            t.mipmap_filter_mode, t.mipmap_level_bias, t.min_mipmap_level_clamp,
            t.max_mipmap_level_clamp, tuple(t.border_color),  # type: ignore[arg-type]
        )  # fmt: skip

    @staticmethod
    def _view(v: proto.resource_view_desc) -> ViewDesc:
        return ViewDesc(
            v.format, v.width, v.height, v.depth, v.first_mipmap_level, v.last_mipmap_level,
            v.first_layer, v.last_layer,
        )  # fmt: skip

    def create_object(
        self,
        surface: bool,
        res: proto.resource_desc,
        tex: proto.texture_desc | None = None,
        view: proto.resource_view_desc | None = None,
        want: int = 0,
    ) -> int:
        """The backend's texture or surface object made from these (resources checked);
        `want`: the value it should have (restore; a backend that cannot choose ignores it)."""
        call = "cuSurfObjectCreate" if surface else "cuTexObjectCreate"
        backend_res = self._resource(call, res)
        if surface:
            if res.res_type != RESOURCE_ARRAY:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"{call}: a surface needs an array resource"
                )
            return self.bsession.surf_object_create(backend_res, want)
        if tex is None:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: no texture descriptor")
        backend_view = None if view is None else self._view(view)
        return self.bsession.tex_object_create(backend_res, self._texture(tex), backend_view, want)

    def make_object(
        self,
        surface: bool,
        res: proto.resource_desc,
        tex: proto.texture_desc | None = None,
        view: proto.resource_view_desc | None = None,
    ) -> int:
        """cuTexObjectCreate / cuSurfObjectCreate in the current context."""
        call = "cuSurfObjectCreate" if surface else "cuTexObjectCreate"
        ctx = self.current(call)
        value = self.create_object(surface, res, tex, view)
        table = self.objects()
        if value in table:  # the driver's values are unique while they live
            (self.bsession.surf_object_destroy if surface else self.bsession.tex_object_destroy)(
                value
            )
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: the driver issued {value:#x} twice")
        table[value] = TexObject(value, ctx.handle, surface, res, tex, view)
        return value

    def object_of(self, call: str, value: int, surface: bool) -> TexObject:
        obj = self.objects().get(value)
        kind = "surface" if surface else "texture"
        if obj is None or obj.surface != surface:
            raise CudaError(
                CUDA_ERROR_INVALID_HANDLE,
                f"{call}: {value:#x} is not a {kind} object of this session",
            )
        return obj

    def destroy_object(self, value: int, surface: bool) -> None:
        call = "cuSurfObjectDestroy" if surface else "cuTexObjectDestroy"
        self.require_init(call)
        self.object_of(call, value, surface)
        if surface:
            self.bsession.surf_object_destroy(value)
        else:
            self.bsession.tex_object_destroy(value)
        del self.objects()[value]

    def texture_descs(self, value: int) -> proto.texture_descs:
        call = "cuTexObjectGetResourceDesc"
        self.require_init(call)
        obj = self.object_of(call, value, False)
        assert obj.tex is not None
        return proto.texture_descs(
            res=obj.res, tex=obj.tex, view=[] if obj.view is None else [obj.view]
        )

    def surface_resource(self, value: int) -> proto.resource_desc:
        call = "cuSurfObjectGetResourceDesc"
        self.require_init(call)
        return self.object_of(call, value, True).res

    def _free_objects_made_in(self, ctx: int, summary: FreeSummary) -> None:
        """Destroy the texture and surface objects made in context `ctx` (cuCtxDestroy)."""
        for obj in [o for o in self.objects().values() if o.ctx == ctx]:
            summary.add("surface objects" if obj.surface else "texture objects")
            try:
                destroy = (
                    self.bsession.surf_object_destroy
                    if obj.surface
                    else self.bsession.tex_object_destroy
                )
                destroy(obj.value)
            except CudaError:
                summary.errors += 1
                log.exception("session %#x: destroying object %#x", self.id, obj.value)
            del self.objects()[obj.value]

    def _free_array(self, record: ArrayRecord) -> None:
        """Destroy an array and the objects made on it (closing a context or the session); a
        mipmapped array (it has `levels`) with its levels, a level only with its array."""
        levels: list[int] | None = getattr(record, "levels", None)
        gone = {record.handle, *(levels or ())}
        for obj in [
            o
            for o in self.objects().values()
            if o.res.res_type in (RESOURCE_ARRAY, RESOURCE_MIPMAPPED_ARRAY)
            and o.res.array in gone
        ]:
            (
                self.bsession.surf_object_destroy
                if obj.surface
                else self.bsession.tex_object_destroy
            )(obj.value)
            del self.objects()[obj.value]
        if levels is not None:
            self.bsession.mipmap_destroy(record.obj)
            for handle in levels:
                self.handles.remove(handle)
        elif not record.mipmap:
            self.bsession.array_destroy(record.obj)
        self.handles.remove(record.handle)
