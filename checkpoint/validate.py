"""What a restore refuses in a checkpoint's manifest, found without a device.

A manifest is untrusted input: its checksum only says it is whole, not that it makes sense.
`manifest_problems(body)` lists, in manifest order, everything about it that a restore
refuses; `cricket-checkpoint verify` (`Checkpoint.problems`) and the restore
(`Checkpoint.check_manifest`) both call it, so the two cannot drift:

| what                 | checked                                                             |
| -------------------- | ------------------------------------------------------------------- |
| sessions             | ids non-zero and distinct                                           |
| handles              | tagged with the kind of object they name; each held once a session  |
| references           | the context stack, modules, streams, events, libraries and          |
|                      | allocations name contexts of their session                          |
| allocations          | non-empty, inside the manifest's device address range, none         |
|                      | overlapping another, on their context's device, distinct buffer ids |
| blob sizes           | an allocation's, global's or array's blob decodes to exactly its    |
|                      | size                                                                |
| arrays, objects      | on contexts of their session; texture and surface objects on arrays |
|                      | of it                                                               |
| blob files           | relative paths that stay inside the checkpoint; a raw blob's stored |
|                      | size is its size                                                    |
| blob pieces          | a piece size of 1 to MAX_PIECE; as many pieces as the size needs;   |
|                      | their stored sizes add up to the blob's, each a raw piece's size or |
|                      | at most a zstd frame's bound                                        |

What depends on the restoring server (its device count, address range, live handles and
sessions) is checked by the restore itself (cricket_server.checkpoints.sessions.check_fits).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from cricket_xdr.xdr import XdrError
from rpc_spec import checkpoint_rpc as ck
from rpc_spec import cricket_rpc as proto
from rpc_spec.handles import HandleKind, kind_of

from .format import MAX_PIECE, stored_bound

ADDRESS_LIMIT = 1 << 64
UNBACKED = 0x40 | 0x80  # CUDA_ARRAY3D_SPARSE, _DEFERRED_MAPPING: no contents kept
# CUarray_format -> bytes a channel (the formats arrays are made with)
ARRAY_FORMAT_BYTES = {0x01: 1, 0x02: 2, 0x03: 4, 0x08: 1, 0x09: 2, 0x0A: 4, 0x10: 2, 0x20: 4}


def blob_path_problem(file: str) -> str | None:
    """Why a blob_ref's file cannot be read inside the checkpoint (None: it can)."""
    rel = PurePosixPath(file)
    if not rel.parts:
        return "names no file"
    if rel.is_absolute() or ".." in rel.parts:
        return "leaves the checkpoint"
    return None


def piece_sizes(ref: ck.blob_ref) -> list[int]:
    """The decoded size of each piece of a blob whose piece size is valid."""
    whole, rest = divmod(ref.size, ref.piece_size)
    return [ref.piece_size] * whole + ([rest] if rest else [])


def blob_pieces_problem(ref: ck.blob_ref) -> str | None:
    """Why a blob_ref's piece list does not describe its blob (None: it does)."""
    if not 1 <= ref.piece_size <= MAX_PIECE:
        return f"has pieces of {ref.piece_size} bytes (1 to {MAX_PIECE} are read)"
    sizes = piece_sizes(ref)
    if len(ref.pieces) != len(sizes):
        return (
            f"lists {len(ref.pieces)} pieces; {ref.size} bytes in pieces of {ref.piece_size} "
            f"make {len(sizes)}"
        )
    stored = sum(p.stored_size for p in ref.pieces)
    if stored != ref.stored_size:
        return f"lists pieces of {stored} stored bytes; the blob is stored in {ref.stored_size}"
    raw = ref.codec == ck.blob_codec.BLOB_RAW
    for i, (piece, size) in enumerate(zip(ref.pieces, sizes, strict=True)):
        what = f"piece {i + 1} of {len(sizes)}"
        if raw and piece.stored_size != size:
            return f"{what} is stored in {piece.stored_size} bytes but holds {size} (raw)"
        if not raw and not 0 < piece.stored_size <= stored_bound(size):
            return (
                f"{what} is stored in {piece.stored_size} bytes; a zstd frame of {size} bytes "
                f"takes 1 to {stored_bound(size)}"
            )
    return None


