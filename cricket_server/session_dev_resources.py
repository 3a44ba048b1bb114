"""Device resources and green contexts of a session.

Resources are values: the client holds a CUdevResource's visible fields and the id the
session gave it; the session keeps the backend's resource under that id (the driver's struct
holds more than the visible fields) and takes only ids it gave, with the fields it gave. Only
SM resources are served (workqueue resources answer CUDA_ERROR_NOT_SUPPORTED).

A green context is a handle (kind `green_ctx`) with a context handle of its own, which
cuCtxFromGreenCtx returns: streams, memory and work made while it is current belong to it and
go when the green context is destroyed. cuGreenCtxRecordEvent records the event after the
current work of every stream of the green context (each stream's work joined on a private
stream of the green context); cuGreenCtxWaitEvent makes every stream of it wait for the event,
and streams made later too (a private event, recorded after all such waits, that each new
stream waits for). A checkpoint is refused while a green context lives: the SMs a driver
gives a green context are not chosen by the client, so a restore could not promise the same
partition (destroy green contexts before checkpointing).
"""

from __future__ import annotations

from dataclasses import dataclass

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.backends.dev_resources import (
    CUDA_ERROR_INVALID_RESOURCE_TYPE,
    RESOURCE_TYPE_SM,
    DevResource,
)
from cricket_server.resources import ContextRecord, EventRecord, Record, StreamRecord
from cricket_server.session_core import NO_CONTEXT, SessionCore
from rpc_spec import cricket_rpc as proto
from rpc_spec.handles import HandleKind

__all__ = ["GreenCtxRecord", "SessionDevResources", "MAX_RESOURCES"]

MAX_RESOURCES = 65536  # resources a session keeps; the oldest go first
WORKQUEUE_TYPES = (1000, 10000)  # CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG, _WORKQUEUE
STREAM_NON_BLOCKING = 0x1
EVENT_DISABLE_TIMING = 0x2
CUDA_ERROR_ILLEGAL_STATE = 401


@dataclass
class GreenCtxRecord(Record):
    obj: object
    dev: int
    context: int  # the context handle cuCtxFromGreenCtx gives
    join: object | None = None  # private stream: RecordEvent joins the streams' work on it
    gate: object | None = None  # private event: what WaitEvent made the green context wait for


def _check_type(call: str, rtype: int) -> None:
    if rtype == RESOURCE_TYPE_SM:
        return
    if rtype in WORKQUEUE_TYPES:
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED, f"{call}: workqueue resources are not served remotely"
        )
    raise CudaError(CUDA_ERROR_INVALID_RESOURCE_TYPE, f"{call}: resource type {rtype}")


