"""`DataPaths`: one connection's copy routing (D8), set up lazily and dropped on failure.

`htod(dst, data, stream)` and `dtoh(view, src, stream)` move a copy through the path
`select.choose` picks and return its CUresult, or None when the copy should travel inside
the RPC (the driver's usual path). A path whose setup or transfer fails is switched off for
this connection and the copy goes again by the next path: copies are idempotent.
Shared memory: a ring of `SHM_SLOTS` slots of `SHM_PIECE` bytes, calls pipelined so that
the client fills (HtoD) or drains (DtoH) one slot while the server copies another.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import TYPE_CHECKING, Any

from .channels import ClientChannels
from .memcopy import copy
from .routes import source_address
from .select import Capabilities, Limits, Mode, Path, choose, mode_from_env
from .shm import ClientSegment

if TYPE_CHECKING:
    from ..connection import Connection

__all__ = ["DataPaths", "CHANNELS_ENV", "SHM_PIECE", "SHM_SLOTS", "TCP_PIECE", "TCP_WINDOW"]

log = logging.getLogger("cricket_client.datapath")

CHANNELS_ENV = "CRICKET_DATA_CHANNELS"
SHM_PIECE = 8 << 20
SHM_SLOTS = 8
TCP_PIECE = 16 << 20
TCP_WINDOW = 3
DEFAULT_CHANNELS = 4


class DataPaths:
    """See the module docstring."""

    def __init__(self, conn: Connection, mode: Mode | None = None) -> None:
        self.conn = conn
        self.mode = mode_from_env() if mode is None else mode
        self.limits = Limits()
        self.channel_count = int(os.environ.get(CHANNELS_ENV, DEFAULT_CHANNELS))
        self.lock = threading.Lock()  # one bulk copy at a time uses the ring and channels
        self._transport: object = conn._rpc
        self._off: set[Path] = set()
        self._segment: ClientSegment | None = None
        self._channels: ClientChannels | None = None
        self.last_path: Path | None = None  # the path of the latest copy (tests, benchmarks)

    # -- what is possible ------------------------------------------------------------------
    def capabilities(self) -> Capabilities:
        remote_tcp = not self.conn.address.startswith("unix:")
        # Data channels are plain TCP: on a TLS-protected connection the copies stay inside
        # the encrypted RPC (or in shared memory, which never leaves the host).
        if self.conn.security.tls is not None:
            remote_tcp = False
        return Capabilities(
            shm=Path.SHM not in self._off,
            tcp=remote_tcp and Path.TCP not in self._off,
            rdma=False,  # no verbs transfer engine yet: routes.rdma_usable decides once one exists
        )

    def _usable(self) -> bool:
        """Bulk paths move raw bytes the replay log cannot hold: off while it logs."""
        if self.conn._rpc is not self._transport:  # a reconnect: the old server's setup is gone
            self._drop(Path.SHM)
            self._drop(Path.TCP)
            self._off.clear()
            self._transport = self.conn._rpc
        return self.mode is not Mode.RPC and not self.conn.replay_log.enabled

    def pick(self, size: int) -> Path:
        return choose(size, self.capabilities(), self.mode, self.limits)

    # -- copies ----------------------------------------------------------------------------
    def htod(self, dst: int, data: Any, stream: int | None) -> int | None:
        return self._route(len(data), lambda path: self._send(path, dst, memoryview(data), stream))

    def dtoh(self, view: memoryview, src: int, stream: int | None) -> int | None:
        return self._route(len(view), lambda path: self._receive(path, view, src, stream))

    def _route(self, size: int, move: Any) -> int | None:
        if size:
            with self.lock:
                while self._usable() and (path := self.pick(size)) is not Path.RPC:
                    transport = self.conn._rpc
                    try:
                        self._ready(path)
                        err = move(path)
                    except OSError as e:
                        log.warning(
                            "copy of %d bytes over %s failed (%s): path switched off",
                            size,
                            path.value,
                            e,
                        )
                        self._drop(path)
                        self._off.add(path)
                        continue
                    if self.conn._rpc is not transport:
                        continue  # reconnected meanwhile: set up again on the new server
                    self.last_path = path
                    return int(err)
        self.last_path = Path.RPC
        return None

    def _ready(self, path: Path) -> None:
        if path is Path.SHM and self._segment is None:
            self._segment = self._attach_segment()
        elif path is Path.TCP and self._channels is None:
            self._channels = self._open_channels()

    def _attach_segment(self) -> ClientSegment:
        size = SHM_PIECE * SHM_SLOTS
        err, reply = self.conn.sync("DATA_SHM_OFFER", size)
        if err:
            raise OSError(f"the server offers no shared memory ({err})")
        segment = ClientSegment(reply.value.name, int(reply.value.size))  # OSError: not here
        err, _ = self.conn.sync("DATA_SHM_ACCEPT", segment.proof)
        if err:
            segment.close()
            raise OSError(f"the server refused the shared-memory proof ({err})")
        return segment

    def _open_channels(self) -> ClientChannels:
        from ..connection import parse_address

        address = parse_address(self.conn.address)
        if isinstance(address, str):
            raise OSError(f"{address}: data channels need a TCP server address")
        try:  # the server listens on an address, it resolves no names
            host = str(socket.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)[0][4][0])
        except OSError as e:
            raise OSError(f"{address[0]}: cannot resolve for data channels: {e}") from None
        err, reply = self.conn.sync("DATA_TCP_OFFER", host, self.channel_count)
        if err:
            raise OSError(f"the server offers no data channels ({err})")
        offer = reply.value
        return ClientChannels(
            host, int(offer.port), bytes(offer.secret), self.channel_count, source_address(host)
        )

    def _send(self, path: Path, dst: int, data: memoryview, stream: int | None) -> int:
        if path is Path.SHM:
            return self._shm("DATA_SHM_HTOD", dst, data, stream, htod=True)
        return self._tcp_htod(dst, data, stream)

    def _receive(self, path: Path, view: memoryview, src: int, stream: int | None) -> int:
        if path is Path.SHM:
            return self._shm("DATA_SHM_DTOH", src, view, stream, htod=False)
        return self._tcp_dtoh(view, src, stream)

    def _shm(self, proc: str, dev: int, host: memoryview, stream: int | None, *, htod: bool) -> int:
        assert self._segment is not None
        ring = self._segment.view
        n = len(host)
        if n <= SHM_PIECE:  # one slot: the direct synchronous path, no window to keep
            if htod:
                copy(ring[:n], host)
            err = self.conn.call(proc, dev, 0, n, stream or 0, stream is not None)[0]
            if not err and not htod:
                copy(host, ring[:n])
            return int(err)
        pieces = [(off, min(SHM_PIECE, n - off)) for off in range(0, n, SHM_PIECE)]

        def slot(i: int) -> tuple[int, int, int]:
            off, m = pieces[i]
            return off, (i % SHM_SLOTS) * SHM_PIECE, m

        def fill(i: int) -> None:
            off, at, m = slot(i)
            copy(ring[at : at + m], host[off : off + m])

        def drain(i: int) -> None:
            off, at, m = slot(i)
            copy(host[off : off + m], ring[at : at + m])

        calls = [
            (dev + off, slot(i)[1], m, stream or 0, stream is not None)
            for i, (off, m) in enumerate(pieces)
        ]
        return self.conn.sync_window(
            proc,
            calls,
            window=SHM_SLOTS,
            before=fill if htod else None,
            after=None if htod else drain,
        )

    def _tcp_htod(self, dst: int, data: memoryview, stream: int | None) -> int:
        return self._tcp("DATA_TCP_HTOD", dst, data, stream, htod=True)

    def _tcp_dtoh(self, view: memoryview, src: int, stream: int | None) -> int:
        return self._tcp("DATA_TCP_DTOH", src, view, stream, htod=False)

    def _tcp(self, proc: str, dev: int, host: memoryview, stream: int | None, *, htod: bool) -> int:
        """Pieces of TCP_PIECE bytes, TCP_WINDOW calls in flight: the channels carry the next
        piece while the server copies one to or from the device."""
        channels = self._channels
        assert channels is not None
        n, k = len(host), len(channels)
        pieces = [(off, min(TCP_PIECE, n - off)) for off in range(0, n, TCP_PIECE)]
        futures: list[Any] = []

        def start(i: int) -> None:
            off, m = pieces[i]
            part = host[off : off + m]
            futures.extend(channels.start_send(part) if htod else channels.start_receive(part))

        calls = [(dev + off, m, k, stream or 0, stream is not None) for off, m in pieces]
        err = self.conn.sync_window(proc, calls, window=TCP_WINDOW, before=start)
        self._settle(futures, err)
        return err

    def _settle(self, futures: list[Any], err: int) -> None:
        """Wait for a transfer's parts. After a failed call the channels may be out of step
        (the server may not have touched them): they are closed, the next copy opens anew.
        A part that failed here (a broken channel) is an OSError: the path is switched off."""
        if err:
            self._drop(Path.TCP)
        failures = [e for f in futures if (e := f.exception()) is not None]
        if failures:
            self._drop(Path.TCP)
            raise OSError(f"data channel transfer failed: {failures[0]}")

    # -- lifetime --------------------------------------------------------------------------
    def _drop(self, path: Path) -> None:
        if path is Path.SHM and self._segment is not None:
            self._segment.close()
            self._segment = None
        if path is Path.TCP and self._channels is not None:
            self._channels.close()
            self._channels = None

    def close(self) -> None:
        self._drop(Path.SHM)
        self._drop(Path.TCP)
