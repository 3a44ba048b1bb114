"""Mipmapped arrays in checkpoints: level 0's descriptor and every level's handle and
contents (as array images). A restore makes the mipmapped array again with the same handle
and level handles, and writes each level back; texture objects on them come after
(`restore_arrays`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint
from checkpoint.writer import BlobSink
from cricket_server.backends.arrays import ArrayDesc
from cricket_server.checkpoints.arrays import _array_pieces, _write_array
from cricket_server.session import Session
from cricket_server.session_arrays import ArrayRecord
from cricket_server.session_mipmaps import MipmapRecord, check_levels
from rpc_spec import checkpoint_rpc as ck
from rpc_spec.handles import HandleKind

__all__ = ["snapshot_mipmaps", "restore_mipmaps", "mipmap_handles"]


def snapshot_mipmaps(
    session: Session, sink: BlobSink, prefix: str, dev_of: Callable[[int], int],
    progress: Callable[[int], None],
) -> list[ck.mipmap_image]:  # fmt: skip
    out = []
    records = sorted(session.handles.of_kind(HandleKind.MIPMAP), key=lambda r: r.handle)
    for m in records:
        assert isinstance(m, MipmapRecord)
        levels = []
        for handle in m.levels:
            level = session.handles.get("checkpoint", HandleKind.ARRAY, handle, ArrayRecord)
            d = level.desc
            blob = sink.write(
                f"{prefix}/mipmap-{m.handle:x}-{handle:x}",
                _array_pieces(session, dev_of(m.ctx), level, progress),
            )
            levels.append(ck.array_image(
                handle=handle, ctx=m.ctx, width=d.width, height=d.height, depth=d.depth,
                format=d.format, channels=d.channels, flags=d.flags, contents=blob,
            ))  # fmt: skip
        d = m.desc
        out.append(ck.mipmap_image(
            handle=m.handle, ctx=m.ctx, width=d.width, height=d.height, depth=d.depth,
            format=d.format, channels=d.channels, flags=d.flags, levels=levels,
        ))  # fmt: skip
    return out


def mipmap_handles(s: ck.session_image) -> Iterator[int]:
    for m in s.mipmaps:
        yield m.handle
        yield from (lv.handle for lv in m.levels)


def restore_mipmaps(
    session: Session, ckpt: Checkpoint, image: ck.session_image, devs: dict[int, int],
    fail: Callable[[str], CheckpointError],
) -> int:  # fmt: skip
    """Make the mipmapped arrays of `image` again; the bytes written."""
    written = 0
    for m in image.mipmaps:
        if m.ctx not in devs:
            raise fail(f"mipmapped array {m.handle:#x} names context {m.ctx:#x}, which is not in it")
        desc = ArrayDesc(m.width, m.height, m.depth, m.format, m.channels, m.flags)
        try:
            check_levels("restore", desc, len(m.levels))
        except Exception as e:
            raise fail(f"mipmapped array {m.handle:#x}: {e}") from None
        with session.on_device(devs[m.ctx]):
            record = session.add_mipmap(
                m.ctx, desc, len(m.levels), m.handle, [lv.handle for lv in m.levels]
            )
            for lv, handle in zip(m.levels, record.levels, strict=True):
                level = session.handles.get("restore", HandleKind.ARRAY, handle, ArrayRecord)
                written += _write_array(session, ckpt, level, lv.contents)
    return written
