"""Snapshot and restore of sessions: what a checkpoint holds and how it comes back (D4, D9).

Narrow interface to the session layer: a snapshot reads `Session.handles.records()`,
`Session.memory.allocations()`, `Session.context_stack()` and the backend session's copy
calls; a restore re-creates records with their handle values (`HandleTable.add_with_handle`),
allocations at their addresses (`SessionMemory.alloc_at`), and then the context stack.

- `snapshot_session(session, sink)`: the `session_image` of one session, its blobs written
  through `sink`. The caller holds the cut (`consistent_cut`): the session's lock (so it is
  between calls: its calls run in order on its connection's thread, under that lock) and
  every device of the session synchronized. It works on a `Session` wherever that lives, so
  a worker process can snapshot its own session into a part of the checkpoint directory.
- `write_checkpoint(manager, sessions, target)`: one checkpoint directory of those sessions.
- `restore_checkpoint(manager, path)`: check the manifest, then re-create every session,
  the pieces of its blobs read ahead in parallel and checked before they are copied; only
  once all of it is back does a session wait for its client's HELLO with its token. On any
  failure everything made so far is released and a `CheckpointError` is raised.

Module globals: a reload puts a global where the backend chooses (on `cuda` the driver
chooses); its contents are restored at the new address, and a moved global is reported
(pointers to it stored in device memory would be stale).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint, blob_refs
from checkpoint.tokens import TokenDigest
from checkpoint.writer import BlobSink, CheckpointWriter
from cricket_server.backends.base import CudaError
from cricket_server.backends.sim.cubin import parse_image  # an image parser, used for any backend
from cricket_server.checkpoints.arrays import array_handles, restore_arrays, snapshot_arrays
from cricket_server.checkpoints.graphs import (
    exec_images,
    graph_handles,
    graph_images,
    restore_graphs,
)
from cricket_server.checkpoints.mipmaps import mipmap_handles, snapshot_mipmaps
from cricket_server.checkpoints.vmm_pools import (
    restore_pools,
    restore_vmm,
    snapshot_pools,
    snapshot_vmm,
)
from cricket_server.resources import (
    ContextRecord,
    EventRecord,
    FunctionRecord,
    KernelRecord,
    LibraryRecord,
    ModuleRecord,
    Record,
    StreamRecord,
)
from cricket_server.session import Session, SessionManager
from cricket_server.session_library_modules import LibraryModuleRecord
from cricket_server.settings import (
    CTX_CACHE_CONFIG,
    FUNC_CACHE_CONFIG,
    PEER_ACCESS,
    STREAM_ATTRIBUTE,
)
from rpc_spec import checkpoint_rpc as ck

log = logging.getLogger("cricket_server.checkpoints.sessions")

PIECE = 64 << 20  # device memory moves in pieces of this many bytes
LIMITS = range(7)  # CUlimit: stack, printf FIFO, malloc heap, sync depth, pending launches, L2
FUNC_ATTRS = (8, 9)  # settable: MAX_DYNAMIC_SHARED_SIZE_BYTES, PREFERRED_SHARED_MEMORY_CARVEOUT

Progress = Callable[[int], None]  # called with bytes of device memory just moved
R = TypeVar("R", bound=Record)


@dataclass
class CheckpointSummary:
    sessions: int
    bytes: int
    stored_bytes: int
    seconds: float
    calls: int = 0  # calls the (last) session written had executed at its cut


@dataclass
class RestoreReport:
    sessions: list[Session]
    bytes: int
    seconds: float
    moved_globals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _no_progress(n: int) -> None:
    pass


# -- snapshot -------------------------------------------------------------------------------


DRAIN_TIMEOUT = 5.0  # seconds a cut waits for the calls already received to run


@contextlib.contextmanager
def consistent_cut(session: Session) -> Iterator[None]:
    """Hold the session between calls with all of its device work finished, after every
    call that reached its connection's socket ran: a client may have returned from a copy
    the server had not read yet (cricket_client.early_copies), and a checkpoint holds it."""
    session.drain_connection(DRAIN_TIMEOUT)
    with session.lock:
        if session.closed:
            raise CheckpointError(None, f"session {session.id:#x} is closed")
        session.synchronize_all()
        yield


def _pieces(session: Session, dev: int, addr: int, size: int, progress: Progress) -> Iterator[Any]:
    with session.on_device(dev):
        for off in range(0, size, PIECE):
            n = min(PIECE, size - off)
            yield session.bsession.memcpy_dtoh(addr + off, n, None)
            progress(n)


def _options(options: dict[int, int]) -> list[ck.ckpt_option]:
    return [ck.ckpt_option(option=k, value=v) for k, v in sorted(options.items())]


def _function_image(session: Session, fn: FunctionRecord) -> ck.function_image:
    attrs = []
    for attr in FUNC_ATTRS:
        with contextlib.suppress(CudaError):
            value = session.bsession.func_get_attribute(attr, fn.obj)
            attrs.append(ck.ckpt_attr(attribute=attr, value=value))
    return ck.function_image(handle=fn.handle, name=fn.name, attributes=attrs)


def _library_module_image(
    session: Session, m: LibraryModuleRecord, functions: dict[int, FunctionRecord]
) -> ck.library_module_image:
    fns = [_function_image(session, functions[h]) for _, h in sorted(m.functions.items())]
    return ck.library_module_image(
        handle=m.handle, ctx=m.ctx, functions=fns, globals=sorted(m.globals)
    )


def _records(session: Session, kind: type[R]) -> list[R]:
    return sorted(
        (r for r in session.handles.records() if isinstance(r, kind)), key=lambda r: r.handle
    )


def _device_of(session: Session, ctx: int) -> int:
    for record in _records(session, ContextRecord):
        if record.handle == ctx:
            return record.dev
    return 0


def module_globals(session: Session, m: ModuleRecord, dev: int) -> dict[str, tuple[int, int]]:
    """Every global of a module, name -> (address, size): those the client asked for and
    those its image declares (a kernel may have changed a global nobody asked for)."""
    found = dict(m.globals)
    try:
        names = parse_image(m.image).globals.keys()  # cubin, fatbin or PTX, on any backend
    except CudaError as e:
        log.warning(
            "session %#x module %#x: its globals cannot be listed (%s); only the %d the client "
            "asked for are saved",
            session.id,
            m.handle,
            e.message,
            len(found),
        )
        return found
    with session.on_device(dev):
        for name in names:
            if name not in found:
                with contextlib.suppress(CudaError):
                    info = session.bsession.module_get_global(m.obj, name)
                    found[name] = (info.address, info.size)
    return found


def library_globals(session: Session, lib: LibraryRecord) -> list[tuple[int, str, int, int]]:
    """(context, name, address, size) of every global of a library in each context it was
    asked in (cuLibraryGetGlobal) and, once any of its kernels was taken, in a context of each
    device of the session: those asked for and those its image declares (a kernel may have
    changed a global nobody asked for)."""
    asked = session.library_globals_asked(lib.handle)
    try:
        declared = list(parse_image(lib.image).globals.keys())
    except CudaError as e:
        log.warning(
            "session %#x library %#x: its globals cannot be listed (%s); only those the client "
            "asked for are saved",
            session.id,
            lib.handle,
            e.message,
        )
        declared = []
    found: dict[tuple[int, str], tuple[int, int]] = {
        (ctx, name): (addr, size) for name, (addr, size, ctx) in asked.items()
    }
    contexts = {ctx for _, _, ctx in asked.values()}
    contexts |= {m.ctx for m in session.library_modules(lib.handle)}  # cuModuleGetGlobal on them
    if lib.kernels:
        by_device: dict[int, int] = {}
        for record in _records(session, ContextRecord):
            by_device.setdefault(record.dev, record.handle)
        taken = {_device_of(session, ctx) for ctx in contexts}
        contexts |= {ctx for dev, ctx in by_device.items() if dev not in taken}
    for ctx in sorted(contexts):
        with session.on_device(_device_of(session, ctx)):
            for name in declared:
                if (ctx, name) not in found:
                    with contextlib.suppress(CudaError):
                        info = session.bsession.library_get_global(lib.obj, name)
                        found[(ctx, name)] = (info.address, info.size)
    return [(ctx, name, addr, size) for (ctx, name), (addr, size) in sorted(found.items())]


def snapshot_session(
    session: Session, sink: BlobSink, progress: Progress = _no_progress
) -> ck.session_image:
    """The image of `session`, its blobs written through `sink` (hold `consistent_cut`)."""
    prefix = f"s{session.id:016x}"
    session.refuse_green_checkpoint()
    contexts = _records(session, ContextRecord)
    devices = []
    for dev in session.devices_in_use():
        limits = []
        with session.on_device(dev):
            for limit in LIMITS:
                with contextlib.suppress(CudaError):
                    limits.append(
                        ck.ckpt_limit(limit=limit, value=session.bsession.get_limit(limit))
                    )
        devices.append(ck.device_image(dev=dev, limits=limits))
    functions = {f.handle: f for f in _records(session, FunctionRecord)}
    modules = []
    for m in _records(session, ModuleRecord):
        if isinstance(m, LibraryModuleRecord):
            continue  # kept with its library
        dev = _device_of(session, m.ctx)
        image = sink.write(f"{prefix}/module-{m.handle:x}", [m.image])
        globals_ = []
        for i, (name, (addr, size)) in enumerate(sorted(module_globals(session, m, dev).items())):
            blob = sink.write(
                f"{prefix}/global-{m.handle:x}-{i}", _pieces(session, dev, addr, size, progress)
            )
            globals_.append(ck.global_image(name=name, address=addr, size=size, contents=blob))
        fns = [_function_image(session, functions[h]) for _, h in sorted(m.functions.items())]
        modules.append(
            ck.module_image(
                handle=m.handle,
                ctx=m.ctx,
                image=image,
                jit_options=_options(m.jit_options),
                globals=globals_,
                functions=fns,
            )
        )
    kernels = {k.handle: k for k in _records(session, KernelRecord)}
    libraries = []
    for lib in _records(session, LibraryRecord):
        image = sink.write(f"{prefix}/library-{lib.handle:x}", [lib.image])
        kimages = []
        for name, kh in sorted(lib.kernels.items()):
            k = kernels[kh]
            fn = _function_image(session, functions[k.function]) if k.function is not None else None
            kimages.append(ck.kernel_image(handle=kh, name=name, function=fn))
        lib_globals = []
        for i, (ctx, name, addr, size) in enumerate(library_globals(session, lib)):
            blob = sink.write(
                f"{prefix}/library-global-{lib.handle:x}-{i}",
                _pieces(session, _device_of(session, ctx), addr, size, progress),
            )
            lib_globals.append(
                ck.library_global_image(ctx=ctx, name=name, address=addr, size=size, contents=blob)
            )
        libraries.append(
            ck.library_image(
                handle=lib.handle,
                ctx=lib.ctx,
                image=image,
                jit_options=_options(lib.jit_options),
                library_options=_options(lib.library_options),
                kernels=kimages,
                globals=lib_globals,
                modules=[
                    _library_module_image(session, m, functions)
                    for m in session.library_modules(lib.handle)
                ],
            )
        )
    streams = [
        ck.stream_image(handle=s.handle, ctx=s.ctx, flags=s.flags, priority=s.priority)
        for s in _records(session, StreamRecord)
    ]
    events = [
        ck.event_image(handle=e.handle, ctx=e.ctx, flags=e.flags)
        for e in _records(session, EventRecord)
    ]
    allocations = []
    for a in sorted(session.memory.allocations(), key=lambda a: a.ptr):
        blob = sink.write(
            f"{prefix}/alloc-{a.ptr:x}", _pieces(session, a.dev, a.ptr, a.size, progress)
        )
        allocations.append(
            ck.allocation_image(
                ptr=a.ptr, size=a.size, dev=a.dev, ctx=a.ctx, buffer_id=a.buffer_id, contents=blob
            )
        )
    arrays, tex_objects = snapshot_arrays(
        session, sink, prefix, partial(_device_of, session), progress
    )
    return ck.session_image(
        session_id=session.id,
        token_salt=session.token_digest.salt,
        token_digest=session.token_digest.digest,
        resume_hint=session.token_digest.hint,
        peer=session.peer[: ck.CHECKPOINT_MAX_NAME],
        client_name=session.client_name[: ck.CHECKPOINT_MAX_NAME],
        initialized=session.initialized,
        calls=session.calls,
        context_stack=session.context_stack(),
        contexts=[
            ck.context_image(
                handle=c.handle,
                dev=c.dev,
                flags=c.flags,
                primary=c.primary,
                retain_count=c.retain_count,
            )
            for c in contexts
        ],
        devices=devices,
        modules=modules,
        libraries=libraries,
        streams=streams,
        events=events,
        allocations=allocations,
        arrays=arrays,
        tex_objects=tex_objects,
        settings=[
            ck.setting_image(handle=h, what=what, value=value)
            for h, what, value in session.settings.items(session.handles.__contains__)
        ],
        graphs=graph_images(session),
        graph_execs=exec_images(session),
        vmm=snapshot_vmm(session, sink, prefix, progress),
        pools=snapshot_pools(session),
        mipmaps=snapshot_mipmaps(session, sink, prefix, partial(_device_of, session), progress),
    )


def created_by() -> str:
    return f"cricket-server (pid {os.getpid()}, python {sys.version.split()[0]})"


def write_checkpoint(
    manager: SessionManager,
    sessions: list[Session],
    target: str | os.PathLike[str],
    *,
    progress: Progress = _no_progress,
) -> CheckpointSummary:
    """Write one checkpoint directory of `sessions`, each taken at a consistent cut."""
    start = time.monotonic()
    backend = manager.backend
    with CheckpointWriter(target) as writer:
        images = []
        for session in sessions:
            with consistent_cut(session):
                images.append(snapshot_session(session, writer.sink, progress))
            log.info("checkpoint %s: session %#x written", writer.target, session.id)
        body = ck.manifest_body(
            created_by=created_by(),
            created_unix_ns=time.time_ns(),
            backend=backend.name,
            driver_version=backend.driver_version(),
            va_base=manager.arena.base,
            va_size=manager.arena.size,
            sessions=images,
        )
        writer.commit(body)
    seconds = time.monotonic() - start
    summary = CheckpointSummary(
        len(images),
        writer.sink.bytes,
        writer.sink.stored_bytes,
        seconds,
        images[-1].calls if images else 0,
    )
    log.info(
        "checkpoint %s: %d session(s), %d bytes (%d stored) in %.2f s",
        writer.target,
        summary.sessions,
        summary.bytes,
        summary.stored_bytes,
        seconds,
    )
    return summary


def _write_all(manager: SessionManager, target: Path) -> CheckpointSummary:
    return write_checkpoint(manager, manager.sessions(), target)


class CheckpointTrigger:
    """Server-side triggers: every checkpoint of all sessions into one directory, written by a
    thread of its own when `request()`ed (SIGUSR1: `install_sigusr1()`) and every `every`
    seconds (cricket-server --checkpoint-dir DIR --checkpoint-every SECONDS)."""

    def __init__(
        self,
        manager: SessionManager | None,
        directory: str | os.PathLike[str],
        every: float | None = None,
        *,
        write: Callable[[Path], CheckpointSummary] | None = None,
    ) -> None:
        """`write(directory)` writes one checkpoint; default: every session of `manager`
        (process isolation passes the worker pool's `checkpoint_workers` instead)."""
        if write is None:
            assert manager is not None
            write = partial(_write_all, manager)
        self.manager = manager
        self._write = write
        self.directory = Path(directory)
        self.every = every
        self.completed = 0  # checkpoints written (or failed) so far
        self.last: CheckpointSummary | None = None
        self.last_error: Exception | None = None
        self._wake = threading.Event()
        self._stop = False
        self._done = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="checkpoint-trigger", daemon=True)

    def start(self) -> CheckpointTrigger:
        self._thread.start()
        return self

    def request(self) -> None:
        """Ask for a checkpoint now (safe in a signal handler)."""
        self._wake.set()

    def install_sigusr1(self) -> None:
        signal.signal(signal.SIGUSR1, lambda signum, frame: self.request())

    def wait_completed(self, count: int, timeout: float | None = None) -> bool:
        """Wait until `count` checkpoints have been attempted."""
        with self._done:
            return self._done.wait_for(lambda: self.completed >= count, timeout)

    def stop(self) -> None:
        self._stop = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def checkpoint_now(self) -> CheckpointSummary | None:
        """Write a checkpoint of every session; a failure is logged and kept in last_error."""
        try:
            self.last = self._write(self.directory)
            self.last_error = None
        except (CheckpointError, CudaError, OSError) as e:
            log.error("checkpoint %s failed: %s", self.directory, e)
            self.last_error = e
        with self._done:
            self.completed += 1
            self._done.notify_all()
        return self.last if self.last_error is None else None

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.every)
            self._wake.clear()
            if self._stop:
                return
            self.checkpoint_now()


