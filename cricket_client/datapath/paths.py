"""`DataPaths`: one connection's copy routing (D8), set up lazily and dropped on failure.

`htod(dst, data, stream)` and `dtoh(view, src, stream)` move a copy through the path
`select.choose` picks and return its CUresult, or None when the copy should travel inside
the RPC (the driver's usual path). A path whose setup or transfer fails is switched off for
this connection and the copy goes again by the next path: copies are idempotent.
Shared memory: a ring of `SHM_SLOTS` slots of `SHM_PIECE` bytes, calls pipelined so that
the client fills (HtoD) or drains (DtoH) one slot while the server copies another.

Slot 0 serves the copies that wait for their reply (one slot each); slots 1.. are the ring
of `htod_early(dst, data)`, the cuMemcpyHtoD that returns early
(`cricket_client.early_copies`): the client copies the bytes into the next early slot and
sends DATA_SHM_HTOD without waiting for its reply (the server is done with the slot when it
answers, and answers at once: it is not `@pipelined`, so its reply is not held back for the
calls behind it); a slot is filled again only once that reply arrived. The replay log's ring of
early copies keeps a view of the slot (sent again inline by a resume whose restored session
lacks the copy), forgotten when the slot is reused: the last `SHM_SLOTS - 1` early copies
can be sent again. Copies of more than one slot use them all, after the early ones.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cricket_xdr.rpc.errors import ConnectionLost, LocalRpcError, ProcUnavail

from .channels import ClientChannels
from .memcopy import copy
from .routes import source_address
from .select import Capabilities, Limits, Mode, Path, choose, mode_from_env
from .shm import ClientSegment

if TYPE_CHECKING:
    from cricket_xdr.stubs import Pending

    from ..connection import Connection

__all__ = ["DataPaths", "CHANNELS_ENV", "SHM_PIECE", "SHM_SLOTS", "TCP_PIECE", "TCP_WINDOW"]

log = logging.getLogger("cricket_client.datapath")

CHANNELS_ENV = "CRICKET_DATA_CHANNELS"
SHM_PIECE = 8 << 20
SHM_SLOTS = 8
TCP_PIECE = 16 << 20
TCP_WINDOW = 3
DEFAULT_CHANNELS = 4
_SYNC_SLOT = 0  # the slot of a copy that waits for its reply
_FIRST_EARLY = 1  # slots from here on: early copies, in turn
_EARLY_SHM = "DATA_SHM_HTOD"
_RESEND_AS = "CU_MEMCPY_HTOD_ASYNC"  # how a resume sends an early copy again (inline)


@dataclass
class _Slot:
    """What may still read or refer to one ring slot."""

    pending: Pending | None = None  # the early copy reading it: its reply to come
    seq: int = 0  # that copy's number in the replay log's ring of early copies (0: none)


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
        self._slots = [_Slot() for _ in range(SHM_SLOTS)]
        self._next_slot = _FIRST_EARLY

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

    def pick(self, size: int, *, dtoh: bool = False) -> Path:
        return choose(size, self.capabilities(), self.mode, self.limits, dtoh=dtoh)

    # -- copies ----------------------------------------------------------------------------
    def htod(self, dst: int, data: Any, stream: int | None) -> int | None:
        return self._route(len(data), lambda path: self._send(path, dst, memoryview(data), stream))

    def dtoh(self, view: memoryview, src: int, stream: int | None) -> int | None:
        return self._route(
            len(view), lambda path: self._receive(path, view, src, stream), dtoh=True
        )

    def htod_early(self, dst: int, data: Any) -> Path | None:
        """A cuMemcpyHtoD of `data` (more than no bytes) to `dst` that may return early
        (`cricket_client.early_copies` proved it would succeed): Path.SHM when it went
        through a shared-memory slot (its reply collected later), Path.RPC when it should go
        inline in its record (the caller sends it), None when it should wait for its reply
        (a forced path, data channels, a slot that could not be had)."""
        size = len(data)
        if size < self.limits.small and self.mode is Mode.AUTO:
            return Path.RPC  # inline whatever the bulk paths are: no routing to do
        with self.lock:
            if self.mode is Mode.RPC or self.mode is Mode.TCP:
                return None
            if not self._usable():  # replay logging: inline, the log's entry holds the bytes
                return Path.RPC if self.mode is Mode.AUTO else None
            path = self.pick(size)
            if path is Path.RPC:
                return Path.RPC if self.mode is Mode.AUTO else None
            if path is not Path.SHM or size > SHM_PIECE:
                return None
            try:
                self._ready(Path.SHM)
            except OSError as e:
                log.warning("shared memory for copies failed (%s): path switched off", e)
                self._drop(Path.SHM)
                self._off.add(Path.SHM)
                return None
            if self._post_early_shm(dst, memoryview(data)):
                self.last_path = Path.SHM
                return Path.SHM
            return None

    def _post_early_shm(self, dst: int, data: memoryview) -> bool:
        """Fill a free slot and send its DATA_SHM_HTOD without waiting (numbered for replay
        here: a call lost with the connection must not go again to a server that has no
        segment; False then, and the synchronous copy resumes the session)."""
        assert self._segment is not None
        conn = self.conn
        size = len(data)
        if not conn._rpc.looks_alive(strict=True):
            return False  # the server went away: no slot is reused before the resume
        i = self._next_slot
        if not self._free_slot(i, wait=True):
            return False  # no answer came: the synchronous copy (slot 0) goes, or resumes
        self._next_slot = i + 1 if i + 1 < SHM_SLOTS else _FIRST_EARLY
        at = i * SHM_PIECE
        slot_view = self._segment.view[at : at + size]
        copy(slot_view, data)
        pipe = conn.pipeline
        if pipe.launches.queued:
            pipe.launches.flush()  # gathered launches go first: the server keeps the order
        book = conn.replay_log
        mark = book.count(_EARLY_SHM)
        conn._local_message = None
        try:
            self._slots[i].pending = pipe.post_now(
                _EARLY_SHM, (dst, at, size, 0, False), answered_at_once=True
            )
        except ConnectionLost:
            book.rollback(mark)
            return False
        # A resume from a checkpoint that lacks the copy sends it again inline, from the slot
        # (held until the slot is reused); the view holds no bytes of its own.
        book.keep_early(_RESEND_AS, (dst, slot_view, 0), held=0)
        self._slots[i].seq = book.seq
        return True

    def _free_slot(self, i: int, *, wait: bool) -> bool:
        """Make slot `i` free of earlier copies: with `wait`, once the early copy that read it
        was answered (a call that fills it); without, at once (a call the server runs after
        that copy, in order, e.g. a DtoH into it). False, the slot left as it is, when that
        copy's answer never came (the connection failed: a resume may need to send its bytes
        again; it timed out: the server may still read them)."""
        slot = self._slots[i]
        if slot.pending is not None:
            if wait:
                try:
                    slot.pending.result()
                except LocalRpcError:
                    return False
                except Exception:  # the server answered; its failure is the pipeline's to report
                    pass
            slot.pending = None
        if slot.seq:
            self.conn.replay_log.forget_early(slot.seq)  # its bytes are about to change
            slot.seq = 0
        return True

    def _free_slots(self, *, wait: bool) -> None:
        for i in range(SHM_SLOTS):
            self._free_slot(i, wait=wait)
        self._next_slot = _FIRST_EARLY

    def _route(self, size: int, move: Any, *, dtoh: bool = False) -> int | None:
        if size:
            with self.lock:
                while self._usable() and (path := self.pick(size, dtoh=dtoh)) is not Path.RPC:
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
        try:
            if path is Path.SHM and self._segment is None:
                self._segment = self._attach_segment()
            elif path is Path.TCP and self._channels is None:
                self._channels = self._open_channels()
        except ProcUnavail as e:  # a server without the data paths: copies stay inline
            raise OSError(f"the server does not serve {path.value} copies ({e})") from None

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
            at = _SYNC_SLOT * SHM_PIECE  # never an early copy's: nothing to wait for
            if htod:
                copy(ring[at : at + n], host)
            err = self.conn.call(proc, dev, at, n, stream or 0, stream is not None)[0]
            if not err and not htod:
                copy(host, ring[at : at + n])
            return int(err)
        self._free_slots(wait=htod)
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
            self._free_slots(wait=False)  # no view of the segment may outlive it
            self._segment.close()
            self._segment = None
        if path is Path.TCP and self._channels is not None:
            self._channels.close()
            self._channels = None

    def close(self) -> None:
        self._drop(Path.SHM)
        self._drop(Path.TCP)