class SessionDevResources(SessionCore):
    """cuDeviceGetDevResource, cuDevSmResourceSplitByCount, cuGreenCtx*, cuCtxFromGreenCtx,
    cuCtxGetDevResource, cuStreamGetGreenCtx."""

    # -- resources ----------------------------------------------------------------------------
    def _dev_resources(self) -> dict[int, DevResource]:
        table: dict[int, DevResource] | None = self.__dict__.get("_dev_resource_table")
        if table is None:
            table = self.__dict__["_dev_resource_table"] = {}
            self.__dict__["_dev_resource_ids"] = 0
        return table

    def _issue(self, res: DevResource) -> proto.dev_resource:
        table = self._dev_resources()
        self.__dict__["_dev_resource_ids"] += 1
        rid = self.__dict__["_dev_resource_ids"]
        table[rid] = res
        while len(table) > MAX_RESOURCES:
            del table[next(iter(table))]
        return proto.dev_resource(
            id=rid, type=res.type, sm_count=res.sm_count, min_partition=res.min_partition,
            alignment=res.alignment, flags=res.flags,
        )  # fmt: skip

    def _given_resource(self, call: str, w: proto.dev_resource) -> DevResource:
        res = self._dev_resources().get(w.id)
        if res is None or (res.type, res.sm_count) != (w.type, w.sm_count):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: the resource ({w.sm_count} SMs, type {w.type}) is not one this "
                "session was given (take resources from cuDeviceGetDevResource, "
                "cuCtxGetDevResource, cuGreenCtxGetDevResource or a split)",
            )
        return res

    def device_get_dev_resource(self, dev: int, rtype: int) -> proto.dev_resource:
        call = "cuDeviceGetDevResource"
        self.require_init(call)
        dev = self.device(call, dev)
        _check_type(call, rtype)
        with self._on_device(dev):
            return self._issue(self.bsession.dev_resource(dev))

    def sm_resource_split(
        self, wanted: int, w: proto.dev_resource, flags: int, min_count: int
    ) -> proto.sm_split:
        call = "cuDevSmResourceSplitByCount"
        self.require_init(call)
        res = self._given_resource(call, w)
        if wanted:  # never more groups than SMs: the driver's result array is this long
            wanted = min(wanted, max(res.sm_count, 1))
        groups, count, remainder = self.bsession.sm_split(res, wanted, flags, min_count)
        return proto.sm_split(
            groups=[self._issue(g) for g in groups], count=count, remainder=self._issue(remainder)
        )

    # -- green contexts -----------------------------------------------------------------------
    def green(self, call: str, handle: int) -> GreenCtxRecord:
        return self.handles.get(call, HandleKind.GREEN_CTX, handle, GreenCtxRecord)

    def green_ctx_create(self, resources: list[proto.dev_resource], dev: int, flags: int) -> int:
        call = "cuGreenCtxCreate"
        self.require_init(call)
        dev = self.device(call, dev)
        if not resources:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: a descriptor of no resources")
        backend_res = [self._given_resource(call, w) for w in resources]
        with self._on_device(dev):
            obj = self.bsession.green_ctx_create(backend_res, dev, flags)
        ctx = self.handles.add(
            HandleKind.CONTEXT, ContextRecord, ctx=NO_CONTEXT, dev=dev, flags=0, primary=False
        )
        ctx.ctx = ctx.handle
        return self.handles.add(
            HandleKind.GREEN_CTX, GreenCtxRecord, ctx=NO_CONTEXT, obj=obj, dev=dev,
            context=ctx.handle,
        ).handle  # fmt: skip

    def green_ctx_destroy(self, handle: int) -> None:
        call = "cuGreenCtxDestroy"
        self.require_init(call)
        green = self.green(call, handle)
        if green.context in self.handles:  # (cuCtxDestroy may have taken it already)
            ctx = self.handles.get(call, HandleKind.CONTEXT, green.context, ContextRecord)
            self._free_made_in(ctx)
        with self._on_device(green.dev):
            if green.join is not None:
                self.bsession.stream_destroy(green.join)
            if green.gate is not None:
                self.bsession.event_destroy(green.gate)
            self.bsession.green_ctx_destroy(green.obj)
        self._stack = [h for h in self._stack if h != green.context]
        self.handles.remove(green.context)
        self.handles.remove(handle)
        self._sync_device()

    def green_ctx_get_dev_resource(self, handle: int, rtype: int) -> proto.dev_resource:
        call = "cuGreenCtxGetDevResource"
        self.require_init(call)
        green = self.green(call, handle)
        _check_type(call, rtype)
        with self._on_device(green.dev):
            return self._issue(self.bsession.green_ctx_resource(green.obj))

    def ctx_from_green_ctx(self, handle: int) -> int:
        call = "cuCtxFromGreenCtx"
        self.require_init(call)
        return self.green(call, handle).context

    def _green_of(self, ctx: int) -> GreenCtxRecord | None:
        for record in self.handles.of_kind(HandleKind.GREEN_CTX):
            if isinstance(record, GreenCtxRecord) and record.context == ctx:
                return record
        return None

    def ctx_get_dev_resource(self, handle: int, rtype: int) -> proto.dev_resource:
        call = "cuCtxGetDevResource"
        ctx = self.current(call) if handle == NO_CONTEXT else self._ctx(call, handle)
        return self.context_resource(call, ctx, rtype)

    def context_resource(self, call: str, ctx: ContextRecord, rtype: int) -> proto.dev_resource:
        """The SM resource of context `ctx` (its green context's when it is one), issued."""
        _check_type(call, rtype)
        green = self._green_of(ctx.handle)
        with self._on_device(ctx.dev):
            if green is not None:
                return self._issue(self.bsession.green_ctx_resource(green.obj))
            return self._issue(self.bsession.dev_resource(ctx.dev))

    def _green_streams(self, green: GreenCtxRecord) -> list[StreamRecord]:
        return [r for r in self.handles.made_in(green.context) if isinstance(r, StreamRecord)]

    def green_ctx_event(self, handle: int, event: int, wait: bool) -> None:
        call = "cuGreenCtxWaitEvent" if wait else "cuGreenCtxRecordEvent"
        self.require_init(call)
        green = self.green(call, handle)
        ev = self.handles.get(call, HandleKind.EVENT, event, EventRecord)
        b = self.bsession
        with self._on_device(green.dev):
            if green.join is None:
                green.join = b.stream_create(STREAM_NON_BLOCKING, 0)
            if wait:
                if green.gate is None:
                    green.gate = b.event_create(EVENT_DISABLE_TIMING)
                b.stream_wait_event(green.join, ev.obj, 0)
                b.event_record(green.gate, green.join)
                for s in self._green_streams(green):
                    b.stream_wait_event(s.obj, ev.obj, 0)
                return
            for s in self._green_streams(green):
                step = b.event_create(EVENT_DISABLE_TIMING)
                try:
                    b.event_record(step, s.obj)
                    b.stream_wait_event(green.join, step, 0)
                finally:
                    b.event_destroy(step)
            b.event_record(ev.obj, green.join)

    def green_ctx_stream_create(self, handle: int, flags: int, priority: int) -> int:
        call = "cuGreenCtxStreamCreate"
        self.require_init(call)
        green = self.green(call, handle)
        if not flags & STREAM_NON_BLOCKING:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: flags must hold CU_STREAM_NON_BLOCKING"
            )
        with self._on_device(green.dev):
            obj = self.bsession.stream_create(flags, priority)
            if green.gate is not None:
                self.bsession.stream_wait_event(obj, green.gate, 0)
        return self.handles.add(
            HandleKind.STREAM, StreamRecord, ctx=green.context, obj=obj, flags=flags,
            priority=priority,
        ).handle  # fmt: skip

    def stream_get_green_ctx(self, stream: int) -> int:
        call = "cuStreamGetGreenCtx"
        if stream in (proto.STREAM_LEGACY, proto.STREAM_PER_THREAD):
            ctx = self.current(call).handle
        else:
            self.require_init(call)
            ctx = self.handles.get(call, HandleKind.STREAM, stream, StreamRecord).ctx
        green = self._green_of(ctx)
        return 0 if green is None else green.handle

    def refuse_green_checkpoint(self) -> None:
        """Raise when a green context lives (a checkpoint cannot restore one faithfully)."""
        for record in self.handles.of_kind(HandleKind.GREEN_CTX):
            raise CudaError(
                CUDA_ERROR_ILLEGAL_STATE,
                f"checkpoint: session {self.id:#x} holds green context {record.handle:#x}; the "
                "SMs the driver gave it cannot be promised again on restore, so destroy green "
                "contexts (cuGreenCtxDestroy) before checkpointing",
            )