# -- restore --------------------------------------------------------------------------------


class _Restorer:
    """Re-creates one session from its image; every step adds to the session at once, so
    closing the session releases exactly what was made."""

    def __init__(
        self, ckpt: Checkpoint, session: Session, report: RestoreReport, progress: Progress
    ):
        self.ckpt = ckpt
        self.session = session
        self.report = report
        self.progress = progress
        self.b = session.bsession
        self.devs: dict[int, int] = {}

    def fail(self, message: str) -> CheckpointError:
        return CheckpointError(self.ckpt.path, f"session {self.session.id:#x}: {message}")

    def _keep(self, handle: int, make: type[R], release: Callable[[], object], **fields: Any) -> R:
        try:
            return self.session.handles.add_with_handle(handle, make, **fields)
        except BaseException:
            with contextlib.suppress(Exception):
                release()
            raise

    def run(self, image: ck.session_image) -> None:
        count = self.session.backend.device_count()
        for c in image.contexts:
            if not 0 <= c.dev < count:
                raise self.fail(
                    f"context {c.handle:#x} is on device {c.dev}; this server has {count}"
                )
            self._keep(
                c.handle,
                ContextRecord,
                lambda: None,
                ctx=c.handle,
                dev=c.dev,
                flags=c.flags,
                primary=c.primary,
                retain_count=c.retain_count,
            )
            self.devs[c.handle] = c.dev
        for m in image.modules:
            self.module(m)
        for lib in image.libraries:
            self.library(lib)
        for s in image.streams:
            with self.session.on_device(self.devs.get(s.ctx, 0)):
                obj = self.b.stream_create(s.flags, s.priority)
            self._keep(
                s.handle,
                StreamRecord,
                partial(self.b.stream_destroy, obj),
                ctx=s.ctx,
                obj=obj,
                flags=s.flags,
                priority=s.priority,
            )
        for e in image.events:
            with self.session.on_device(self.devs.get(e.ctx, 0)):
                obj = self.b.event_create(e.flags)
            self._keep(
                e.handle,
                EventRecord,
                partial(self.b.event_destroy, obj),
                ctx=e.ctx,
                obj=obj,
                flags=e.flags,
            )
        for a in image.allocations:
            self.allocation(a)
        self.report.bytes += restore_arrays(self.session, self.ckpt, image, self.devs, self.fail)
        restore_vmm(self.session, image.vmm, self._write)
        restore_pools(self.session, image.pools)
        for d in image.devices:
            self.limits(d)
        for setting in image.settings:
            self.setting(setting)
        self.session.set_context_state(image.initialized, image.context_stack)
        restore_graphs(
            self.session, str(self.ckpt.path), image.graphs, image.graph_execs, self.devs
        )
        self.session.calls = image.calls

    def _write(self, dev: int, addr: int, blob: ck.blob_ref) -> None:
        """Copy a blob to the device at `addr` piece by piece, each checked as it was read."""
        off = 0
        with self.session.on_device(dev):
            for piece in self.ckpt.pieces(blob):
                self.b.memcpy_htod(addr + off, memoryview(piece), None)
                off += len(piece)
                self.progress(len(piece))
        self.report.bytes += off

    def _functions(self, fn: ck.function_image, obj: object) -> None:
        for attr in fn.attributes:
            with contextlib.suppress(CudaError):
                if self.b.func_get_attribute(attr.attribute, obj) == attr.value:
                    continue
            try:
                self.b.func_set_attribute(obj, attr.attribute, attr.value)
            except CudaError as e:
                self.report.warnings.append(f"function {fn.handle:#x} ({fn.name}): {e.message}")

    def module(self, m: ck.module_image) -> None:
        dev = self.devs.get(m.ctx)
        if dev is None:
            raise self.fail(f"module {m.handle:#x} names context {m.ctx:#x}, which is not in it")
        image = self.ckpt.read_blob(m.image)
        options = {o.option: o.value for o in m.jit_options}
        with self.session.on_device(dev):
            obj = self.b.module_load(image, options)
        record = self._keep(
            m.handle,
            ModuleRecord,
            lambda: self.b.module_unload(obj),
            ctx=m.ctx,
            obj=obj,
            image=image,
            jit_options=options,
        )
        for f in m.functions:
            fobj = self.b.module_get_function(obj, f.name)
            self._keep(
                f.handle,
                FunctionRecord,
                lambda: None,
                ctx=m.ctx,
                obj=fobj,
                name=f.name,
                parent=m.handle,
            )
            record.functions[f.name] = f.handle
            self._functions(f, fobj)
        for g in m.globals:
            info = self.b.module_get_global(obj, g.name)
            if info.size != g.size:
                raise self.fail(
                    f"module {m.handle:#x} global {g.name!r} is {info.size} bytes after reload, "
                    f"{g.size} in the checkpoint"
                )
            if info.address != g.address:
                note = (
                    f"session {self.session.id:#x} module {m.handle:#x} global {g.name!r} moved "
                    f"from {g.address:#x} to {info.address:#x} on reload (device pointers to it "
                    "stored in device memory are stale)"
                )
                log.warning("restore: %s", note)
                self.report.moved_globals.append(note)
            record.globals[g.name] = (info.address, info.size)
            self._write(dev, info.address, g.contents)

    def library(self, lib: ck.library_image) -> None:
        image = self.ckpt.read_blob(lib.image)
        jit = {o.option: o.value for o in lib.jit_options}
        with self.session.on_device(self.devs.get(lib.ctx, 0)):
            obj = self.b.library_load(image, jit)
        record = self._keep(
            lib.handle,
            LibraryRecord,
            lambda: self.b.library_unload(obj),
            ctx=lib.ctx,
            obj=obj,
            image=image,
            jit_options=jit,
            library_options={o.option: o.value for o in lib.library_options},
        )
        for k in lib.kernels:
            kobj = self.b.library_get_kernel(obj, k.name)
            kernel = self._keep(
                k.handle,
                KernelRecord,
                lambda: None,
                ctx=lib.ctx,
                obj=kobj,
                library=lib.handle,
                name=k.name,
            )
            record.kernels[k.name] = k.handle
            if k.function is not None:
                with self.session.on_device(self.devs.get(lib.ctx, 0)):
                    fobj = self.b.kernel_get_function(kobj)
                self._keep(
                    k.function.handle,
                    FunctionRecord,
                    lambda: None,
                    ctx=lib.ctx,
                    obj=fobj,
                    name=k.name,
                    parent=k.handle,
                )
                kernel.function = k.function.handle
                self._functions(k.function, fobj)
        for g in lib.globals:
            dev = self.devs.get(g.ctx, 0)
            with self.session.on_device(dev):
                info = self.b.library_get_global(obj, g.name)
            what = f"library {lib.handle:#x} global {g.name!r}"
            if info.size != g.size:
                raise self.fail(f"{what} is {info.size} bytes after reload, {g.size} in the checkpoint")
            if info.address != g.address:
                note = (
                    f"session {self.session.id:#x} {what} moved from {g.address:#x} to "
                    f"{info.address:#x} on reload (device pointers to it stored in device memory "
                    "are stale)"
                )
                log.warning("restore: %s", note)
                self.report.moved_globals.append(note)
            self.session.library_global_restored(lib.handle, g.name, info.address, info.size, g.ctx)
            self._write(dev, info.address, g.contents)
        for m in lib.modules:
            self.library_module(lib.handle, obj, m)

    def library_module(self, library: int, lib_obj: object, m: ck.library_module_image) -> None:
        """A library's module, asked of the reloaded library in its context again."""
        dev = self.devs.get(m.ctx)
        if dev is None:
            raise self.fail(
                f"module {m.handle:#x} of library {library:#x} names context {m.ctx:#x}, "
                "which is not in it"
            )
        with self.session.on_device(dev):
            obj = self.b.library_get_module(lib_obj)
            record = self._keep(
                m.handle, LibraryModuleRecord, lambda: None, ctx=m.ctx, obj=obj, image=b"",
                jit_options={}, library=library,
            )
            for f in m.functions:
                fobj = self.b.module_get_function(obj, f.name)
                self._keep(
                    f.handle, FunctionRecord, lambda: None, ctx=m.ctx, obj=fobj, name=f.name,
                    parent=m.handle,
                )
                record.functions[f.name] = f.handle
                self._functions(f, fobj)
            for name in m.globals:
                info = self.b.module_get_global(obj, name)
                record.globals[name] = (info.address, info.size)

    def allocation(self, a: ck.allocation_image) -> None:
        try:
            self.session.memory.alloc_at(a.ptr, a.size, a.dev, a.ctx, a.buffer_id)
        except CudaError as e:
            raise self.fail(
                f"allocation [{a.ptr:#x}, {a.ptr + a.size:#x}) on device {a.dev} cannot be had "
                f"at its address: {e.message}"
            ) from None
        self._write(a.dev, a.ptr, a.contents)

    def setting(self, st: ck.setting_image) -> None:
        """Re-apply a cache configuration, stream attribute or peer access; the backend's
        refusal is a warning (the value stays the session's, as the client set it)."""
        record = next((r for r in self.session.handles.records() if r.handle == st.handle), None)
        if record is None:
            raise self.fail(f"setting {st.what} names {st.handle:#x}, which is not in it")
        dev = self.devs.get(record.ctx, 0)
        try:
            with self.session.on_device(dev):
                if st.what == CTX_CACHE_CONFIG:
                    self.b.ctx_set_cache_config(st.value)
                elif st.what == FUNC_CACHE_CONFIG:
                    self.b.func_set_cache_config(getattr(record, "obj", None), st.value)
                elif st.what == PEER_ACCESS:
                    self.b.enable_peer_access(self.devs[st.value])
                    self.session.settings.add_peer(st.handle, st.value)
                    return
                elif st.what > STREAM_ATTRIBUTE:
                    self.b.stream_set_attribute(
                        getattr(record, "obj", None), st.what - STREAM_ATTRIBUTE, st.value
                    )
        except (CudaError, KeyError) as e:
            self.report.warnings.append(f"setting {st.what} of {st.handle:#x}: {e}")
        self.session.settings.set(st.handle, st.what, st.value)

    def limits(self, d: ck.device_image) -> None:
        with self.session.on_device(d.dev):
            for limit in d.limits:
                try:
                    if self.b.get_limit(limit.limit) != limit.value:
                        self.b.set_limit(limit.limit, limit.value)
                except CudaError as e:
                    self.report.warnings.append(f"device {d.dev} limit {limit.limit}: {e.message}")


