"""The core every domain of a `Session` builds on: its state, cuInit and devices, the current
context, and the stream handles every call that takes a stream resolves.

`SessionCore` holds what one client owns (see `cricket_server.session`); the domain mixins
(`session_contexts`, `session_memcalls`, `session_modules`, `session_streams`,
`session_runtime`, `session_checkpoint`) add the calls, and `cricket_server.session.Session`
puts them together with freeing and closing.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from checkpoint.tokens import TokenDigest
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_INITIALIZED,
    PER_THREAD_STREAM,
    BackendSession,
    CudaError,
)
from cricket_server.memory import DeviceHeap
from cricket_server.remote_attributes import remote_attribute
from cricket_server.resources import (
    ContextRecord,
    HandleKind,
    HandleTable,
    ModuleRecord,
    StreamRecord,
)
from cricket_server.session_memory import SessionMemory, Span

if TYPE_CHECKING:
    from cricket_server.session import SessionManager

log = logging.getLogger("cricket_server.session")

STREAM_LEGACY = 0
STREAM_PER_THREAD = 2
NO_CONTEXT = 0

HeapFactory = Callable[[int, BackendSession], DeviceHeap]


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


class SessionCore:
    """The state of one client and the lookups every call needs. See the module docstring."""

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
        # wait until every call received on that connection has run (ConnectionInfo)
        self.drain_connection: Callable[[float], bool] = lambda _timeout: False
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
        if not self.initialized:
            self.require_init(call)
        count = self.backend.device_count()
        if not 0 <= dev < count:
            raise CudaError(
                CUDA_ERROR_INVALID_DEVICE,
                f"{call}: device {dev} does not exist (the server has {count})",
            )
        return dev

    # -- the current context ----------------------------------------------------------------
    def _ctx(self, call: str, handle: int) -> ContextRecord:
        return self.handles.get(call, HandleKind.CONTEXT, handle, ContextRecord)

    def device_attribute(self, attrib: int, dev: int) -> int:
        """cuDeviceGetAttribute."""
        return remote_attribute(self.backend, attrib, self.device("cuDeviceGetAttribute", dev))

    def current(self, call: str) -> ContextRecord:
        """The current context, which must exist and be active."""
        stack = self._stack
        if stack and self.initialized:  # the common case, without a call per check
            # The stack holds context handles only: a live one's record is a ContextRecord.
            record = self.handles.lookup(stack[-1])
            if type(record) is ContextRecord and (not record.primary or record.retain_count):
                return record
        return self._current_checked(call)

    def _current_checked(self, call: str) -> ContextRecord:
        """`current`, each check raising its error."""
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

    def _stream(self, call: str, handle: int) -> object | None:
        if handle == STREAM_LEGACY:
            return None
        if handle == STREAM_PER_THREAD:
            return PER_THREAD_STREAM
        return self.handles.get(call, HandleKind.STREAM, handle, StreamRecord).obj

    def _global_spans(self) -> Iterator[Span]:
        for record in self.handles.of_kind(HandleKind.MODULE):
            assert isinstance(record, ModuleRecord)
            ctx = self.handles.get("find", HandleKind.CONTEXT, record.ctx, ContextRecord)
            for addr, size in record.globals.values():
                yield Span(addr, size, ctx.dev, record.ctx, 0)

    def _free_made_in(self, ctx: ContextRecord) -> FreeSummary:
        """Free everything made in context `ctx` (`Session` implements it)."""
        raise NotImplementedError