def _handles(s: ck.session_image) -> Iterator[tuple[HandleKind, int, str]]:
    """(kind it must have, handle, what holds it) for every handle of a session."""
    for c in s.contexts:
        yield HandleKind.CONTEXT, c.handle, "context"
    for m in s.modules:
        yield HandleKind.MODULE, m.handle, "module"
        for f in m.functions:
            yield HandleKind.FUNCTION, f.handle, f"module {m.handle:#x} function {f.name!r}"
    for lib in s.libraries:
        yield HandleKind.LIBRARY, lib.handle, "library"
        for k in lib.kernels:
            yield HandleKind.KERNEL, k.handle, f"library {lib.handle:#x} kernel {k.name!r}"
            if k.function is not None:
                yield HandleKind.FUNCTION, k.function.handle, f"kernel {k.handle:#x} function"
        for lm in lib.modules:
            yield HandleKind.MODULE, lm.handle, f"library {lib.handle:#x} module"
            for f in lm.functions:
                yield HandleKind.FUNCTION, f.handle, f"module {lm.handle:#x} function {f.name!r}"
    for st in s.streams:
        yield HandleKind.STREAM, st.handle, "stream"
    for e in s.events:
        yield HandleKind.EVENT, e.handle, "event"
    for arr in s.arrays:
        yield HandleKind.ARRAY, arr.handle, "array"
    for mm in s.mipmaps:
        yield HandleKind.MIPMAP, mm.handle, "mipmapped array"
        for arr in mm.levels:
            yield HandleKind.ARRAY, arr.handle, f"mipmapped array {mm.handle:#x} level"
    for g in s.graphs:
        yield HandleKind.GRAPH, g.handle, "graph"
        for n in g.nodes:
            yield HandleKind.GRAPH_NODE, n.handle, f"graph {g.handle:#x} node"
    for x in s.graph_execs:
        yield HandleKind.GRAPH_EXEC, x.handle, "graph exec"
    for ph in s.vmm.physicals:
        yield HandleKind.MEMHANDLE, ph.handle, "physical allocation"
    for pool in s.pools:
        yield HandleKind.MEMPOOL, pool.handle, "memory pool"


def _blobs(s: ck.session_image) -> Iterator[tuple[str, ck.blob_ref]]:
    for m in s.modules:
        yield f"module {m.handle:#x} image", m.image
        for g in m.globals:
            yield f"module {m.handle:#x} global {g.name!r}", g.contents
    for lib in s.libraries:
        yield f"library {lib.handle:#x} image", lib.image
        for lg in lib.globals:
            yield f"library {lib.handle:#x} global {lg.name!r}", lg.contents
    for a in s.allocations:
        yield f"allocation {a.ptr:#x}", a.contents
    for arr in s.arrays:
        yield f"array {arr.handle:#x}", arr.contents
    for mm in s.mipmaps:
        for arr in mm.levels:
            yield f"mipmapped array {mm.handle:#x} level {arr.handle:#x}", arr.contents
    for ph in s.vmm.physicals:
        yield f"physical allocation {ph.handle:#x}", ph.contents


