"""Handle tables: the 64-bit IDs a session hands to its client, and what they stand for.

A handle's top byte names its kind, the 56 bits below are a process-wide counter, so a value is
never issued twice within a server process and a handle of one kind never passes for another:

    | bits 63..56 | bits 55..0                     |
    | kind tag    | counter (1, 2, ... never reused) |

Stream handles 0 (legacy default stream) and 2 (per-thread default stream) are reserved by the
protocol; every issued handle has a non-zero kind tag, so neither can be issued.

`HandleRegistry` is process-wide (issues values, remembers which session owns each live one, for
log lines); `HandleTable` is one session's view: it resolves a handle to its record or raises
`CudaError(CUDA_ERROR_INVALID_HANDLE)` (`CUDA_ERROR_INVALID_CONTEXT` for contexts) and logs the
offending value with the session and, when another session owns it, that session (the client's
message says only that the handle is not owned by this session).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_HANDLE,
    CudaError,
    ParamInfo,
)
from rpc_spec.handles import COUNTER_MASK, KIND_SHIFT, HandleKind, kind_of  # the protocol's tags

log = logging.getLogger("cricket_server.resources")


# -- records: what a handle stands for --------------------------------------------------------


@dataclass
class Record:
    """Base of every handle's record; `ctx` is the context handle it was made in."""

    handle: int
    ctx: int


@dataclass
class ContextRecord(Record):
    dev: int
    flags: int
    primary: bool
    retain_count: int = 0  # primary contexts only

    @property
    def active(self) -> bool:
        return not self.primary or self.retain_count > 0


@dataclass
class ModuleRecord(Record):
    obj: object
    image: bytes  # kept for checkpoints
    jit_options: dict[int, int]
    globals: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (addr, size)
    functions: dict[str, int] = field(default_factory=dict)  # name -> function handle


@dataclass
class LibraryRecord(Record):
    obj: object
    image: bytes
    jit_options: dict[int, int]
    library_options: dict[int, int]
    kernels: dict[str, int] = field(default_factory=dict)  # name -> kernel handle


@dataclass
class KernelRecord(Record):
    obj: object
    library: int
    name: str
    function: int | None = None  # the function handle cuKernelGetFunction gave


@dataclass
class FunctionRecord(Record):
    obj: object
    name: str
    parent: int  # module or kernel handle
    params: tuple[ParamInfo, ...] | None = None  # cached parameter layout

    def params_size(self) -> int:
        """Bytes a launch's argument buffer must hold: the end of the last parameter."""
        assert self.params is not None
        return max((p.offset + p.size for p in self.params), default=0)


@dataclass
class StreamRecord(Record):
    obj: object
    flags: int
    priority: int


@dataclass
class EventRecord(Record):
    obj: object
    flags: int


R = TypeVar("R", bound=Record)


# -- handle issue and lookup ------------------------------------------------------------------


class HandleRegistry:
    """Issues handle values process-wide and remembers the owning session of each live one."""

    def __init__(self) -> None:
        self._next = 1
        self._owners: dict[int, int] = {}
        self._lock = threading.Lock()

    def issue(self, kind: HandleKind, owner: int) -> int:
        with self._lock:
            handle = (int(kind) << KIND_SHIFT) | (self._next & COUNTER_MASK)
            self._next += 1
            self._owners[handle] = owner
            return handle

    def claim(self, handle: int, owner: int) -> None:
        """Register a handle issued before (restore); every later issue is above it."""
        with self._lock:
            if kind_of(handle) is None:
                raise CudaError(
                    CUDA_ERROR_INVALID_HANDLE, f"restore: {handle:#x} is not a handle of any kind"
                )
            other = self._owners.get(handle)
            if other is not None:
                raise CudaError(
                    CUDA_ERROR_INVALID_HANDLE,
                    f"restore: handle {handle:#x} is already live in session {other:#x}",
                )
            self._owners[handle] = owner
            self._next = max(self._next, (handle & COUNTER_MASK) + 1)

    def retire(self, handle: int) -> None:
        with self._lock:
            self._owners.pop(handle, None)

    def owner_of(self, handle: int) -> int | None:
        with self._lock:
            return self._owners.get(handle)


