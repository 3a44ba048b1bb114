"""CRICKET_V1 procedures 350-399: copies through shared memory and parallel data channels.

Mixed into `CricketService`; every procedure runs through its `_run` (counted for replay,
errors as CUresults). The state is the connection's (`state_of`), freed when it ends.

Shared-memory copies make the checks `Session.memcpy_htod`/`memcpy_dtoh` make, then go
straight between the segment and the device when the backend page-locked the segment
(`ServerSegment.registration`), else through the backend's `memcpy_htod`/`memcpy_dtoh`.
Either way a copy is done with the segment's bytes when its reply goes: the client refills
or reads that slot next.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_UNKNOWN,
    CudaError,
)
from cricket_server.session import STREAM_LEGACY, Session
from rpc_spec import cricket_rpc as proto

from .channels import ChannelError, ChannelListener, DataChannels
from .shm import ServerSegment

__all__ = ["ConnectionDataPaths", "DataPathProcedures", "state_of", "STATE_KEY"]

log = logging.getLogger("cricket_server.datapath")
STATE_KEY = "cricket.datapath"
MAX_TCP_PIECE = 256 << 20  # bytes one DATA_TCP_HTOD may make the server buffer


@dataclass
class ConnectionDataPaths:
    """The data paths one connection set up: its shared segment and its data channels."""

    segment: ServerSegment | None = None
    listener: ChannelListener | None = None
    channels: DataChannels | None = None
    staging: bytearray = field(default_factory=bytearray)  # received channel bytes, reused

    def accepted_segment(self, call: str) -> ServerSegment:
        if self.segment is None or not self.segment.accepted:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: no shared segment accepted on this connection"
            )
        return self.segment

    def ready_channels(self, call: str, count: int) -> DataChannels:
        if self.channels is None:
            if self.listener is None:
                raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: no data channels offered")
            try:
                self.channels = self.listener.wait()
            except ChannelError as e:
                self.drop_channels()
                raise CudaError(CUDA_ERROR_UNKNOWN, f"{call}: {e}") from None
        if len(self.channels) != count:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {count} data channels named, {len(self.channels)} connected",
            )
        return self.channels

    def shared_span(self, call: str, offset: int, size: int) -> memoryview:
        """Bytes of the accepted segment; a span outside it is CUDA_ERROR_INVALID_VALUE."""
        try:
            return self.accepted_segment(call).span(call, offset, size)
        except IndexError as e:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, str(e)) from None

    def buffer(self, size: int) -> memoryview:
        if len(self.staging) < size:
            self.staging = bytearray(size)
        return memoryview(self.staging)[:size]

    def drop_segment(self) -> None:
        if self.segment is not None:
            self.segment.close()
            self.segment = None

    def drop_channels(self) -> None:
        if self.channels is not None:
            self.channels.close()
            self.channels = None
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    def close(self) -> None:
        self.drop_segment()
        self.drop_channels()
        self.staging = bytearray()


def state_of(ctx: Any) -> ConnectionDataPaths:
    """The connection's data paths (made on first use, closed with the connection)."""
    state = ctx.connection.state.get(STATE_KEY)
    if state is None:
        state = ctx.connection.state[STATE_KEY] = ConnectionDataPaths()
        ctx.connection.add_close_callback(state.close)
    return state


def _prepare(
    s: Session, paths: ConnectionDataPaths, call: str, ptr: int, size: int, stream: int | None
) -> tuple[object | None, object | None]:
    """(backend stream, registration token or None) of a shared-memory copy, after the
    checks `Session.memcpy_htod`/`memcpy_dtoh` make: a current context, a stream handle
    of the session, `size` device bytes at `ptr` that it owns. The segment is page-locked
    on its first copy (a backend that cannot: None, the usual copy)."""
    s.current(call)
    obj = s._stream(call, stream or STREAM_LEGACY)
    s.memory.span(call, ptr, size)
    return obj, paths.accepted_segment(call).registration(s.bsession)


def _channel_failure(paths: ConnectionDataPaths, call: str, exc: OSError) -> CudaError:
    paths.drop_channels()
    log.warning("%s: data channels dropped: %s", call, exc)
    return CudaError(CUDA_ERROR_UNKNOWN, f"{call}: data channel failed: {exc}")