def _session_problems(s: ck.session_image, va: tuple[int, int]) -> Iterator[str]:
    held: dict[int, str] = {}
    for kind, handle, what in _handles(s):
        if kind_of(handle) is not kind:
            yield f"{what} handle {handle:#x} is not a {kind.label} handle"
        if handle in held:
            yield f"handle {handle:#x} is held twice: by {held[handle]} and by {what}"
        held.setdefault(handle, what)
    devs = {c.handle: c.dev for c in s.contexts}

    def ctx_problem(what: str, ctx: int) -> Iterator[str]:
        if ctx not in devs:
            yield f"{what} names context {ctx:#x}, which is not in it"

    for h in s.context_stack:
        yield from ctx_problem("the context stack", h)
    for m in s.modules:
        yield from ctx_problem(f"module {m.handle:#x}", m.ctx)
        for g in m.globals:
            if g.contents.size != g.size:
                yield (
                    f"module {m.handle:#x} global {g.name!r} is {g.size} bytes, its blob "
                    f"{g.contents.file} holds {g.contents.size}"
                )
    for lib in s.libraries:
        if lib.ctx != 0:
            yield from ctx_problem(f"library {lib.handle:#x}", lib.ctx)
        for lm in lib.modules:
            yield from ctx_problem(f"library {lib.handle:#x} module {lm.handle:#x}", lm.ctx)
        for lg in lib.globals:
            yield from ctx_problem(f"library {lib.handle:#x} global {lg.name!r}", lg.ctx)
            if lg.contents.size != lg.size:
                yield (
                    f"library {lib.handle:#x} global {lg.name!r} is {lg.size} bytes, its blob "
                    f"{lg.contents.file} holds {lg.contents.size}"
                )
    for st in s.streams:
        yield from ctx_problem(f"stream {st.handle:#x}", st.ctx)
    for e in s.events:
        yield from ctx_problem(f"event {e.handle:#x}", e.ctx)
    yield from _array_problems(s, ctx_problem)
    for gr in s.graphs:
        yield from ctx_problem(f"graph {gr.handle:#x}", gr.ctx)
    for x in s.graph_execs:
        yield from ctx_problem(f"graph exec {x.handle:#x}", x.ctx)
    yield from _allocation_problems(s, devs, va)
    yield from _vmm_problems(s, va)
    for what, ref in _blobs(s):
        why = blob_path_problem(ref.file)
        if why is not None:
            yield f"{what}: blob path {ref.file!r} {why}"
        if ref.codec == ck.blob_codec.BLOB_RAW and ref.stored_size != ref.size:
            yield (
                f"{what}: raw blob {ref.file} is stored in {ref.stored_size} bytes but "
                f"holds {ref.size}"
            )
        why = blob_pieces_problem(ref)
        if why is not None:
            yield f"{what}: blob {ref.file} {why}"


def _array_problems(s: ck.session_image, ctx_problem: Any) -> Iterator[str]:
    """Arrays whose blob is not their size, objects naming a missing context or array."""
    levels = [arr for mm in s.mipmaps for arr in mm.levels]
    arrays = {arr.handle for arr in [*s.arrays, *levels]}
    mipmaps = {mm.handle for mm in s.mipmaps}
    for arr in [*s.arrays, *levels]:
        yield from ctx_problem(f"array {arr.handle:#x}", arr.ctx)
        element = ARRAY_FORMAT_BYTES.get(arr.format, 0) * arr.channels
        size = arr.width * element * max(arr.height, 1) * max(arr.depth, 1)
        if arr.flags & UNBACKED:
            size = 0
        if not element or arr.contents.size != size:
            yield (
                f"array {arr.handle:#x} holds {size} bytes (format {arr.format:#x}, "
                f"{arr.channels} channels), its blob {arr.contents.file} {arr.contents.size}"
            )
    for t in s.tex_objects:
        yield from ctx_problem(f"object {t.value:#x}", t.ctx)
        try:
            res = proto.xdr_resource_desc.decode(t.resource)
        except XdrError:
            yield f"object {t.value:#x}: its resource descriptor does not decode"
            continue
        if res.res_type == 0 and res.array not in arrays:
            yield f"object {t.value:#x} names array {res.array:#x}, which is not in it"
        if res.res_type == 1 and res.array not in mipmaps:
            yield f"object {t.value:#x} names mipmapped array {res.array:#x}, which is not in it"


