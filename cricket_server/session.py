"""The session layer: one `Session` per client connection, and the `SessionManager` of them all.

A session is what a client owns on the server: virtual contexts (a context stack and a primary
context per device, with CUDA's semantics), handles (`cricket_server.resources`), device memory
(one `DeviceHeap` per device over the process-wide `AddressArena`) and the ranges of its
modules' globals. Every call checks that the client touches only what it owns before it goes
to the backend; a failure is raised as `CudaError` with a message that names the call and the
value, which the service returns as the reply's CUresult and keeps for GET_ERROR_MESSAGE.

Methods raise `CudaError`; they are called by one thread at a time (hold `Session.lock`).
`close()` frees everything exactly once, whoever calls it first (GOODBYE, a dropped
connection, server shutdown).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from checkpoint.tokens import TokenDigest
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_NOT_SUPPORTED,
    PER_THREAD_STREAM,
    Backend,
    BackendSession,
    CudaError,
    ParamInfo,
)
from cricket_server.limits import ServerLimits, object_limit_error, session_limit_error
from cricket_server.memory import ALLOC_ALIGNMENT, AddressArena, DeviceHeap
from cricket_server.resources import (
    ContextRecord,
    EventRecord,
    FunctionRecord,
    HandleKind,
    HandleRegistry,
    HandleTable,
    KernelRecord,
    LibraryRecord,
    ModuleRecord,
    Record,
    StreamRecord,
    kind_of,
)
from cricket_server.session_memory import SessionMemory, Span

if TYPE_CHECKING:
    from cricket_server.launch_batch import Launch

log = logging.getLogger("cricket_server.session")

PROTOCOL_VERSION = 1
STREAM_LEGACY = 0
STREAM_PER_THREAD = 2
PITCH_ALIGNMENT = 512  # cuMemAllocPitch pitches are multiples of this on recent GPUs
NO_CONTEXT = 0
CTX_SCHED_MASK = 0x07
CTX_FLAGS_MASK = 0xFF

HeapFactory = Callable[[int, BackendSession], DeviceHeap]


def negotiate_version(client_version: int) -> int:
    """The protocol version both sides speak: min(client, ours); a client below 1 is refused."""
    if client_version < 1:
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED,
            f"HELLO: client protocol version {client_version} is not supported "
            f"(this server speaks 1..{PROTOCOL_VERSION})",
        )
    return min(client_version, PROTOCOL_VERSION)


def check_ctx_flags(call: str, flags: int) -> int:
    """CUctx_flags: one scheduling mode (0, SPIN 1, YIELD 2, BLOCKING_SYNC 4) plus flag bits."""
    if flags & ~CTX_FLAGS_MASK or (flags & CTX_SCHED_MASK) not in (0, 1, 2, 4):
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: invalid context flags {flags:#x}")
    return flags


@dataclass
class FreeSummary:
    """What closing a session (or destroying a context) freed, for the log."""

    counts: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    errors: int = 0

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def __str__(self) -> str:
        parts = [f"{n} {what}" for what, n in self.counts.items() if n]
        text = ", ".join(parts) if parts else "nothing"
        if self.bytes:
            text += f" ({self.bytes} bytes of device memory)"
        if self.errors:
            text += f"; {self.errors} backend errors while freeing (logged)"
        return text


def _default_heap_factory(arena: AddressArena) -> HeapFactory:
    def make(dev: int, bsession: BackendSession) -> DeviceHeap:
        return DeviceHeap(arena, bsession.chunk_backing(dev))

    return make


class SessionManager:
    """Every live session of the server process, over one backend and one address arena."""

    def __init__(
        self,
        backend: Backend,
        arena: AddressArena,
        *,
        server_version: str = "0.1.0",
        heap_factory: HeapFactory | None = None,
        limits: ServerLimits | None = None,
    ) -> None:
        self.backend = backend
        self.limits = limits or ServerLimits()
        self.arena = arena
        self.server_version = server_version
        self.registry = HandleRegistry()
        self._heap_factory = heap_factory or _default_heap_factory(arena)
        self._buffer_ids = itertools.count(1)
        self._sessions: dict[int, Session] = {}
        self._lock = threading.Lock()
        self._grace_timers: dict[int, threading.Timer] = {}  # dropped sessions awaiting HELLO

    def open(self, peer: str, client_name: str) -> Session:
        limit = self.limits.max_sessions
        if limit is not None and len(self.sessions()) >= limit:
            raise session_limit_error(len(self.sessions()), limit)
        bsession = self.backend.open_session()
        with self._lock:
            if limit is not None and len(self._sessions) >= limit:
                bsession.close()
                raise session_limit_error(len(self._sessions), limit)
            session_id = secrets.randbits(64)
            while session_id == 0 or session_id in self._sessions:
                session_id = secrets.randbits(64)
            session = Session(self, session_id, bsession, peer, client_name)
            self._sessions[session_id] = session
        log.info(
            "session %#x start: peer %s, client %r, backend %s",
            session_id,
            peer,
            client_name,
            self.backend.name,
        )
        return session

    def adopt(
        self, session_id: int, token_digest: TokenDigest, peer: str, client_name: str
    ) -> Session:
        """A session with a given id, waiting for the HELLO of a client with the token of
        `token_digest` (restore). The token itself is not known until then."""
        bsession = self.backend.open_session()
        with self._lock:
            if session_id == 0 or session_id in self._sessions:
                bsession.close()
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"restore: session id {session_id:#x} is taken"
                )
            session = Session(self, session_id, bsession, peer, client_name)
            session.token = b""
            session.token_digest = token_digest
            session.resumable = True
            self._sessions[session_id] = session
        return session

    def resume(self, token: bytes) -> Session:
        """The restored session holding `token`, now taken by the connection that asks."""
        with self._lock:
            for session in self._sessions.values():
                if session.resumable and not session.closed and session.token_digest.matches(token):
                    session.token = bytes(token)
                    session.resumable = False
                    timer = self._grace_timers.pop(session.id, None)
                    if timer is not None:
                        timer.cancel()
                    return session
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            "HELLO: no restored session waits for that token (a session ends with its "
            "connection unless a restart brought it back, or --resume-grace keeps it a while)",
        )

    def connection_lost(self, session: Session, connection_id: int | None = None) -> None:
        """Connection `connection_id` of `session` ended without GOODBYE: free the session,
        or, with `limits.resume_grace`, keep it that long for a HELLO with its token. Nothing
        happens when the session has moved to another connection since."""
        if connection_id is not None and session.connection_id not in (None, connection_id):
            return
        grace = self.limits.resume_grace
        if not grace or session.closed:
            session.close("connection closed")
            return
        with self._lock:
            session.resumable = True
            timer = threading.Timer(grace, self._grace_over, (session,))
            timer.daemon = True
            self._grace_timers[session.id] = timer
        log.info(
            "session %#x: connection lost; kept %g s for its client to resume (--resume-grace)",
            session.id,
            grace,
        )
        timer.start()

    def _grace_over(self, session: Session) -> None:
        with self._lock:
            if self._grace_timers.get(session.id) is None or not session.resumable:
                return
            del self._grace_timers[session.id]
            session.resumable = False
        session.close(f"not resumed within {self.limits.resume_grace:g} s")

    def advance_buffer_ids(self, past: int) -> None:
        """Issue buffer ids above `past` from now on (restored allocations keep theirs)."""
        with self._lock:
            self._buffer_ids = itertools.count(max(past + 1, next(self._buffer_ids)))

    def sessions(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())

    def next_buffer_id(self) -> int:
        with self._lock:
            return next(self._buffer_ids)

    def new_heap(self, dev: int, bsession: BackendSession) -> DeviceHeap:
        return self._heap_factory(dev, bsession)

    def forget(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)

    def close_all(self, reason: str = "server shutdown") -> None:
        with self._lock:
            timers, self._grace_timers = list(self._grace_timers.values()), {}
        for timer in timers:
            timer.cancel()
        for session in self.sessions():
            session.close(reason)


class Session:
    """The state of one client: contexts, handles, memory. See the module docstring."""

    def __init__(
        self,
        manager: SessionManager,
        session_id: int,
        bsession: BackendSession,
        peer: str,
        client_name: str,
    ) -> None:
        self.manager = manager
        self.backend = manager.backend
        self.bsession = bsession
        self.id = session_id
        self.token = secrets.token_bytes(32)  # b"" in a restored session until resumed
        self.token_digest = TokenDigest.of(self.token)  # what a checkpoint keeps of it
        self.peer = peer
        self.client_name = client_name
        self.lock = threading.RLock()
        self.last_error = ""
        self.closed = False
        self.resumable = False  # a restored (or dropped, --resume-grace) session, untaken
        self.connection_id: int | None = None  # the RPC connection serving it now
        self.calls = 0  # calls executed (CricketService._run counts them; replay needs it)
        self._param_bytes: dict[int, int] = {}  # function handle -> argument bytes it takes
        self.initialized = False
        self.handles = HandleTable(manager.registry, session_id)
        self._stack: list[int] = []  # context handles, top last
        self._primary: dict[int, int] = {}  # dev -> primary context handle
        self.memory = SessionMemory(
            session_id,
            lambda dev: manager.new_heap(dev, bsession),
            manager.next_buffer_id,
            self._global_spans,
            manager.limits.max_session_memory,
        )
        self._backend_dev: int | None = None

    # -- initialization and devices ---------------------------------------------------------
    def init(self, flags: int) -> None:
        if flags != 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"cuInit: flags must be 0, got {flags}")
        self.initialized = True

    def require_init(self, call: str) -> None:
        if not self.initialized:
            raise CudaError(CUDA_ERROR_NOT_INITIALIZED, f"{call}: cuInit has not been called")

    def driver_version(self) -> int:
        return self.backend.driver_version()

    def device_count(self) -> int:
        self.require_init("cuDeviceGetCount")
        return self.backend.device_count()

    def device(self, call: str, dev: int) -> int:
        """Check that `dev` is a device ordinal of the server (after cuInit)."""
        self.require_init(call)
        count = self.backend.device_count()
        if not 0 <= dev < count:
            raise CudaError(
                CUDA_ERROR_INVALID_DEVICE,
                f"{call}: device {dev} does not exist (the server has {count})",
            )
        return dev

    # -- contexts ---------------------------------------------------------------------------
    def _ctx(self, call: str, handle: int) -> ContextRecord:
        return self.handles.get(call, HandleKind.CONTEXT, handle, ContextRecord)

    def current(self, call: str) -> ContextRecord:
        """The current context, which must exist and be active."""
        self.require_init(call)
        if not self._stack:
            raise CudaError(CUDA_ERROR_INVALID_CONTEXT, f"{call}: no current context")
        ctx = self._ctx(call, self._stack[-1])
        if not ctx.active:
            raise CudaError(
                CUDA_ERROR_INVALID_CONTEXT,
                f"{call}: the current context {ctx.handle:#x} (primary context of device "
                f"{ctx.dev}) has been released",
            )
        return ctx

    def _sync_device(self) -> None:
        """Tell the backend when the current context's device changes."""
        if not self._stack:
            return
        ctx = self.handles.get("set_device", HandleKind.CONTEXT, self._stack[-1], ContextRecord)
        if ctx.dev != self._backend_dev:
            self.bsession.set_device(ctx.dev)
            self._backend_dev = ctx.dev

    @contextmanager
    def _on_device(self, dev: int) -> Iterator[None]:
        """Run the body with the backend on `dev`, then go back to the current context's."""
        if dev != self._backend_dev:
            self.bsession.set_device(dev)
            self._backend_dev = dev
        try:
            yield
        finally:
            if self._stack and self._stack[-1] in self.handles:
                self._sync_device()

    def _primary_record(self, call: str, dev: int) -> ContextRecord:
        """The primary context of `dev` in this session, made (unretained) on first use."""
        dev = self.device(call, dev)
        handle = self._primary.get(dev)
        if handle is None:
            ctx = self.handles.add(
                HandleKind.CONTEXT, ContextRecord, ctx=NO_CONTEXT, dev=dev, flags=0, primary=True
            )
            ctx.ctx = ctx.handle
            handle = self._primary[dev] = ctx.handle
        return self._ctx(call, handle)

    def primary_ctx_retain(self, dev: int) -> int:
        ctx = self._primary_record("cuDevicePrimaryCtxRetain", dev)
        ctx.retain_count += 1
        return ctx.handle

    def primary_ctx_release(self, dev: int) -> None:
        call = "cuDevicePrimaryCtxRelease"
        ctx = self._primary_record(call, dev)
        if ctx.retain_count == 0:
            raise CudaError(
                CUDA_ERROR_INVALID_CONTEXT,
                f"{call}: the primary context of device {dev} is not retained",
            )
        ctx.retain_count -= 1
        if ctx.retain_count == 0:
            summary = self._free_made_in(ctx)
            log.debug(
                "session %#x: primary context of device %d released: freed %s",
                self.id,
                dev,
                summary,
            )

    def primary_ctx_reset(self, dev: int) -> None:
        """Free what the primary context owns and reset its flags; the retain count stays."""
        ctx = self._primary_record("cuDevicePrimaryCtxReset", dev)
        summary = self._free_made_in(ctx)
        ctx.flags = 0
        log.debug(
            "session %#x: primary context of device %d reset: freed %s", self.id, dev, summary
        )

    def primary_ctx_get_state(self, dev: int) -> tuple[int, bool]:
        ctx = self._primary_record("cuDevicePrimaryCtxGetState", dev)
        return ctx.flags, ctx.retain_count > 0

    def primary_ctx_set_flags(self, dev: int, flags: int) -> None:
        call = "cuDevicePrimaryCtxSetFlags"
        ctx = self._primary_record(call, dev)
        ctx.flags = check_ctx_flags(call, flags)

    def ctx_create(self, flags: int, dev: int) -> int:
        dev = self.device("cuCtxCreate", dev)
        check_ctx_flags("cuCtxCreate", flags)
        limit = self.manager.limits.max_contexts
        made = self.handles.count(HandleKind.CONTEXT) - len(self._primary)
        if limit is not None and made >= limit:
            raise object_limit_error("cuCtxCreate", "contexts", limit, "--max-contexts")
        ctx = self.handles.add(
            HandleKind.CONTEXT, ContextRecord, ctx=NO_CONTEXT, dev=dev, flags=flags, primary=False
        )
        ctx.ctx = ctx.handle
        self._stack.append(ctx.handle)
        self._sync_device()
        return ctx.handle

    def ctx_destroy(self, handle: int) -> None:
        call = "cuCtxDestroy"
        self.require_init(call)
        ctx = self._ctx(call, handle)
        if ctx.primary:
            raise CudaError(
                CUDA_ERROR_INVALID_CONTEXT,
                f"{call}: {handle:#x} is the primary context of device {ctx.dev}; "
                "use cuDevicePrimaryCtxRelease",
            )
        summary = self._free_made_in(ctx)
        self._stack = [h for h in self._stack if h != handle]
        self.handles.remove(handle)
        self._sync_device()
        log.debug("session %#x: context %#x destroyed: freed %s", self.id, handle, summary)

    def ctx_set_current(self, handle: int) -> None:
        call = "cuCtxSetCurrent"
        self.require_init(call)
        if handle == NO_CONTEXT:
            if self._stack:
                self._stack.pop()
            self._sync_device()
            return
        self._ctx(call, handle)
        if self._stack:
            self._stack[-1] = handle
        else:
            self._stack.append(handle)
        self._sync_device()

    def ctx_get_current(self) -> int:
        self.require_init("cuCtxGetCurrent")
        return self._stack[-1] if self._stack else NO_CONTEXT

    def ctx_push_current(self, handle: int) -> None:
        call = "cuCtxPushCurrent"
        self.require_init(call)
        self._ctx(call, handle)
        self._stack.append(handle)
        self._sync_device()

    def ctx_pop_current(self) -> int:
        call = "cuCtxPopCurrent"
        self.require_init(call)
        if not self._stack:
            raise CudaError(CUDA_ERROR_INVALID_CONTEXT, f"{call}: the context stack is empty")
        handle = self._stack.pop()
        self._sync_device()
        return handle

    def ctx_synchronize(self) -> None:
        self.current("cuCtxSynchronize")
        self.bsession.synchronize()

    def ctx_get_device(self) -> int:
        return self.current("cuCtxGetDevice").dev

    def ctx_get_limit(self, limit: int) -> int:
        self.current("cuCtxGetLimit")
        return self.bsession.get_limit(limit)

    def ctx_set_limit(self, limit: int, value: int) -> None:
        self.current("cuCtxSetLimit")
        self.bsession.set_limit(limit, value)

    def ctx_stream_priority_range(self) -> tuple[int, int]:
        self.current("cuCtxGetStreamPriorityRange")
        return self.bsession.stream_priority_range()

    # -- memory -----------------------------------------------------------------------------
    def find(self, addr: int) -> Span | None:
        """The owned range containing `addr`: an allocation or a module global."""
        return self.memory.find(addr)

    def _global_spans(self) -> Iterator[Span]:
        for record in self.handles.of_kind(HandleKind.MODULE):
            assert isinstance(record, ModuleRecord)
            ctx = self.handles.get("find", HandleKind.CONTEXT, record.ctx, ContextRecord)
            for addr, size in record.globals.values():
                yield Span(addr, size, ctx.dev, record.ctx, 0)

    def _alloc(self, call: str, size: int, align: int = ALLOC_ALIGNMENT) -> int:
        ctx = self.current(call)
        return self.memory.alloc(call, size, ctx.dev, ctx.handle, align)

    def mem_alloc(self, size: int) -> int:
        return self._alloc("cuMemAlloc", size)

    def mem_alloc_pitch(self, width: int, height: int, element_size: int) -> tuple[int, int]:
        call = "cuMemAllocPitch"
        self.current(call)
        if element_size not in (4, 8, 16):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: element size must be 4, 8 or 16, got {element_size}",
            )
        if width <= 0 or height <= 0:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: width {width} and height {height} must be > 0"
            )
        pitch = -(-width // PITCH_ALIGNMENT) * PITCH_ALIGNMENT
        return self._alloc(call, pitch * height, PITCH_ALIGNMENT), pitch

    def mem_free(self, ptr: int) -> None:
        call = "cuMemFree"
        self.require_init(call)
        alloc = self.memory.allocation(ptr)
        if alloc is not None:
            with self._on_device(alloc.dev):
                self.bsession.synchronize()  # cuMemFree waits for the work that may use it
        self.memory.free(call, ptr)

    def mem_alloc_async(self, size: int, stream: int) -> int:
        self._stream("cuMemAllocAsync", stream)
        return self._alloc("cuMemAllocAsync", size)

    def mem_free_async(self, ptr: int, stream: int) -> None:
        """Free after the stream's prior work (which may still use the memory) is done."""
        call = "cuMemFreeAsync"
        self.current(call)
        obj = self._stream(call, stream)
        if self.memory.allocation(ptr) is None:
            self.memory.free(call, ptr)  # raises the error that names it
        self.bsession.stream_synchronize(obj)
        self.memory.free(call, ptr)

    def mem_get_info(self) -> tuple[int, int]:
        self.current("cuMemGetInfo")
        return self.bsession.mem_get_info()

    def mem_get_address_range(self, ptr: int) -> tuple[int, int]:
        call = "cuMemGetAddressRange"
        self.require_init(call)
        found = self.memory.find(ptr)
        if found is None:  # local CUDA: NOT_FOUND for an address outside every allocation
            message = f"{call}: {ptr:#x} is not inside any allocation of this session"
            log.warning("session %#x: %s", self.id, message)
            raise CudaError(CUDA_ERROR_NOT_FOUND, message)
        return found.base, found.size

    def memcpy_htod(self, dst: int, data: memoryview, stream: int | None = None) -> None:
        call = "cuMemcpyHtoD" if stream is None else "cuMemcpyHtoDAsync"
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if len(data):
            self.memory.span(call, dst, len(data))
            self.bsession.memcpy_htod(dst, data, obj)

    def memcpy_dtoh(self, src: int, size: int, stream: int | None = None) -> bytes | memoryview:
        call = "cuMemcpyDtoH" if stream is None else "cuMemcpyDtoHAsync"
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if size == 0:
            return b""
        self.memory.span(call, src, size)
        return self.bsession.memcpy_dtoh(src, size, obj)

    def memcpy_dtod(self, dst: int, src: int, size: int, stream: int | None = None) -> None:
        call = "cuMemcpyDtoD" if stream is None else "cuMemcpyDtoDAsync"
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if size:
            self.memory.span(call, src, size)
            self.memory.span(call, dst, size)
            self.bsession.memcpy_dtod(dst, src, size, obj)

    def memset(
        self, dst: int, value: int, width: int, count: int, stream: int | None = None
    ) -> None:
        call = f"cuMemsetD{width * 8}" + ("" if stream is None else "Async")
        self.current(call)
        obj = self._stream(call, stream or STREAM_LEGACY)
        if width not in (1, 2, 4):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuMemset: element width must be 1, 2 or 4, got {width}"
            )
        if dst % width:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {dst:#x} is not {width}-byte aligned"
            )
        if count:
            self.memory.span(call, dst, width * count)
            self.bsession.memset(dst, value & ((1 << (8 * width)) - 1), width, count, obj)

    def pointer_attributes(self, attributes: Sequence[int], ptr: int) -> list[tuple[int, int, int]]:
        self.require_init("cuPointerGetAttributes")
        return self.memory.pointer_attributes(attributes, ptr)

    # -- modules, libraries, functions ------------------------------------------------------
    def module_load(
        self, image: bytes, jit_options: dict[int, int], call: str = "cuModuleLoadData"
    ) -> int:
        ctx = self.current(call)
        self._room_for_module(call)
        obj = self.bsession.module_load(image, jit_options)
        record = self.handles.add(
            HandleKind.MODULE,
            ModuleRecord,
            ctx=ctx.handle,
            obj=obj,
            image=bytes(image),
            jit_options=dict(jit_options),
        )
        return record.handle

    def _room_for_module(self, call: str) -> None:
        """--max-modules: modules and libraries together."""
        limit = self.manager.limits.max_modules
        held = self.handles.count(HandleKind.MODULE) + self.handles.count(HandleKind.LIBRARY)
        if limit is not None and held >= limit:
            raise object_limit_error(call, "modules and libraries", limit, "--max-modules")

    def _module(self, call: str, handle: int) -> ModuleRecord:
        return self.handles.get(call, HandleKind.MODULE, handle, ModuleRecord)

    def module_unload(self, handle: int) -> None:
        call = "cuModuleUnload"
        self.require_init(call)
        record = self._module(call, handle)
        self.bsession.module_unload(record.obj)
        self._forget_module(record)

    def _forget_module(self, record: ModuleRecord) -> None:
        for fh in record.functions.values():
            self.handles.remove(fh)
        self.handles.remove(record.handle)

    def module_get_function(self, handle: int, name: str) -> int:
        call = "cuModuleGetFunction"
        self.require_init(call)
        record = self._module(call, handle)
        if name not in record.functions:
            obj = self.bsession.module_get_function(record.obj, name)
            fn = self.handles.add(
                HandleKind.FUNCTION,
                FunctionRecord,
                ctx=record.ctx,
                obj=obj,
                name=name,
                parent=record.handle,
            )
            record.functions[name] = fn.handle
        return record.functions[name]

    def module_get_global(self, handle: int, name: str) -> tuple[int, int]:
        call = "cuModuleGetGlobal"
        self.require_init(call)
        record = self._module(call, handle)
        info = self.bsession.module_get_global(record.obj, name)
        record.globals[name] = (info.address, info.size)
        return info.address, info.size

    def library_load(
        self, image: bytes, jit_options: dict[int, int], library_options: dict[int, int]
    ) -> int:
        call = "cuLibraryLoadData"
        self.require_init(call)
        ctx = self._stack[-1] if self._stack else NO_CONTEXT  # libraries are context-free
        self._room_for_module(call)
        obj = self.bsession.library_load(image, jit_options)
        record = self.handles.add(
            HandleKind.LIBRARY,
            LibraryRecord,
            ctx=ctx,
            obj=obj,
            image=bytes(image),
            jit_options=dict(jit_options),
            library_options=dict(library_options),
        )
        return record.handle

    def _library(self, call: str, handle: int) -> LibraryRecord:
        return self.handles.get(call, HandleKind.LIBRARY, handle, LibraryRecord)

    def library_unload(self, handle: int) -> None:
        call = "cuLibraryUnload"
        self.require_init(call)
        record = self._library(call, handle)
        self.bsession.library_unload(record.obj)
        self._forget_library(record)

    def _forget_library(self, record: LibraryRecord) -> None:
        for kh in record.kernels.values():
            kernel = self.handles.get("unload", HandleKind.KERNEL, kh, KernelRecord)
            if kernel.function is not None:
                self.handles.remove(kernel.function)
            self.handles.remove(kh)
        self.handles.remove(record.handle)

    def library_get_kernel(self, handle: int, name: str) -> int:
        call = "cuLibraryGetKernel"
        self.require_init(call)
        record = self._library(call, handle)
        if name not in record.kernels:
            obj = self.bsession.library_get_kernel(record.obj, name)
            kernel = self.handles.add(
                HandleKind.KERNEL, KernelRecord, ctx=record.ctx, obj=obj, library=handle, name=name
            )
            record.kernels[name] = kernel.handle
        return record.kernels[name]

    def kernel_get_function(self, handle: int) -> int:
        call = "cuKernelGetFunction"
        self.current(call)
        kernel = self.handles.get(call, HandleKind.KERNEL, handle, KernelRecord)
        if kernel.function is None:
            obj = self.bsession.kernel_get_function(kernel.obj)
            fn = self.handles.add(
                HandleKind.FUNCTION,
                FunctionRecord,
                ctx=kernel.ctx,
                obj=obj,
                name=kernel.name,
                parent=handle,
            )
            kernel.function = fn.handle
        return kernel.function

    def function(self, call: str, handle: int) -> FunctionRecord:
        """A function handle, or a library kernel handle (CUDA accepts a CUkernel as CUfunction)."""
        self.require_init(call)
        if handle in self.handles and kind_of(handle) is HandleKind.KERNEL:
            handle = self.kernel_get_function(handle)
        return self.handles.get(call, HandleKind.FUNCTION, handle, FunctionRecord)

    def func_get_attribute(self, attrib: int, handle: int) -> int:
        call = "cuFuncGetAttribute"
        return self.bsession.func_get_attribute(attrib, self.function(call, handle).obj)

    def func_set_attribute(self, handle: int, attrib: int, value: int) -> None:
        call = "cuFuncSetAttribute"
        self.bsession.func_set_attribute(self.function(call, handle).obj, attrib, value)

    def func_set_cache_config(self, handle: int, config: int) -> None:
        call = "cuFuncSetCacheConfig"
        self.bsession.func_set_cache_config(self.function(call, handle).obj, config)

    def func_param_info(self, handle: int) -> tuple[ParamInfo, ...]:
        fn = self.function("cuFuncGetParamInfo", handle)
        if fn.params is None:
            fn.params = tuple(self.bsession.func_param_info(fn.obj))
        return fn.params

    def launch(
        self,
        handle: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: int,
        params: memoryview,
        cooperative: bool = False,
    ) -> None:
        call = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
        self.current(call)
        fn_obj, need, name = self._launch_target(call, handle)
        if len(params) < need:
            raise _too_few_params(call, handle, need, len(params), name)
        obj = self._stream(call, stream)
        self.bsession.launch(fn_obj, grid, block, shared_mem, obj, params, cooperative)

    def _launch_target(self, call: str, handle: int) -> tuple[object, int, str]:
        """(backend function, bytes of parameters it takes, kernel name) of `handle`."""
        fn = self.function(call, handle)
        need = self._param_bytes.get(fn.handle)
        if need is None:
            if fn.params is None:
                fn.params = tuple(self.bsession.func_param_info(fn.obj))
            need = self._param_bytes[fn.handle] = fn.params_size()
        return fn.obj, need, fn.name

    def launch_batch(self, launches: Sequence[Launch]) -> None:
        """cuLaunchKernel for each launch, in order, each attempted as if it came alone; the
        first failure is raised afterwards, naming its place in the batch."""
        call = "cuLaunchKernel"
        count = len(launches)
        try:
            self.current(call)
        except CudaError as e:
            raise CudaError(e.code, f"{e.message} (all {count} launches of a batch)") from None
        targets: dict[int, tuple[object, int, str]] = {}  # handles cannot change in a batch
        streams: dict[int, object | None] = {}
        launch = self.bsession.launcher()
        first: tuple[int, CudaError] | None = None
        for index, (handle, gx, gy, gz, bx, by, bz, shared, stream, params) in enumerate(
            launches
        ):
            try:
                target = targets.get(handle)
                if target is None:
                    target = targets[handle] = self._launch_target(call, handle)
                fn_obj, need, name = target
                if len(params) < need:
                    raise _too_few_params(call, handle, need, len(params), name)
                if stream in streams:
                    obj = streams[stream]
                else:
                    obj = streams[stream] = self._stream(call, stream)
                launch(fn_obj, gx, gy, gz, bx, by, bz, shared, obj, params)
            except CudaError as e:
                if first is None:
                    first = (index, e)
        if first is not None:
            index, error = first
            raise CudaError(
                error.code, f"launch {index + 1} of {count} in a batch: {error.message}"
            )

    # -- streams and events -----------------------------------------------------------------
    def _stream(self, call: str, handle: int) -> object | None:
        if handle == STREAM_LEGACY:
            return None
        if handle == STREAM_PER_THREAD:
            return PER_THREAD_STREAM
        return self.handles.get(call, HandleKind.STREAM, handle, StreamRecord).obj

    def stream_create(self, flags: int, priority: int = 0) -> int:
        call = "cuStreamCreate"
        ctx = self.current(call)
        limit = self.manager.limits.max_streams
        if limit is not None and self.handles.count(HandleKind.STREAM) >= limit:
            raise object_limit_error(call, "streams", limit, "--max-streams")
        obj = self.bsession.stream_create(flags, priority)
        record = self.handles.add(
            HandleKind.STREAM, StreamRecord, ctx=ctx.handle, obj=obj, flags=flags, priority=priority
        )
        return record.handle

    def stream_destroy(self, handle: int) -> None:
        call = "cuStreamDestroy"
        self.require_init(call)
        record = self.handles.get(call, HandleKind.STREAM, handle, StreamRecord)
        self.bsession.stream_destroy(record.obj)
        self.handles.remove(handle)

    def stream_synchronize(self, handle: int) -> None:
        call = "cuStreamSynchronize"
        self.current(call)
        self.bsession.stream_synchronize(self._stream(call, handle))

    def stream_query(self, handle: int) -> bool:
        call = "cuStreamQuery"
        self.current(call)
        return self.bsession.stream_query(self._stream(call, handle))

    def stream_wait_event(self, stream: int, event: int, flags: int) -> None:
        call = "cuStreamWaitEvent"
        self.current(call)
        obj = self._stream(call, stream)
        self.bsession.stream_wait_event(obj, self._event(call, event).obj, flags)

    def _event(self, call: str, handle: int) -> EventRecord:
        return self.handles.get(call, HandleKind.EVENT, handle, EventRecord)

    def event_create(self, flags: int) -> int:
        ctx = self.current("cuEventCreate")
        limit = self.manager.limits.max_events
        if limit is not None and self.handles.count(HandleKind.EVENT) >= limit:
            raise object_limit_error("cuEventCreate", "events", limit, "--max-events")
        obj = self.bsession.event_create(flags)
        return self.handles.add(
            HandleKind.EVENT, EventRecord, ctx=ctx.handle, obj=obj, flags=flags
        ).handle

    def event_destroy(self, handle: int) -> None:
        call = "cuEventDestroy"
        self.require_init(call)
        self.bsession.event_destroy(self._event(call, handle).obj)
        self.handles.remove(handle)

    def event_record(self, event: int, stream: int) -> None:
        call = "cuEventRecord"
        self.current(call)
        record = self._event(call, event)
        self.bsession.event_record(record.obj, self._stream(call, stream))

    def event_synchronize(self, handle: int) -> None:
        call = "cuEventSynchronize"
        self.require_init(call)
        self.bsession.event_synchronize(self._event(call, handle).obj)

    def event_query(self, handle: int) -> bool:
        call = "cuEventQuery"
        self.require_init(call)
        return self.bsession.event_query(self._event(call, handle).obj)

    def event_elapsed_time(self, start: int, end: int) -> float:
        call = "cuEventElapsedTime"
        self.require_init(call)
        return self.bsession.event_elapsed_time(
            self._event(call, start).obj, self._event(call, end).obj
        )

    # -- occupancy --------------------------------------------------------------------------
    def occupancy_max_active_blocks(
        self, handle: int, block_size: int, smem: int, flags: int
    ) -> int:
        call = "cuOccupancyMaxActiveBlocksPerMultiprocessor"
        self.current(call)
        fn = self.function(call, handle)
        return self.bsession.occupancy_max_active_blocks(fn.obj, block_size, smem, flags)

    def occupancy_max_potential_block_size(
        self, handle: int, smem: int, block_size_limit: int, flags: int
    ) -> tuple[int, int]:
        call = "cuOccupancyMaxPotentialBlockSize"
        self.current(call)
        fn = self.function(call, handle)
        return self.bsession.occupancy_max_potential_block_size(
            fn.obj, smem, block_size_limit, flags
        )

    # -- runtime API support ----------------------------------------------------------------
    def device_properties(
        self, dev: int, attributes: Sequence[int]
    ) -> tuple[str, bytes, int, list[tuple[int, int]]]:
        """cudaGetDeviceProperties in one step: name, UUID, total memory and, per attribute,
        (CUresult, value); an attribute the backend does not know answers its own error."""
        dev = self.device("cudaGetDeviceProperties", dev)
        values: list[tuple[int, int]] = []
        for attrib in attributes:
            try:
                values.append((0, self.backend.device_attribute(attrib, dev)))  # CUDA_SUCCESS
            except CudaError as e:
                values.append((e.code, 0))
        backend = self.backend
        return (
            backend.device_name(dev),
            bytes(backend.device_uuid(dev)),
            backend.device_total_mem(dev),
            values,
        )

    def _pitched(self, call: str, ptr: int, pitch: int, width: int, height: int) -> None:
        """Check a pitched 2D range: width within the pitch, every row owned by the session."""
        if width > pitch and height > 1:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: width {width} is larger than pitch {pitch}"
            )
        if width and height:
            self.memory.span(call, ptr, pitch * (height - 1) + width)

    def memcpy_2d_htod(
        self, dst: int, dpitch: int, rows: memoryview, width: int, height: int, stream: int
    ) -> None:
        """Rows packed on the host (row r at r * width) to device rows dpitch bytes apart."""
        call = "cudaMemcpy2D (host to device)"
        self.current(call)
        obj = self._stream(call, stream)
        if len(rows) != width * height:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {len(rows)} bytes sent for {height} rows of {width} bytes",
            )
        self._pitched(call, dst, dpitch, width, height)
        if not (width and height):
            return
        if dpitch == width:
            self.bsession.memcpy_htod(dst, rows, obj)
            return
        for r in range(height):
            self.bsession.memcpy_htod(dst + r * dpitch, rows[r * width : (r + 1) * width], obj)

    def memcpy_2d_dtoh(self, src: int, spitch: int, width: int, height: int, stream: int) -> bytes:
        """Device rows spitch bytes apart, returned packed (row r at r * width)."""
        call = "cudaMemcpy2D (device to host)"
        self.current(call)
        obj = self._stream(call, stream)
        self._pitched(call, src, spitch, width, height)
        if not (width and height):
            return b""
        if spitch == width:
            return bytes(self.bsession.memcpy_dtoh(src, width * height, obj))
        return b"".join(
            bytes(self.bsession.memcpy_dtoh(src + r * spitch, width, obj)) for r in range(height)
        )

    def memcpy_2d_dtod(
        self, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, stream: int
    ) -> None:
        call = "cudaMemcpy2D (device to device)"
        self.current(call)
        obj = self._stream(call, stream)
        self._pitched(call, src, spitch, width, height)
        self._pitched(call, dst, dpitch, width, height)
        for r in range(height if width else 0):
            self.bsession.memcpy_dtod(dst + r * dpitch, src + r * spitch, width, obj)

    def memset_2d(
        self, dst: int, pitch: int, value: int, width: int, height: int, stream: int
    ) -> None:
        call = "cudaMemset2D"
        self.current(call)
        obj = self._stream(call, stream)
        self._pitched(call, dst, pitch, width, height)
        for r in range(height if width else 0):
            self.bsession.memset(dst + r * pitch, value & 0xFF, 1, width, obj)

    # -- checkpoint/restart (cricket_server.checkpoints.sessions) ----------------------------------
    def context_stack(self) -> list[int]:
        """The context stack, bottom first."""
        return list(self._stack)

    def set_context_state(self, initialized: bool, stack: Sequence[int]) -> None:
        """Install a restored context stack; primary contexts are found from the records."""
        self.initialized = initialized
        self._primary = {
            r.dev: r.handle
            for r in self.handles.of_kind(HandleKind.CONTEXT)
            if isinstance(r, ContextRecord) and r.primary
        }
        self._stack = list(stack)
        self._backend_dev = None
        self._sync_device()

    def devices_in_use(self) -> list[int]:
        """Devices this session has contexts on."""
        return sorted(
            {r.dev for r in self.handles.of_kind(HandleKind.CONTEXT) if isinstance(r, ContextRecord)}
        )

    def on_device(self, dev: int) -> contextlib.AbstractContextManager[None]:
        """Run a body with the backend on `dev`, then back on the current context's device."""
        return self._on_device(dev)

    def synchronize_all(self) -> None:
        """cuCtxSynchronize on every device of the session (a checkpoint's consistent cut)."""
        for dev in self.devices_in_use():
            with self._on_device(dev):
                self.bsession.synchronize()

    # -- freeing ----------------------------------------------------------------------------
    def _free_made_in(self, ctx: ContextRecord) -> FreeSummary:
        """Free everything made in context `ctx` (its handle stays)."""
        summary = FreeSummary()
        try:
            with self._on_device(ctx.dev):
                self._free_records(list(self.handles.made_in(ctx.handle)), summary)
                for alloc in self.memory.made_in(ctx.handle):
                    summary.bytes += (
                        self._release(summary, "allocations", self.memory.free, "free", alloc.ptr)
                        or 0
                    )
        except Exception:  # the backend could not even switch devices
            log.exception("session %#x: freeing the resources of context %#x", self.id, ctx.handle)
            summary.errors += 1
        return summary

    def _free_records(self, records: list[Record], summary: FreeSummary) -> None:
        """Destroy handles in dependency order: events and streams, then modules and libraries."""
        for record in sorted(records, key=_free_order):
            if record.handle not in self.handles:
                continue  # went with its module or library
            if isinstance(record, EventRecord):
                self._release(summary, "events", self.bsession.event_destroy, record.obj)
                self.handles.remove(record.handle)
            elif isinstance(record, StreamRecord):
                self._release(summary, "streams", self.bsession.stream_destroy, record.obj)
                self.handles.remove(record.handle)
            elif isinstance(record, ModuleRecord):
                self._release(summary, "modules", self.bsession.module_unload, record.obj)
                self._forget_module(record)
            elif isinstance(record, LibraryRecord):
                self._release(summary, "libraries", self.bsession.library_unload, record.obj)
                self._forget_library(record)

    def _release(
        self, summary: FreeSummary, what: str, free: Callable[..., object], *args: object
    ) -> int | None:
        """Call `free(*args)`, counting it under `what`; log and count a failure, go on."""
        summary.add(what)
        try:
            freed = free(*args)
        except Exception:
            summary.errors += 1
            log.exception("session %#x: freeing one of its %s", self.id, what)
            return None
        return freed if isinstance(freed, int) else None

    def close(self, reason: str) -> FreeSummary | None:
        """Free everything the session owns; only the first call does anything."""
        with self.lock:
            if self.closed:
                return None
            self.closed = True
            summary = self._free_everything()
        self.manager.forget(self)
        log.info("session %#x end (%s): peer %s, freed %s", self.id, reason, self.peer, summary)
        return summary

    def _free_everything(self) -> FreeSummary:
        summary = FreeSummary()
        records = self.handles.records()
        self._free_records([r for r in records if not isinstance(r, ContextRecord)], summary)
        count, size, errors = self.memory.release_all()
        summary.add("allocations", count)
        summary.bytes += size
        summary.errors += errors
        contexts = [r for r in records if isinstance(r, ContextRecord)]
        summary.add("contexts", len(contexts))
        for ctx in contexts:
            self.handles.remove(ctx.handle)
        self._stack.clear()
        self._primary.clear()
        try:
            self.bsession.close()
        except Exception:
            summary.errors += 1
            log.exception("session %#x: closing its backend session", self.id)
        return summary


_FREE_ORDER = (EventRecord, StreamRecord, ModuleRecord, LibraryRecord)


def _free_order(record: Record) -> int:
    for i, kind in enumerate(_FREE_ORDER):
        if isinstance(record, kind):
            return i
    return len(_FREE_ORDER)


def _too_few_params(call: str, handle: int, need: int, got: int, name: str) -> CudaError:
    return CudaError(
        CUDA_ERROR_INVALID_VALUE,
        f"{call}: function {handle:#x} takes {need} bytes of parameters, got {got} "
        f"(kernel {name})",
    )
