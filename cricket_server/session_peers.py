"""Several GPUs behind one server: peer queries, peer access between contexts and copies
between the memory of two devices, with CUDA's answers for one device (a device is never its
own peer)."""

from __future__ import annotations

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)
from cricket_server.resources import ContextRecord
from cricket_server.session_flags import SessionFlags
from cricket_server.settings import PEER_ACCESS

CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705


class SessionPeers(SessionFlags):
    """cuDeviceCanAccessPeer, cuDeviceGetP2PAttribute, cuCtxEnable/DisablePeerAccess,
    cuMemcpyPeer(Async)."""

    def device_can_access_peer(self, dev: int, peer: int) -> bool:
        call = "cuDeviceCanAccessPeer"
        dev, peer = self.device(call, dev), self.device(call, peer)
        return dev != peer and self.backend.can_access_peer(dev, peer)

    def device_p2p_attribute(self, attrib: int, src: int, dst: int) -> int:
        call = "cuDeviceGetP2PAttribute"
        src, dst = self.device(call, src), self.device(call, dst)
        if src == dst:
            raise CudaError(
                CUDA_ERROR_INVALID_DEVICE, f"{call}: source and destination are device {src}"
            )
        return self.backend.p2p_attribute(attrib, src, dst)

    def _peer_ctx(self, call: str, handle: int) -> ContextRecord:
        peer = self._ctx(call, handle)
        if not peer.active:
            raise CudaError(
                CUDA_ERROR_INVALID_CONTEXT,
                f"{call}: peer context {handle:#x} (primary context of device {peer.dev}) has "
                "been released",
            )
        return peer

    def ctx_enable_peer_access(self, handle: int, flags: int) -> None:
        call = "cuCtxEnablePeerAccess"
        ctx = self.current(call)
        if flags != 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: flags must be 0, got {flags}")
        peer = self._peer_ctx(call, handle)
        if peer.dev == ctx.dev:
            raise CudaError(
                CUDA_ERROR_INVALID_DEVICE,
                f"{call}: the peer context is on device {peer.dev}, the current context's own",
            )
        if not self.backend.can_access_peer(ctx.dev, peer.dev):
            raise CudaError(  # as CUDA answers when cuDeviceCanAccessPeer says 0
                CUDA_ERROR_INVALID_DEVICE,
                f"{call}: device {ctx.dev} cannot access device {peer.dev}",
            )
        if self.settings.has_peer(ctx.handle, peer.handle):
            raise CudaError(
                CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                f"{call}: access to context {handle:#x} is already enabled",
            )
        self.bsession.enable_peer_access(peer.dev)
        self.settings.add_peer(ctx.handle, peer.handle)

    def ctx_disable_peer_access(self, handle: int) -> None:
        call = "cuCtxDisablePeerAccess"
        ctx = self.current(call)
        peer = self._ctx(call, handle)
        if not self.settings.has_peer(ctx.handle, peer.handle):
            raise CudaError(
                CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
                f"{call}: access to context {handle:#x} was not enabled",
            )
        self.bsession.disable_peer_access(peer.dev)
        self.settings.remove_peer(ctx.handle, peer.handle)

    def memcpy_peer(
        self, dst: int, dst_ctx: int, src: int, src_ctx: int, size: int, stream: int | None
    ) -> None:
        call = "cuMemcpyPeer" if stream is None else "cuMemcpyPeerAsync"
        self.current(call)
        dst_rec, src_rec = self._peer_ctx(call, dst_ctx), self._peer_ctx(call, src_ctx)
        obj = self._stream(call, stream or 0)
        if not size:
            return
        for what, ptr, rec in (("destination", dst, dst_rec), ("source", src, src_rec)):
            span = self.memory.span(f"{call}: {what}", ptr, size)
            if span.dev != rec.dev:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: the {what} {ptr:#x} is memory of device {span.dev}, not of "
                    f"device {rec.dev} (context {rec.handle:#x})",
                )
        self.bsession.memcpy_peer(dst, dst_rec.dev, src, src_rec.dev, size, obj)

    def primary_ctx_reset(self, dev: int) -> None:
        """Also forget what was set on the primary context: its cache configuration and the
        peer access it had enabled (a reset context starts as a fresh one)."""
        super().primary_ctx_reset(dev)
        ctx = self._primary_record("cuDevicePrimaryCtxReset", dev)
        live = self.handles.__contains__
        for handle, what, value in self.settings.items(live):
            if handle != ctx.handle:
                continue
            if what == PEER_ACCESS:
                peer = self._ctx("cuDevicePrimaryCtxReset", value)
                with self._on_device(ctx.dev):
                    self.bsession.disable_peer_access(peer.dev)
                self.settings.remove_peer(handle, value)
        self.settings.forget(ctx.handle)

    def peer_access_of(self) -> list[tuple[int, int]]:
        """(context, peer context) pairs with access enabled (checkpoints)."""
        live = self.handles.__contains__
        return [(h, v) for h, what, v in self.settings.items(live) if what == PEER_ACCESS]
