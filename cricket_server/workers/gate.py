"""`AdmissionGate`: the main process's side of connection setup under process isolation.

A worker process is costly (a backend, a GPU context), so a connection gets one only once it
has shown that it may: while the server requires a token or TLS, each accepted connection
first waits here, on one thread with a selector, for at most `deadline` seconds and among at
most `max_pending` others (a new connection beyond them is closed at once).

- Token without TLS: the gate runs the token exchange itself (`handshake`: NULL calls with
  AUTH_CRICKET_TOKEN; other NULL calls answered, everything else AUTH_TOOWEAK). It reads one
  record at a time, exactly (a header, then the bytes it announces, 64 KiB at most), so no
  byte behind the proof is consumed; once proven, the socket goes to a worker as admitted.
- TLS: the TLS session must live where the connection is served, so the worker runs the
  setup. The gate waits until the first record (the STARTTLS probe) has arrived, looking at
  it without consuming it (MSG_PEEK), and hands the socket on only while fewer than
  `setup_limit` workers are in their setup (`WorkerPool.in_setup`); such a worker has the
  same deadline for its setup and ends with its connection.

Connections whose setup fails or times out are closed; such events are logged at most
once per 10 s.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cricket_xdr.rpc.auth import TokenVerifier
from cricket_xdr.rpc.connection import ServerConnection
from cricket_xdr.rpc.dispatch import ConnectionInfo, Dispatcher
from cricket_xdr.rpc.errors import CallDecodeError
from cricket_xdr.rpc.handshake import PRE_AUTH_MAX_RECORD, Admission, screen_token
from cricket_xdr.rpc.message import decode_call
from cricket_xdr.rpc.record import LAST_FRAGMENT, MAX_FRAGMENT
from rpc_spec import cricket_rpc as proto

from .watcher import SocketWatcher

log = logging.getLogger("cricket_server.workers")

SETUP_LIMIT = 8  # workers running a TLS setup at once
_SLOT_POLL = 0.05  # seconds between looks for a free setup slot
_HEADER = struct.Struct(">I")

HandOff = Callable[[socket.socket, object, bool], None]
"""`hand_off(sock, peer, admitted)`: give the connection to a worker (which owns it then)."""


@dataclass(eq=False)
class _Pending:
    sock: socket.socket
    peer: object
    deadline: float
    info: ConnectionInfo
    verifier: TokenVerifier | None
    conn: ServerConnection = field(
        default_factory=lambda: ServerConnection(max_record=PRE_AUTH_MAX_RECORD)
    )
    head: bytearray = field(default_factory=bytearray)  # the fragment header being read
    fragment: bytearray = field(default_factory=bytearray)  # the fragment being read
    want: int = 0  # bytes of the fragment still to read
    record: bytearray = field(default_factory=bytearray)  # fragments so far
    peeking: bool = False  # TLS: part of the first record is here (looked at, not read)
    waiting_slot: bool = False  # TLS: the first record is here, no setup slot free yet


class AdmissionGate(SocketWatcher[_Pending]):
    """See the module docstring. `hand_off` is the RPC server's; `setup_busy()` says how many
    workers run a setup now."""

    def __init__(
        self,
        admission: Admission,
        hand_off: HandOff,
        *,
        max_pending: int,
        setup_busy: Callable[[], int],
        setup_limit: int = SETUP_LIMIT,
    ) -> None:
        self.admission = admission
        self.max_pending = max_pending
        self.setup_limit = setup_limit
        self._hand_off = hand_off
        self._setup_busy = setup_busy
        self._dispatch = Dispatcher([proto.CRICKET_V1_Server()]).dispatch
        self._pending: dict[socket.socket, _Pending] = {}
        self._ids = itertools.count(1)
        super().__init__(
            name="admission-gate",
            log=log,
            failure="the admission gate failed: %r",
            poll=_SLOT_POLL,
        )

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def hand_off(self, sock: socket.socket, peer: object) -> None:
        """Take an accepted connection (the RPC server's accept thread)."""
        if not self._add(self._pending, self.max_pending, lambda: self._entry(sock, peer)):
            sock.close()
            self._trouble.log(logging.WARNING, "refused the connection from %r: %d connections "
                              "are in their setup already (--max-pending)", peer,
                              self.max_pending)  # fmt: skip

    def _entry(self, sock: socket.socket, peer: object) -> _Pending:
        verifier = None
        if self.admission.tls is None and self.admission.token:
            verifier = TokenVerifier(self.admission.token)
        info = ConnectionInfo(next(self._ids), peer, lambda: None)
        return _Pending(sock, peer, time.monotonic() + self.admission.deadline, info, verifier)

    # -- the gate's thread (`SocketWatcher` hooks) ----------------------------------------
    def _release_all(self) -> None:
        for entry in list(self._pending.values()):
            self._drop(entry)

    def _expired(self, entry: _Pending) -> None:
        if self._is_pending(entry):
            self._trouble.log(logging.INFO, "%r: connection setup not done within %g s; "
                              "closing", entry.info, self.admission.deadline)  # fmt: skip
            self._drop(entry)

    def _poll(self) -> bool:
        """TLS: look at connections with part of their first record; offer setup slots."""
        with self._lock:
            polled = [e for e in self._pending.values() if e.peeking or e.waiting_slot]
        for entry in polled:
            if entry.peeking:
                self._guarded(self._peek, entry)
        waiting = [e for e in polled if e.waiting_slot]
        if waiting:
            self._offer_slots(waiting)
        return any(e.peeking or e.waiting_slot for e in polled)

    def _guarded(self, step: Callable[[_Pending], None], entry: _Pending) -> None:
        """Run one step of a connection's setup; a failure ends that connection only."""
        try:
            step(entry)
        except (BlockingIOError, InterruptedError):
            pass
        except Exception as exc:  # a hostile peer ends its own connection only
            self._trouble.log(logging.INFO, "%r: connection setup failed: %s", entry.info, exc)
            self._drop(entry)

    def _peek(self, entry: _Pending) -> None:
        """TLS: once the first record is here, wait for a setup slot. Bytes looked at stay
        readable, so a connection with part of its record is polled, not watched."""
        complete = self._first_record_here(entry)
        if not entry.peeking:
            self._selector.unregister(entry.sock)
        entry.peeking = not complete
        entry.waiting_slot = complete

    def _readable(self, entry: _Pending) -> None:
        if self.admission.tls is not None:
            self._peek(entry)
            if entry.waiting_slot:
                self._offer_slots([entry])
            return
        record = self._read_record(entry)
        if record is None:
            return
        conn, verifier = entry.conn, entry.verifier
        assert verifier is not None
        call = decode_call(record)
        pieces = screen_token(conn, call, entry.info, self._dispatch, verifier)
        reply = b"".join(pieces)
        if entry.sock.send(reply) != len(reply):
            raise ConnectionError("the peer does not read its replies")
        if verifier.exhausted:
            raise ConnectionError("too many wrong token proofs")
        if verifier.authenticated:
            self._forward(entry, admitted=True)

    def _read_record(self, entry: _Pending) -> bytes | None:
        """Read (exactly) towards the next record; the record once complete, else None."""
        sock = entry.sock
        while True:
            if entry.want == 0 and len(entry.head) < 4:
                data = sock.recv(4 - len(entry.head))
                if not data:
                    raise ConnectionError("closed during connection setup")
                entry.head += data
                if len(entry.head) < 4:
                    return None
                (header,) = _HEADER.unpack(entry.head)
                entry.want = header & MAX_FRAGMENT
                if len(entry.record) + entry.want > PRE_AUTH_MAX_RECORD:
                    raise CallDecodeError(
                        f"a record of {len(entry.record) + entry.want} bytes before the "
                        f"connection is authenticated (at most {PRE_AUTH_MAX_RECORD})"
                    )
            if entry.want:
                data = sock.recv(entry.want)
                if not data:
                    raise ConnectionError("closed during connection setup")
                entry.record += data
                entry.want -= len(data)
                if entry.want:
                    return None
            last = _HEADER.unpack(entry.head)[0] & LAST_FRAGMENT
            entry.head.clear()
            if last:
                record = bytes(entry.record)
                entry.record.clear()
                return record

    def _first_record_here(self, entry: _Pending) -> bool:
        """Whether the first record (one fragment, as the STARTTLS probe) has arrived; it
        stays in the socket for the worker."""
        data = entry.sock.recv(4, socket.MSG_PEEK)
        if not data:
            raise ConnectionError("closed during connection setup")
        if len(data) < 4:
            return False
        size = _HEADER.unpack(data)[0] & MAX_FRAGMENT
        if size > PRE_AUTH_MAX_RECORD:
            raise CallDecodeError(
                f"a record of {size} bytes before the connection is authenticated "
                f"(at most {PRE_AUTH_MAX_RECORD})"
            )
        return len(entry.sock.recv(4 + size, socket.MSG_PEEK)) == 4 + size

    def _offer_slots(self, waiting: list[_Pending]) -> None:
        free = self.setup_limit - self._setup_busy()
        for entry in waiting[: max(0, free)]:
            if self._is_pending(entry):
                entry.waiting_slot = False
                self._forward(entry, admitted=False)

    def _forward(self, entry: _Pending, *, admitted: bool) -> None:
        with self._lock:
            self._pending.pop(entry.sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(entry.sock)
        entry.sock.setblocking(True)
        try:
            self._hand_off(entry.sock, entry.peer, admitted)
        except Exception as exc:
            self._trouble.log(logging.ERROR, "handing off the connection from %r failed: %r",
                              entry.peer, exc)  # fmt: skip
            with contextlib.suppress(OSError):
                entry.sock.close()

    def _is_pending(self, entry: _Pending) -> bool:
        with self._lock:
            return self._pending.get(entry.sock) is entry

    def _drop(self, entry: _Pending) -> None:
        with self._lock:
            self._pending.pop(entry.sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(entry.sock)
        with contextlib.suppress(OSError):
            entry.sock.close()