def _handles_of(s: ck.session_image) -> Iterator[int]:
    for group in (s.contexts, s.modules, s.libraries, s.streams, s.events, s.vmm.physicals, s.pools):
        yield from (item.handle for item in group)
    for m in s.modules:
        yield from (f.handle for f in m.functions)
    for lib in s.libraries:
        for k in lib.kernels:
            yield k.handle
            if k.function is not None:
                yield k.function.handle
        for lm in lib.modules:
            yield lm.handle
            yield from (f.handle for f in lm.functions)
    yield from array_handles(s)
    yield from mipmap_handles(s)
    yield from graph_handles(s)


def sessions_conflict(images: list[ck.session_image]) -> str | None:
    """Why these sessions cannot live in one process (None: they can). Sessions served by
    separate worker processes (process isolation) may share handle values or addresses."""
    handles: dict[int, int] = {}
    ranges: list[tuple[int, int, int]] = []
    for s in images:
        for handle in _handles_of(s):
            other = handles.setdefault(handle, s.session_id)
            if other != s.session_id:
                return f"sessions {other:#x} and {s.session_id:#x} both hold handle {handle:#x}"
        ranges += [(a.ptr, a.ptr + a.size, s.session_id) for a in s.allocations]
        ranges += [(r.base, r.base + r.size, s.session_id) for r in s.vmm.reservations]
    ranges.sort()
    for (_, end, first), (start, _, second) in zip(ranges, ranges[1:], strict=False):
        if start < end and first != second:
            return f"sessions {first:#x} and {second:#x} both hold device address {start:#x}"
    return None