class DataPathProcedures:
    """The DATA_* procedures; needs `CricketService._run`/`_status`/`_result`."""

    _run: Any
    _status: Any
    _result: Any

    # -- shared memory ---------------------------------------------------------------------
    def DATA_SHM_OFFER(self, ctx: Any, size: int) -> proto.shm_offer_result:
        paths = state_of(ctx)

        def offer(s: Session) -> proto.shm_offer:
            paths.drop_segment()
            try:
                paths.segment = ServerSegment(size)
            except ValueError as e:
                raise CudaError(CUDA_ERROR_INVALID_VALUE, f"shared memory offer: {e}") from None
            except OSError as e:
                raise CudaError(CUDA_ERROR_NOT_SUPPORTED, f"shared memory offer: {e}") from None
            return proto.shm_offer(name=paths.segment.name, size=size)

        return self._result(proto.shm_offer_result, ctx, "shared memory offer", offer)

    def DATA_SHM_ACCEPT(self, ctx: Any, proof: Any) -> int:
        paths = state_of(ctx)

        def accept(s: Session) -> None:
            if paths.segment is None:
                raise CudaError(CUDA_ERROR_INVALID_VALUE, "shared memory accept: nothing offered")
            if not paths.segment.accept(bytes(proof)):
                paths.drop_segment()
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    "shared memory accept: the proof does not match the segment (another host?)",
                )

        return self._status(ctx, "shared memory accept", accept)

    def DATA_SHM_HTOD(
        self, ctx: Any, dst: int, offset: int, size: int, stream: int, asynchronous: bool
    ) -> int:
        call = "cuMemcpyHtoDAsync" if asynchronous else "cuMemcpyHtoD"
        paths = state_of(ctx)

        def copy(s: Session) -> None:
            data = paths.shared_span(call, offset, size)
            if not size:  # only the call's checks, as Session.memcpy_htod makes them
                s.memcpy_htod(dst, data, stream if asynchronous else None)
                return
            obj, token = _prepare(s, paths, call, dst, size, stream if asynchronous else None)
            if token is None:
                s.bsession.memcpy_htod(dst, data, obj)
            else:
                s.bsession.memcpy_htod_registered(dst, token, offset, data, obj)

        return self._status(ctx, call, copy)

    def DATA_SHM_DTOH(
        self, ctx: Any, src: int, offset: int, size: int, stream: int, asynchronous: bool
    ) -> int:
        call = "cuMemcpyDtoHAsync" if asynchronous else "cuMemcpyDtoH"
        paths = state_of(ctx)

        def copy(s: Session) -> None:
            target = paths.shared_span(call, offset, size)
            if not size:
                s.memcpy_dtoh(src, size, stream if asynchronous else None)
                return
            obj, token = _prepare(s, paths, call, src, size, stream if asynchronous else None)
            if token is None:
                target[:] = s.bsession.memcpy_dtoh(src, size, obj)
            else:
                s.bsession.memcpy_dtoh_registered(src, token, offset, target, obj)

        return self._status(ctx, call, copy)

    # -- parallel TCP data channels --------------------------------------------------------
    def DATA_TCP_OFFER(self, ctx: Any, host: str, count: int) -> proto.channel_offer_result:
        paths = state_of(ctx)

        def offer(s: Session) -> proto.channel_offer:
            if ctx.connection.state.get("tls") is not None:
                raise CudaError(
                    CUDA_ERROR_NOT_SUPPORTED,
                    "data channel offer: this connection is TLS-protected and data channels "
                    "are not; copies stay inside the encrypted RPC",
                )
            paths.drop_channels()
            try:
                paths.listener = ChannelListener(host, count)
            except ValueError as e:
                raise CudaError(CUDA_ERROR_INVALID_VALUE, f"data channel offer: {e}") from None
            except OSError as e:
                raise CudaError(
                    CUDA_ERROR_NOT_SUPPORTED, f"data channel offer: cannot listen on {host}: {e}"
                ) from None
            return proto.channel_offer(port=paths.listener.port, secret=paths.listener.secret)

        return self._result(proto.channel_offer_result, ctx, "data channel offer", offer)

    def DATA_TCP_HTOD(
        self, ctx: Any, dst: int, size: int, count: int, stream: int, asynchronous: bool
    ) -> int:
        call = "cuMemcpyHtoDAsync" if asynchronous else "cuMemcpyHtoD"
        paths = state_of(ctx)

        def copy(s: Session) -> None:
            if size > MAX_TCP_PIECE:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: {size} bytes in one data-channel transfer, at most {MAX_TCP_PIECE}",
                )
            channels = paths.ready_channels(call, count)
            data = paths.buffer(size)
            try:
                channels.receive_into(data)  # first: the bytes are on their way whatever follows
            except OSError as e:
                raise _channel_failure(paths, call, e) from None
            s.memcpy_htod(dst, data, stream if asynchronous else None)

        return self._status(ctx, call, copy)

    def DATA_TCP_DTOH(
        self, ctx: Any, src: int, size: int, count: int, stream: int, asynchronous: bool
    ) -> int:
        call = "cuMemcpyDtoHAsync" if asynchronous else "cuMemcpyDtoH"
        paths = state_of(ctx)

        def copy(s: Session) -> None:
            channels = paths.ready_channels(call, count)
            try:
                data = s.memcpy_dtoh(src, size, stream if asynchronous else None)
            except BaseException:
                try:
                    channels.send(None, size)  # the client waits for each part: say "none"
                except OSError as e:
                    raise _channel_failure(paths, call, e) from None
                raise
            try:
                channels.send(memoryview(data).cast("B"), size)
            except OSError as e:
                raise _channel_failure(paths, call, e) from None

        return self._status(ctx, call, copy)
