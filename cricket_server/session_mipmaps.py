"""Mipmapped and sparse arrays of a session.

A mipmapped array is a handle (kind `mipmap`); each of its levels is an array handle issued
when it is made (so a checkpoint restores the same level handles), tagged with the mipmapped
array that owns it. Copies and texture objects take levels like any array; cuArrayDestroy
refuses them (they go with their mipmapped array, as in CUDA).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cricket_server.backends.arrays import ArrayDesc
from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.backends.mipmaps import level_descs, max_levels
from cricket_server.session_arrays import ArrayRecord, SessionArrays, array_desc_of, wire_desc
from rpc_spec import cricket_rpc as proto
from rpc_spec.handles import HandleKind

__all__ = ["MipmapRecord", "SessionMipmaps"]


@dataclass
class MipmapRecord(ArrayRecord):
    """A mipmapped array: `desc` is level 0's, `levels` the level array handles in order."""

    levels: list[int] = field(default_factory=list)


def check_levels(call: str, desc: ArrayDesc, levels: int) -> None:
    most = max_levels(desc)
    if not 1 <= levels <= most:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: {levels} levels (an array of {desc.width} x {desc.height} x {desc.depth} "
            f"has 1 to {most})",
        )


class SessionMipmaps(SessionArrays):
    """cuMipmappedArray*, cuArrayGetSparseProperties, cuArrayGetMemoryRequirements."""

    def mipmap(self, call: str, handle: int) -> MipmapRecord:
        return self.handles.get(call, HandleKind.MIPMAP, handle, MipmapRecord)

    def add_mipmap(
        self, ctx: int, desc: ArrayDesc, levels: int, handle: int = 0, level_handles: list[int] | None = None
    ) -> MipmapRecord:
        """Make a mipmapped array and its level records; `handle` and `level_handles`: the
        handles they had (restore)."""
        obj, arrays = self.bsession.mipmap_create(desc, levels)
        made: list[int] = []
        try:
            if handle:
                record = self.handles.add_with_handle(
                    handle, MipmapRecord, ctx=ctx, obj=obj, desc=desc
                )
            else:
                record = self.handles.add(HandleKind.MIPMAP, MipmapRecord, ctx=ctx, obj=obj, desc=desc)
            made.append(record.handle)
            for lv, (array, d) in enumerate(zip(arrays, level_descs(desc, levels), strict=True)):
                fields = dict(ctx=ctx, obj=array, desc=d, mipmap=record.handle)
                if level_handles is not None:
                    level = self.handles.add_with_handle(level_handles[lv], ArrayRecord, **fields)
                else:
                    level = self.handles.add(HandleKind.ARRAY, ArrayRecord, **fields)
                made.append(level.handle)
                record.levels.append(level.handle)
        except BaseException:
            for h in made:
                self.handles.remove(h)
            self.bsession.mipmap_destroy(obj)
            raise
        return record

    def mipmap_create(self, d: proto.array_desc, levels: int) -> int:
        call = "cuMipmappedArrayCreate"
        ctx = self.current(call)
        desc = array_desc_of(d, call)
        check_levels(call, desc, levels)
        return self.add_mipmap(ctx.handle, desc, levels).handle

    def mipmap_destroy(self, handle: int) -> None:
        call = "cuMipmappedArrayDestroy"
        self.require_init(call)
        record = self.mipmap(call, handle)
        self.bsession.synchronize()  # as cuMipmappedArrayDestroy, which waits for work on it
        self._free_array(record)

    def mipmap_get_level(self, handle: int, level: int) -> int:
        call = "cuMipmappedArrayGetLevel"
        self.require_init(call)
        record = self.mipmap(call, handle)
        if level >= len(record.levels):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: level {level} of mipmapped array {handle:#x} ({len(record.levels)} levels)",
            )
        return record.levels[level]

    def mipmap_get_descriptor(self, handle: int) -> proto.array_desc:
        call = "cuMipmappedArrayGetDescriptor"
        self.require_init(call)
        record = self.mipmap(call, handle)
        wire = wire_desc(record.desc)
        wire.depth = len(record.levels)
        return wire

    def sparse_properties(self, handle: int, mipmap: bool) -> proto.sparse_properties:
        call = "cuMipmappedArrayGetSparseProperties" if mipmap else "cuArrayGetSparseProperties"
        self.current(call)
        record = self.mipmap(call, handle) if mipmap else self.array(call, handle)
        p = self.bsession.sparse_properties(record.obj, mipmap)
        return proto.sparse_properties(
            tile_width=p.tile_width, tile_height=p.tile_height, tile_depth=p.tile_depth,
            miptail_first_level=p.miptail_first_level, miptail_size=p.miptail_size, flags=p.flags,
        )  # fmt: skip

    def memory_requirements(self, handle: int, mipmap: bool, dev: int) -> proto.memory_requirements:
        call = (
            "cuMipmappedArrayGetMemoryRequirements" if mipmap else "cuArrayGetMemoryRequirements"
        )
        self.current(call)
        dev = self.device(call, dev)
        record = self.mipmap(call, handle) if mipmap else self.array(call, handle)
        size, alignment = self.bsession.memory_requirements(record.obj, mipmap, dev)
        return proto.memory_requirements(size=size, alignment=alignment)