def _blobs_of(images: list[ck.session_image]) -> list[ck.blob_ref]:
    body = ck.manifest_body(
        created_by="", created_unix_ns=0, backend="", driver_version=0, va_base=0, va_size=0,
        sessions=images,
    )  # fmt: skip
    return [ref for _what, ref in blob_refs(body)]


def check_fits(
    manager: SessionManager, ckpt: Checkpoint, images: list[ck.session_image] | None = None
) -> None:
    """Refuse before touching the device what this server cannot hold at the same addresses."""
    base, end = manager.arena.base, manager.arena.base + manager.arena.size
    taken = {s.id for s in manager.sessions()}
    images = ckpt.manifest.sessions if images is None else images
    conflict = sessions_conflict(images)
    if conflict is not None:
        raise CheckpointError(
            ckpt.path,
            f"{conflict}: they were served by separate worker processes; restore them with "
            "cricket-restart --isolation process (a worker per session)",
        )
    for s in images:
        if s.session_id in taken:
            raise CheckpointError(
                ckpt.path, f"session {s.session_id:#x} already lives on this server"
            )
        for handle in _handles_of(s):
            owner = manager.registry.owner_of(handle)
            if owner is not None:
                raise CheckpointError(
                    ckpt.path,
                    f"session {s.session_id:#x} handle {handle:#x} is live here in session "
                    f"{owner:#x}",
                )
        held = [(a.ptr, a.size, "allocation") for a in s.allocations]
        held += [(r.base, r.size, "reservation") for r in s.vmm.reservations]
        for ptr, size, what in held:
            if not (base <= ptr and ptr + size <= end):
                raise CheckpointError(
                    ckpt.path,
                    f"session {s.session_id:#x} {what} [{ptr:#x}, {ptr + size:#x}) lies "
                    f"outside this server's device address range [{base:#x}, {end:#x})",
                )


