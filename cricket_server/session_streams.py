"""The stream and event calls of a session."""

from __future__ import annotations

from cricket_server.limits import object_limit_error
from cricket_server.resources import EventRecord, HandleKind, StreamRecord
from cricket_server.session_core import SessionCore


class SessionStreams(SessionCore):
    """cuStream*, cuEvent*."""

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
