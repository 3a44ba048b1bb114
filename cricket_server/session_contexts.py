"""The context calls of a session: primary contexts, the context stack, per-context settings.

CUDA's semantics: a primary context per device (retained, released, reset), contexts made
with cuCtxCreate pushed on the stack, and the backend switched to the device of the current
context whenever it changes.
"""

from __future__ import annotations

import logging

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)
from cricket_server.limits import object_limit_error
from cricket_server.resources import ContextRecord, HandleKind
from cricket_server.session_core import NO_CONTEXT, SessionCore

log = logging.getLogger("cricket_server.session")

CTX_SCHED_MASK = 0x07
CTX_FLAGS_MASK = 0xFF


def check_ctx_flags(call: str, flags: int) -> int:
    """CUctx_flags: one scheduling mode (0, SPIN 1, YIELD 2, BLOCKING_SYNC 4) plus flag bits."""
    if flags & ~CTX_FLAGS_MASK or (flags & CTX_SCHED_MASK) not in (0, 1, 2, 4):
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: invalid context flags {flags:#x}")
    return flags


class SessionContexts(SessionCore):
    """cuDevicePrimaryCtx*, cuCtx*."""

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