def restore_checkpoint(
    manager: SessionManager,
    path: str | os.PathLike[str],
    *,
    progress: Progress = _no_progress,
    only: set[int] | None = None,
) -> RestoreReport:
    """Bring back every session in the checkpoint at `path` (all or none).

    The manifest and what this server can hold are checked before the device is touched.
    Blobs are then read once, their pieces by several threads ahead of their use
    (`Checkpoint.prefetching`), each piece checked (its sha256) as it is read and copied to
    the device as it arrives; a piece that fails its check fails the restore, which releases
    everything made so far. No client can take a restored session (HELLO with its token)
    before every piece has been checked.

    `only`: the ids of the sessions to bring back (a worker of cricket-restart restores one)."""
    start = time.monotonic()
    ckpt = Checkpoint.open(path)
    ckpt.check_manifest()  # what `cricket-checkpoint verify` checks
    images = [s for s in ckpt.manifest.sessions if only is None or s.session_id in only]
    if only is not None and len(images) != len(only):
        missing = sorted(only - {s.session_id for s in images})
        raise CheckpointError(ckpt.path, f"holds no session {', '.join(map(hex, missing))}")
    check_fits(manager, ckpt, images)
    report = RestoreReport([], 0, 0.0)
    try:
        with ckpt.prefetching(_blobs_of(images)):
            for image in images:
                session = manager.adopt(
                    image.session_id,
                    TokenDigest.of_image(image),
                    image.peer,
                    image.client_name,
                    resumable=False,  # no client takes it before every blob is checked
                )
                report.sessions.append(session)
                with session.lock:
                    _Restorer(ckpt, session, report, progress).run(image)
                buffer_ids = [a.buffer_id for a in image.allocations]
                manager.advance_buffer_ids(max(buffer_ids, default=0))
        for session in report.sessions:
            session.resumable = True
    except BaseException as e:
        for session in report.sessions:
            session.close("restore failed")
        if isinstance(e, CudaError):
            raise CheckpointError(ckpt.path, f"restore failed: {e.message}") from e
        raise
    report.seconds = time.monotonic() - start
    return report


