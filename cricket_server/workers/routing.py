"""Routing a connection to the worker holding its restored session (cricket-restart).

Each restored session lives in a worker process of its own, so the main process must know
which session a new connection wants before it hands the socket over. It peeks (MSG_PEEK:
nothing is consumed, the worker reads the same bytes) at the connection's first record; when
that is a HELLO with a session token of a restored worker, the socket goes to that worker,
otherwise to a spare as usual. Peeking keeps the worker protocol one-way (a worker never has
to hand back a connection with bytes it already read) and costs one wait for the first
record, in a thread of its own, only while restored sessions wait for their clients.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from typing import Protocol

from cricket_xdr.rpc.errors import CallDecodeError
from cricket_xdr.rpc.message import decode_call
from rpc_spec import cricket_rpc as proto

log = logging.getLogger("cricket_server.workers")

PEEK_LIMIT = 64 << 10  # a HELLO record is far smaller
PEEK_TIMEOUT = 30.0


def peek_first_record(sock: socket.socket, timeout: float = PEEK_TIMEOUT) -> bytes | None:
    """The first record's first fragment, left in the socket; None when the peer sends none
    in time, closes, or sends more than PEEK_LIMIT bytes in it."""
    deadline = time.monotonic() + timeout
    want = 4
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            data = sock.recv(want, socket.MSG_PEEK)
        except OSError:
            return None
        finally:
            sock.settimeout(None)
        if not data:
            return None
        if len(data) >= 4 and want == 4:
            size = struct.unpack(">I", data[:4])[0] & 0x7FFFFFFF
            if size > PEEK_LIMIT:
                return None
            want = 4 + size
        if len(data) >= want and want > 4:
            return data[4:want]
        if len(data) < want:
            time.sleep(0.002)  # the rest of the record is on its way


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


class RestoredPool(Protocol):
    def waiting_restored(self) -> bool: ...
    def hand_off_restored(
        self, token: bytes, sock: socket.socket, peer: object, admitted: bool = False
    ) -> bool: ...
    def hand_off(self, sock: socket.socket, peer: object, admitted: bool = False) -> None: ...


class RestoredRouter:
    """`hand_off` for the RPC server of cricket-restart under process isolation."""

    def __init__(self, pool: RestoredPool) -> None:
        self.pool = pool

    def hand_off(self, sock: socket.socket, peer: object, admitted: bool = False) -> None:
        """`admitted`: the connection proved the token here (`gate.AdmissionGate`); its HELLO
        comes next, in the clear unless it speaks TLS (which only a worker can end)."""
        if not self.pool.waiting_restored():
            self.pool.hand_off(sock, peer, admitted)
            return
        threading.Thread(
            target=self._route, args=(sock, peer, admitted), name="route-connection", daemon=True
        ).start()

    def _route(self, sock: socket.socket, peer: object, admitted: bool) -> None:
        record = peek_first_record(sock)
        token = hello_token(record) if record is not None else b""
        if token and self.pool.hand_off_restored(token, sock, peer, admitted):
            return
        self.pool.hand_off(sock, peer, admitted)
