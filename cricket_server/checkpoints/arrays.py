"""Arrays, texture and surface objects in checkpoints: what `snapshot_session` writes of them
and what a restore makes again.

An array's contents travel through the backend's 3D copy to host memory, slice by slice (rows
at a time for large slices), into one blob, packed; a sparse or deferred-mapping array has
none (no memory of its own remotely: an empty blob). Texture and surface objects are kept as
what they were made from; their values are the driver's and reach kernels by value, so a
restore must get the same values back. It creates them in order of value on a fresh
context; a value below the one wanted is kept aside as a filler (drivers hand out increasing
values, or reuse the lowest free one) and the fillers are destroyed once all are made. A value
that cannot be had fails the restore, naming the object (as D4 does for addresses).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint
from checkpoint.writer import BlobSink
from cricket_server.backends.arrays import PLACE_ARRAY, PLACE_HOST, ArrayDesc, Copy3D, Place
from cricket_server.backends.base import CudaError
from cricket_server.backends.mipmaps import unbacked
from cricket_server.session import Session
from cricket_server.session_arrays import ArrayRecord, TexObject
from rpc_spec import checkpoint_rpc as ck
from rpc_spec import cricket_rpc as proto

__all__ = ["snapshot_arrays", "restore_arrays", "array_handles", "MAX_FILLERS"]

log = logging.getLogger("cricket_server.checkpoints")

PIECE = 64 << 20
MAX_FILLERS = 4096  # objects a restore may make to reach the values wanted


def _runs(desc: ArrayDesc) -> Iterator[tuple[int, int, int]]:
    """(z, y, rows) runs of at most PIECE bytes (at least one row), in layout order."""
    rows = max(1, PIECE // max(desc.row_bytes, 1))
    for z in range(desc.slices):
        for y in range(0, desc.rows, rows):
            yield z, y, min(rows, desc.rows - y)


def _array_pieces(
    session: Session, dev: int, record: ArrayRecord, progress: Callable[[int], None]
) -> Iterator[bytes]:
    d = record.desc
    if unbacked(d.flags):
        return
    with session.on_device(dev):
        for z, y, rows in _runs(d):
            copy = Copy3D(
                Place(PLACE_ARRAY, array=record.obj, desc=d, y=y, z=z), Place(PLACE_HOST),
                d.row_bytes, rows, 1,
            )  # fmt: skip
            data = session.bsession.memcpy_3d(copy, None) or b""
            progress(len(data))
            yield data


def snapshot_arrays(
    session: Session, sink: BlobSink, prefix: str, dev_of: Callable[[int], int],
    progress: Callable[[int], None],
) -> tuple[list[ck.array_image], list[ck.tex_object_image]]:  # fmt: skip
    arrays = []
    records = sorted(
        (
            r
            for r in session.handles.records()
            if type(r) is ArrayRecord and not r.mipmap  # levels go with their mipmapped array
        ),
        key=lambda r: r.handle,
    )
    for a in records:
        blob = sink.write(
            f"{prefix}/array-{a.handle:x}", _array_pieces(session, dev_of(a.ctx), a, progress)
        )
        d = a.desc
        arrays.append(ck.array_image(
            handle=a.handle, ctx=a.ctx, width=d.width, height=d.height, depth=d.depth,
            format=d.format, channels=d.channels, flags=d.flags, contents=blob,
        ))  # fmt: skip
    objects = []
    for value, obj in sorted(session.objects().items()):
        if obj.res.res_type == 0 and obj.res.array not in session.handles:
            log.warning(
                "session %#x: %s object %#x is left out of the checkpoint: its array %#x was "
                "destroyed (using it is undefined in CUDA too)",
                session.id, "surface" if obj.surface else "texture", value, obj.res.array,
            )  # fmt: skip
            continue
        objects.append(ck.tex_object_image(
            value=value, ctx=obj.ctx, surface=obj.surface,
            resource=proto.xdr_resource_desc.encode(obj.res),
            texture=b"" if obj.tex is None else proto.xdr_texture_desc.encode(obj.tex),
            view=b"" if obj.view is None else proto.xdr_resource_view_desc.encode(obj.view),
        ))  # fmt: skip
    return arrays, objects


def array_handles(s: ck.session_image) -> Iterator[int]:
    yield from (a.handle for a in s.arrays)


def _write_array(session: Session, ckpt: Checkpoint, record: ArrayRecord, blob: ck.blob_ref) -> int:
    """Copy a blob into the array, run by run as _runs cuts it; the bytes written."""
    d = record.desc
    data = bytearray()
    for piece in ckpt.pieces(blob):
        data += piece
    if unbacked(d.flags) and not data:
        return 0
    if len(data) != d.nbytes:
        raise CheckpointError(
            ckpt.path,
            f"array {record.handle:#x}: blob holds {len(data)} bytes, the array {d.nbytes}",
        )
    off = 0
    for z, y, rows in _runs(d):
        n = rows * d.row_bytes
        copy = Copy3D(
            Place(PLACE_HOST, host=memoryview(data)[off : off + n]),
            Place(PLACE_ARRAY, array=record.obj, desc=d, y=y, z=z), d.row_bytes, rows, 1,
        )  # fmt: skip
        session.bsession.memcpy_3d(copy, None)
        off += n
    return off


def restore_arrays(
    session: Session, ckpt: Checkpoint, image: ck.session_image, devs: dict[int, int],
    fail: Callable[[str], CheckpointError],
) -> int:  # fmt: skip
    """Make the arrays and objects of `image` again in `session`; the bytes written."""
    written = 0
    b = session.bsession
    for a in image.arrays:
        if a.ctx not in devs:
            raise fail(f"array {a.handle:#x} names context {a.ctx:#x}, which is not in it")
        desc = ArrayDesc(a.width, a.height, a.depth, a.format, a.channels, a.flags)
        with session.on_device(devs[a.ctx]):
            obj = b.array_create(desc)
            try:
                record = session.handles.add_with_handle(
                    a.handle, ArrayRecord, ctx=a.ctx, obj=obj, desc=desc
                )
            except BaseException:
                b.array_destroy(obj)
                raise
            written += _write_array(session, ckpt, record, a.contents)
    from cricket_server.checkpoints.mipmaps import restore_mipmaps

    written += restore_mipmaps(session, ckpt, image, devs, fail)
    fillers: list[tuple[int, bool, int]] = []  # (device, surface, value)
    try:
        for t in sorted(image.tex_objects, key=lambda t: t.value):
            if t.ctx not in devs:
                raise fail(f"object {t.value:#x} names context {t.ctx:#x}, which is not in it")
            with session.on_device(devs[t.ctx]):
                _restore_object(session, t, devs[t.ctx], fillers, fail)
    finally:
        for dev, surface, value in fillers:
            with session.on_device(dev):
                try:
                    (b.surf_object_destroy if surface else b.tex_object_destroy)(value)
                except CudaError as e:
                    log.warning("restore: destroying filler object %#x: %s", value, e.message)
    return written


def _restore_object(
    session: Session, t: ck.tex_object_image, dev: int, fillers: list[tuple[int, bool, int]],
    fail: Callable[[str], CheckpointError],
) -> None:  # fmt: skip
    res = proto.xdr_resource_desc.decode(t.resource)
    tex = None if t.surface else proto.xdr_texture_desc.decode(t.texture)
    view = proto.xdr_resource_view_desc.decode(t.view) if t.view else None
    kind = "surface" if t.surface else "texture"
    b = session.bsession
    for _ in range(MAX_FILLERS):
        try:
            value = session.create_object(t.surface, res, tex, view, want=t.value)
        except CudaError as e:
            raise fail(f"{kind} object {t.value:#x} cannot be made again: {e.message}") from None
        if value == t.value:
            session.objects()[value] = TexObject(value, t.ctx, t.surface, res, tex, view)
            return
        if value > t.value or value in session.objects():
            (b.surf_object_destroy if t.surface else b.tex_object_destroy)(value)
            raise fail(
                f"{kind} object {t.value:#x}: the driver issues {value:#x} now; kernels take "
                "the value as the client holds it, so it cannot be restored"
            )
        fillers.append((dev, t.surface, value))
    raise fail(f"{kind} object {t.value:#x}: not reached after {MAX_FILLERS} objects")