def _allocation_problems(
    s: ck.session_image, devs: dict[int, int], va: tuple[int, int]
) -> Iterator[str]:
    base, end = va
    buffers: dict[int, int] = {}
    last: ck.allocation_image | None = None
    for a in sorted(s.allocations, key=lambda a: a.ptr):
        span = f"allocation [{a.ptr:#x}, {a.ptr + a.size:#x})"
        if a.size == 0:
            yield f"allocation {a.ptr:#x} is empty"
        elif not (base <= a.ptr and a.ptr + a.size <= end):
            yield (
                f"{span} lies outside the checkpoint's device address range "
                f"[{base:#x}, {end:#x})"
            )
        if last is not None and a.ptr < last.ptr + last.size:
            yield f"{span} overlaps allocation [{last.ptr:#x}, {last.ptr + last.size:#x})"
        if a.contents.size != a.size:
            yield f"{span} is {a.size} bytes, its blob {a.contents.file} holds {a.contents.size}"
        if a.ctx not in devs:
            yield f"{span} names context {a.ctx:#x}, which is not in it"
        elif devs[a.ctx] != a.dev:
            yield (
                f"{span} is on device {a.dev}, its context {a.ctx:#x} on device {devs[a.ctx]}"
            )
        if a.buffer_id in buffers:
            yield (
                f"{span} has buffer id {a.buffer_id}, as has allocation "
                f"{buffers[a.buffer_id]:#x}"
            )
        buffers.setdefault(a.buffer_id, a.ptr)
        if last is None or a.ptr + a.size > last.ptr + last.size:
            last = a


def _vmm_problems(s: ck.session_image, va: tuple[int, int]) -> Iterator[str]:
    """Reservations inside the range, apart from each other and from the allocations;
    mappings inside a reservation, of a physical allocation of the session that holds them;
    physical blobs of their size; pools holding allocations of the session."""
    base, end = va
    ranges = sorted(
        [(r.base, r.base + r.size, f"reservation [{r.base:#x}, {r.base + r.size:#x})")
         for r in s.vmm.reservations]
        + [(a.ptr, a.ptr + a.size, f"allocation [{a.ptr:#x}, {a.ptr + a.size:#x})")
           for a in s.allocations]
    )  # fmt: skip
    for r in s.vmm.reservations:
        if r.size == 0 or not (base <= r.base and r.base + r.size <= end):
            yield (
                f"reservation [{r.base:#x}, {r.base + r.size:#x}) is empty or lies outside "
                f"the checkpoint's device address range [{base:#x}, {end:#x})"
            )
    for (_, first_end, first), (start, _, second) in zip(ranges, ranges[1:], strict=False):
        if start < first_end and "reservation" in first + second:
            yield f"{second} overlaps {first}"
    physicals = {ph.handle: ph for ph in s.vmm.physicals}
    for ph in s.vmm.physicals:
        if ph.contents.size != ph.size:
            yield (
                f"physical allocation {ph.handle:#x} is {ph.size} bytes, its blob "
                f"{ph.contents.file} holds {ph.contents.size}"
            )
    last_end = 0
    for m in sorted(s.vmm.mappings, key=lambda m: m.address):
        span = f"mapping [{m.address:#x}, {m.address + m.size:#x})"
        if m.size == 0 or m.address < last_end:
            yield f"{span} is empty or overlaps the mapping before it"
        last_end = max(last_end, m.address + m.size)
        if not any(
            r.base <= m.address and m.address + m.size <= r.base + r.size
            for r in s.vmm.reservations
        ):
            yield f"{span} lies outside every reservation of the session"
        mapped = physicals.get(m.physical)
        if mapped is None:
            yield f"{span} names physical allocation {m.physical:#x}, which is not in it"
        elif m.offset + m.size > mapped.size:
            yield f"{span} maps past the end of physical allocation {m.physical:#x}"
    live = {a.ptr for a in s.allocations}
    for pool in s.pools:
        for ptr in pool.allocations:
            if ptr not in live:
                yield f"memory pool {pool.handle:#x} names allocation {ptr:#x}, which is not in it"


def manifest_problems(body: ck.manifest_body) -> list[str]:
    """Everything in `body` a restore refuses, each naming the session and object (empty: it
    makes sense); see the module docstring."""
    found: list[str] = []
    end = body.va_base + body.va_size
    if end > ADDRESS_LIMIT:
        found.append(f"device address range [{body.va_base:#x}, {end:#x}) overflows 64 bits")
    seen: set[int] = set()
    for s in body.sessions:
        sid = f"session {s.session_id:#x}"
        if s.session_id == 0:
            found.append("session id 0 names no session")
        elif s.session_id in seen:
            found.append(f"{sid} appears twice")
        seen.add(s.session_id)
        found += [f"{sid}: {p}" for p in _session_problems(s, (body.va_base, end))]
    return found