class HandleTable:
    """The handles one session owns."""

    def __init__(self, registry: HandleRegistry, session_id: int) -> None:
        self._registry = registry
        self._session_id = session_id
        self._records: dict[int, Record] = {}
        self._counts: dict[HandleKind, int] = dict.fromkeys(HandleKind, 0)
        self.removals = 0  # handles removed so far: a cache of handle lookups is valid while same
        # lookup(handle): the record or None, unchecked (a hot path that checks it itself)
        self.lookup: Callable[[int], Record | None] = self._records.get

    def add(self, kind: HandleKind, make: type[R], /, **fields: Any) -> R:
        """Issue a handle of `kind` and store `make(handle=..., **fields)` under it."""
        handle = self._registry.issue(kind, self._session_id)
        record = make(handle=handle, **fields)
        self._records[handle] = record
        self._counted(handle, 1)
        return record

    def add_with_handle(self, handle: int, make: type[R], /, **fields: Any) -> R:
        """Store `make(handle=handle, **fields)` under a handle value given (restore)."""
        self._registry.claim(handle, self._session_id)
        record = make(handle=handle, **fields)
        self._records[handle] = record
        self._counted(handle, 1)
        return record

    def get(self, call: str, kind: HandleKind, handle: int, expect: type[R]) -> R:
        """The record of `handle`, which must be a live `kind` handle of this session."""
        record = self._records.get(handle)
        if record is not None and kind_of(handle) is kind and isinstance(record, expect):
            return record
        raise self._refuse(call, kind, handle)

    def remove(self, handle: int) -> None:
        if self._records.pop(handle, None) is not None:
            self.removals += 1
            self._registry.retire(handle)
            self._counted(handle, -1)

    def count(self, kind: HandleKind) -> int:
        """Live handles of `kind` (what the per-session limits count)."""
        return self._counts[kind]

    def _counted(self, handle: int, delta: int) -> None:
        kind = kind_of(handle)
        if kind is not None:
            self._counts[kind] += delta

    def __contains__(self, handle: int) -> bool:
        return handle in self._records

    def of_kind(self, kind: HandleKind) -> list[Record]:
        return [r for h, r in self._records.items() if kind_of(h) is kind]

    def made_in(self, ctx: int) -> Iterator[Record]:
        """Every record tagged with context `ctx` (the context's own record excluded)."""
        return (r for r in list(self._records.values()) if r.ctx == ctx and r.handle != ctx)

    def records(self) -> list[Record]:
        return list(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    def _refuse(self, call: str, kind: HandleKind, handle: int) -> CudaError:
        code = (
            CUDA_ERROR_INVALID_CONTEXT if kind is HandleKind.CONTEXT else CUDA_ERROR_INVALID_HANDLE
        )
        actual = kind_of(handle)
        owner = self._registry.owner_of(handle)
        if owner is not None and owner != self._session_id:
            # The client hears only that it is not its own; the log names the owner.
            why = f"{kind.label} handle {handle:#x} is not owned by this session"
            log.warning(
                "session %#x: %s: %s handle %#x belongs to session %#x",
                self._session_id, call, kind.label, handle, owner,
            )
            return CudaError(code, f"{call}: {why}")
        elif actual is not None and actual is not kind:
            article = "an" if actual.label[0] in "aeiou" else "a"
            why = (
                f"handle {handle:#x} is {article} {actual.label} handle, not a {kind.label} handle"
            )
        else:
            why = f"{kind.label} handle {handle:#x} is unknown or already destroyed"
        message = f"{call}: {why}"
        log.warning("session %#x: %s", self._session_id, message)
        return CudaError(code, message)
