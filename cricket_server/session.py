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

import itertools
import logging
import secrets
import threading
from collections.abc import Callable

from checkpoint.tokens import TokenDigest
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    Backend,
    BackendSession,
    CudaError,
)
from cricket_server.limits import ServerLimits, session_limit_error
from cricket_server.memory import AddressArena, DeviceHeap
from cricket_server.resources import (
    ContextRecord,
    EventRecord,
    HandleRegistry,
    LibraryRecord,
    ModuleRecord,
    Record,
    StreamRecord,
)
from cricket_server.session_arrays import ArrayRecord, SessionArrays
from cricket_server.session_checkpoint import SessionCheckpoint
from cricket_server.session_contexts import SessionContexts, check_ctx_flags
from cricket_server.session_core import (
    NO_CONTEXT,
    STREAM_LEGACY,
    STREAM_PER_THREAD,
    FreeSummary,
    HeapFactory,
    SessionCore,
)
from cricket_server.session_dev_resources import SessionDevResources
from cricket_server.session_device_facts import SessionDeviceFacts
from cricket_server.session_graph_access import SessionGraphAccess
from cricket_server.session_graph_batches import SessionGraphBatches
from cricket_server.session_graph_mem_ops import SessionGraphMemOps
from cricket_server.session_graph_nodes import SessionGraphNodes
from cricket_server.session_kernel_node_attrs import SessionKernelNodeAttrs
from cricket_server.session_library_modules import LibraryModuleRecord, SessionLibraryModules
from cricket_server.session_link import SessionLink
from cricket_server.session_memcalls import PITCH_ALIGNMENT, SessionMemoryCalls
from cricket_server.session_mempools import SessionMemPools
from cricket_server.session_mipmaps import SessionMipmaps
from cricket_server.session_modules import SessionModules
from cricket_server.session_peers import SessionPeers
from cricket_server.session_recapture import SessionRecapture
from cricket_server.session_runtime import SessionRuntime
from cricket_server.session_sm_groups import SessionSmGroups
from cricket_server.session_streams import SessionStreams
from cricket_server.session_tail import SessionTail
from cricket_server.session_tensor_maps import SessionTensorMaps
from cricket_server.session_vmm import SessionVmm

__all__ = [
    "NO_CONTEXT",
    "PITCH_ALIGNMENT",
    "PROTOCOL_VERSION",
    "STREAM_LEGACY",
    "STREAM_PER_THREAD",
    "FreeSummary",
    "HeapFactory",
    "Session",
    "SessionManager",
    "check_ctx_flags",
    "negotiate_version",
]

log = logging.getLogger("cricket_server.session")

PROTOCOL_VERSION = 2  # rpc_spec/cricket.x's CRICKET_PROTOCOL_VERSION (its header says what 2 adds)


def negotiate_version(client_version: int) -> int:
    """The protocol version both sides speak: min(client, ours); a client below 1 is refused."""
    if client_version < 1:
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED,
            f"HELLO: client protocol version {client_version} is not supported "
            f"(this server speaks 1..{PROTOCOL_VERSION})",
        )
    return min(client_version, PROTOCOL_VERSION)


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
        self,
        session_id: int,
        token_digest: TokenDigest,
        peer: str,
        client_name: str,
        resumable: bool = True,
    ) -> Session:
        """A session with a given id, waiting for the HELLO of a client with the token of
        `token_digest` (restore). The token itself is not known until then; no HELLO takes
        it while `resumable` is False (a restore sets it once everything is back)."""
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
            session.resumable = resumable
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


class Session(
    SessionDeviceFacts,
    SessionLibraryModules,
    SessionTail,
    SessionLink,
    SessionGraphBatches,
    SessionGraphAccess,
    SessionKernelNodeAttrs,
    SessionGraphMemOps,
    SessionRecapture,
    SessionGraphNodes,
    SessionPeers,
    SessionContexts,
    SessionMemPools,
    SessionVmm,
    SessionMemoryCalls,
    SessionModules,
    SessionStreams,
    SessionRuntime,
    SessionMipmaps,
    SessionSmGroups,
    SessionTensorMaps,
    SessionDevResources,
    SessionArrays,
    SessionCheckpoint,
    SessionCore,
):
    """The state of one client: contexts, handles, memory. See the module docstring; each
    domain's calls live in its mixin (`cricket_server.session_*`), freeing and closing here."""

    # -- freeing ----------------------------------------------------------------------------
    def _free_made_in(self, ctx: ContextRecord) -> FreeSummary:
        """Free everything made in context `ctx` (its handle stays)."""
        summary = FreeSummary()
        try:
            with self._on_device(ctx.dev):
                self._free_records(list(self.handles.made_in(ctx.handle)), summary)
                self._free_objects_made_in(ctx.handle, summary)
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
            elif isinstance(record, LibraryModuleRecord):  # the library's: it goes with it
                self._forget_module(record)
            elif isinstance(record, ModuleRecord):
                self._release(summary, "modules", self.bsession.module_unload, record.obj)
                self._forget_module(record)
            elif isinstance(record, LibraryRecord):
                self._release(summary, "libraries", self.bsession.library_unload, record.obj)
                self._forget_library(record)
            elif isinstance(record, ArrayRecord):
                self._release(summary, "arrays", self._free_array, record)
            else:  # graphs, graph nodes and execs: the backend's close frees what they hold
                self.handles.remove(record.handle)

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
        count, size, errors = self.free_vmm()
        summary.add("virtual memory objects", count)
        summary.bytes += size
        summary.errors += errors
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
