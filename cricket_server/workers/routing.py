"""Routing a connection to the worker holding its restored session (cricket-restart).

Each restored session lives in a worker process of its own, so the main process must know
which session a new connection wants before it hands the socket over. It looks (MSG_PEEK:
nothing is consumed, the worker reads the same bytes) at the connection's first record:

- a HELLO with a session token (no TLS: after the token proof the gate ran, or on a server
  without admission) goes to the worker whose session's token digest matches;
- a NULL call with a resume hint (`cricket_xdr.rpc.auth.AUTH_CRICKET_RESUME`), which a
  resuming client sends before STARTTLS, goes to the worker whose session has that hint;
- anything else goes on as usual (`fallback`: `--max-sessions`, then a spare worker).

Neither is trusted: the worker runs the setup (TLS, token) and checks the HELLO's token
itself, and a connection that fails there leaves the session waiting (`child.Worker`).
Peeking keeps the worker protocol one-way (a worker never hands back a connection with bytes
it already read). All connections waiting for their first record are watched by one thread
with a selector, at most `max_waiting` of them for at most `timeout` seconds each; a new one
beyond them is closed at once (a resuming client tries again), one that sends nothing in
time goes on as usual. Routing happens only while restored sessions wait.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cricket_xdr.rpc.auth import AUTH_CRICKET_RESUME, RESUME_HINT_BYTES
from cricket_xdr.rpc.errors import CallDecodeError
from cricket_xdr.rpc.message import decode_call
from rpc_spec import cricket_rpc as proto

from .watcher import SocketWatcher

log = logging.getLogger("cricket_server.workers")

PEEK_LIMIT = 64 << 10  # a HELLO record is far smaller
PEEK_TIMEOUT = 30.0
MAX_WAITING = 256  # connections waiting for their first record at once
_POLL = 0.02  # seconds between looks at a connection whose first record is partly here
_HEADER = struct.Struct(">I")

HandOff = Callable[[socket.socket, object, bool], None]


def complete_first_record(sock: socket.socket) -> bytes | None:
    """The first record's first fragment once all of it has arrived (left in the socket);
    None while it has not. Raises ConnectionError when the peer closed, CallDecodeError
    for a fragment over PEEK_LIMIT."""
    head = sock.recv(4, socket.MSG_PEEK)
    if not head:
        raise ConnectionError("closed before its first record")
    if len(head) < 4:
        return None
    size = _HEADER.unpack(head)[0] & 0x7FFFFFFF
    if size > PEEK_LIMIT:
        raise CallDecodeError(f"a first record of {size} bytes (at most {PEEK_LIMIT})")
    data = sock.recv(4 + size, socket.MSG_PEEK)
    return data[4:] if len(data) == 4 + size else None


def hello_token(record: bytes) -> bytes:
    """The session token of a HELLO call record; b"" for any other record."""
    try:
        call = decode_call(record)
    except CallDecodeError:
        return b""
    if (call.prog, call.vers, call.proc) != (proto.CRICKET_PROG, proto.CRICKET_V1, proto.HELLO):
        return b""
    body = bytes(call.body)
    if len(body) < 8:
        return b""
    size = struct.unpack_from(">I", body, 4)[0]
    return body[8 : 8 + size] if size <= proto.MAX_TOKEN else b""


def resume_hint_of(record: bytes) -> bytes:
    """The resume hint of a NULL call record with an AUTH_CRICKET_RESUME credential; b"" for
    any other record."""
    try:
        call = decode_call(record)
    except CallDecodeError:
        return b""
    if call.proc != 0 or call.cred.flavor != AUTH_CRICKET_RESUME:
        return b""
    hint = bytes(call.cred.body)
    return hint if len(hint) == RESUME_HINT_BYTES else b""


class RestoredPool(Protocol):
    def waiting_restored(self) -> bool: ...
    def hand_off_restored(
        self,
        sock: socket.socket,
        peer: object,
        admitted: bool = False,
        *,
        token: bytes = b"",
        hint: bytes = b"",
    ) -> bool: ...
    def hand_off(self, sock: socket.socket, peer: object, admitted: bool = False) -> None: ...


@dataclass(eq=False)
class _Waiting:
    sock: socket.socket
    peer: object
    admitted: bool
    deadline: float
    partial: bool = False  # part of the first record is here: polled, not watched


class RestoredRouter(SocketWatcher[_Waiting]):
    """`hand_off` for the RPC server of cricket-restart under process isolation; see the
    module docstring. `fallback`: where other connections go (default `pool.hand_off`)."""

    def __init__(
        self,
        pool: RestoredPool,
        fallback: HandOff | None = None,
        *,
        timeout: float = PEEK_TIMEOUT,
        max_waiting: int = MAX_WAITING,
    ) -> None:
        self.pool = pool
        self.fallback: HandOff = fallback or pool.hand_off
        self.timeout = timeout
        self.max_waiting = max_waiting
        self._waiting: dict[socket.socket, _Waiting] = {}
        super().__init__(
            name="route-restored",
            log=log,
            failure="routing to restored sessions failed: %r",
            poll=_POLL,
        )

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    def hand_off(self, sock: socket.socket, peer: object, admitted: bool = False) -> None:
        """`admitted`: the connection proved the token here (`gate.AdmissionGate`); its HELLO
        comes next, in the clear unless it speaks TLS (then its resume hint came first)."""
        if not self.pool.waiting_restored():
            self.fallback(sock, peer, admitted)
            return
        deadline = time.monotonic() + self.timeout
        if not self._add(
            self._waiting, self.max_waiting, lambda: _Waiting(sock, peer, admitted, deadline)
        ):
            sock.close()
            self._trouble.log(logging.WARNING, "closed the connection from %r: %d connections "
                              "wait to be routed to restored sessions already", peer,
                              self.max_waiting)  # fmt: skip

    # -- the router's thread (`SocketWatcher` hooks) --------------------------------------
    def _release_all(self) -> None:
        with self._lock:
            entries, self._waiting = list(self._waiting.values()), {}
        for entry in entries:
            with contextlib.suppress(OSError):
                entry.sock.close()

    def _expired(self, entry: _Waiting) -> None:
        if self._take(entry):  # nothing came in time: on as usual
            self._forward(entry, b"")

    def _poll(self) -> bool:
        with self._lock:
            polled = [e for e in self._waiting.values() if e.partial]
        for entry in polled:
            self._guarded(self._look, entry)
        return bool(polled)

    def _readable(self, entry: _Waiting) -> None:
        self._look(entry)

    def _guarded(self, step: Callable[[_Waiting], None], entry: _Waiting) -> None:
        try:
            step(entry)
        except (BlockingIOError, InterruptedError):
            pass
        except ConnectionError:
            if self._take(entry):
                entry.sock.close()
        except Exception:  # an oversized or odd first record: the worker refuses it
            if self._take(entry):
                self._forward(entry, b"")

    def _look(self, entry: _Waiting) -> None:
        record = complete_first_record(entry.sock)
        if record is None:
            if not entry.partial and len(entry.sock.recv(4, socket.MSG_PEEK)) > 0:
                entry.partial = True  # readable from now on: polled, not watched
                self._selector.unregister(entry.sock)
            return
        if self._take(entry):
            self._forward(entry, record)

    def _take(self, entry: _Waiting) -> bool:
        """Stop watching `entry`; False when it was done with already."""
        with self._lock:
            if self._waiting.pop(entry.sock, None) is None:
                return False
        if not entry.partial:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(entry.sock)
        return True

    def _forward(self, entry: _Waiting, record: bytes) -> None:
        sock, peer, admitted = entry.sock, entry.peer, entry.admitted
        sock.setblocking(True)
        try:
            if record:
                token, hint = hello_token(record), resume_hint_of(record)
                if (token or hint) and self.pool.hand_off_restored(
                    sock, peer, admitted, token=token, hint=hint
                ):
                    return
            self.fallback(sock, peer, admitted)
        except Exception as exc:
            self._trouble.log(logging.ERROR, "handing off the connection from %r failed: %r",
                              peer, exc)  # fmt: skip
            with contextlib.suppress(OSError):
                sock.close()