def close_unclaimed(manager: SessionManager) -> int:
    """Close the restored sessions no client has taken back (HELLO with their token); how many."""
    closed = 0
    for session in manager.sessions():
        if session.resumable:
            session.close("restored, and no client resumed it in time")
            closed += 1
    return closed


def restore_total_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes of device memory a restore of `path` writes (for progress bars)."""
    body = Checkpoint.open(Path(path)).manifest
    return sum(a.size for s in body.sessions for a in s.allocations) + sum(
        g.size for s in body.sessions for m in s.modules for g in m.globals
    ) + sum(g.size for s in body.sessions for lib in s.libraries for g in lib.globals)


__all__ = [
    "CheckpointSummary",
    "RestoreReport",
    "consistent_cut",
    "snapshot_session",
    "write_checkpoint",
    "restore_checkpoint",
    "restore_total_bytes",
    "checkpoint_call",
    "CheckpointTrigger",
    "close_unclaimed",
    "sessions_conflict",
]


def checkpoint_call(manager: SessionManager, sessions: list[Session], path: str) -> Any:
    """CHECKPOINT_SESSION / CHECKPOINT_SERVER: write, and answer a `checkpoint_result`."""
    from rpc_spec import cricket_rpc as proto

    try:
        summary = write_checkpoint(manager, sessions, path)
    except (CheckpointError, CudaError, OSError) as e:
        log.warning("checkpoint %s failed: %s", path, e)
        code = e.code if isinstance(e, CudaError) else 999  # CUDA_ERROR_UNKNOWN
        return proto.checkpoint_result(code, str(e)[: proto.MAX_NAME])
    done = proto.checkpoint_done(
        sessions=summary.sessions,
        bytes=summary.bytes,
        stored_bytes=summary.stored_bytes,
        calls=summary.calls,
    )
    return proto.checkpoint_result(0, done)
