"""`cricket-checkpoint inspect`: what a checkpoint holds, as text."""

from __future__ import annotations

import datetime

from rpc_spec import checkpoint_rpc as ck

from .format import FORMAT_VERSION


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _blob(ref: ck.blob_ref) -> str:
    codec = "zstd" if ref.codec == ck.blob_codec.BLOB_ZSTD else "raw"
    pieces = f"{len(ref.pieces)} piece(s) of {_size(ref.piece_size)}"
    return f"{ref.file} ({codec}, {ref.stored_size} bytes stored, {pieces}, sha256 each)"


def describe(body: ck.manifest_body) -> str:
    """A readable listing of every session, handle, allocation and blob."""
    when = datetime.datetime.fromtimestamp(body.created_unix_ns / 1e9, datetime.UTC)
    lines = [
        f"format version {FORMAT_VERSION}, written {when:%Y-%m-%d %H:%M:%S} UTC by {body.created_by}",
        f"backend {body.backend} (driver {body.driver_version}), device addresses "
        f"[{body.va_base:#x}, {body.va_base + body.va_size:#x}), {len(body.sessions)} session(s)",
    ]
    for s in body.sessions:
        total = sum(a.size for a in s.allocations)
        lines.append(
            f"session {s.session_id:#x}: client {s.client_name!r} from {s.peer}, "
            f"{len(s.allocations)} allocation(s), {_size(total)}, {s.calls} calls executed"
        )
        lines.append(
            "  context stack: " + (" ".join(f"{h:#x}" for h in s.context_stack) or "empty")
        )
        for c in s.contexts:
            kind = f"primary (retained {c.retain_count})" if c.primary else "created"
            lines.append(f"  context {c.handle:#x}: device {c.dev}, {kind}, flags {c.flags:#x}")
        for m in s.modules:
            lines.append(f"  module {m.handle:#x} in context {m.ctx:#x}: image {_blob(m.image)}")
            for f in m.functions:
                lines.append(f"    function {f.handle:#x} {f.name}")
            for g in m.globals:
                lines.append(f"    global {g.name} at {g.address:#x}, {g.size} bytes")
        for lib in s.libraries:
            lines.append(f"  library {lib.handle:#x}: image {_blob(lib.image)}")
            for k in lib.kernels:
                fn = f", function {k.function.handle:#x}" if k.function else ""
                lines.append(f"    kernel {k.handle:#x} {k.name}{fn}")
            for lg in lib.globals:
                lines.append(
                    f"    global {lg.name} in context {lg.ctx:#x} at {lg.address:#x}, {lg.size} bytes"
                )
            for lm in lib.modules:
                lines.append(f"    module {lm.handle:#x} in context {lm.ctx:#x}")
        for st in s.streams:
            lines.append(
                f"  stream {st.handle:#x} in context {st.ctx:#x}: flags {st.flags:#x}, "
                f"priority {st.priority}"
            )
        for e in s.events:
            lines.append(f"  event {e.handle:#x} in context {e.ctx:#x}: flags {e.flags:#x}")
        for a in s.allocations:
            lines.append(
                f"  allocation {a.ptr:#x}: {a.size} bytes on device {a.dev}, {_blob(a.contents)}"
            )
        lines += _vmm_pool_lines(s)
    return "\n".join(lines)


def _vmm_pool_lines(s: ck.session_image) -> list[str]:
    """Reservations, physical allocations, mappings and memory pools of a session."""
    lines = [
        f"  reservation [{r.base:#x}, {r.base + r.size:#x})" for r in s.vmm.reservations
    ]
    for ph in s.vmm.physicals:
        held = f"{ph.refs} handle reference(s)" if ph.refs else "released, still mapped"
        lines.append(
            f"  physical allocation {ph.handle:#x}: {ph.size} bytes on device {ph.dev}, "
            f"{held}, {_blob(ph.contents)}"
        )
    for m in s.vmm.mappings:
        access = ", ".join(f"device {a.dev} flags {a.flags}" for a in m.access) or "no access"
        lines.append(
            f"  mapping [{m.address:#x}, {m.address + m.size:#x}): physical allocation "
            f"{m.physical:#x} at offset {m.offset:#x}, {access}"
        )
    for p in s.pools:
        kind = "default" if p.is_default else "destroyed" if p.destroyed else "created"
        current = ", current" if p.current else ""
        lines.append(
            f"  memory pool {p.handle:#x}: {kind}{current}, device {p.dev}, "
            f"{len(p.allocations)} allocation(s)"
        )
    return lines
