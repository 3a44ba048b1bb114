"""The resume hint and the routing of cricket-restart under process isolation, without a
server process: the hint names a session without revealing its token; a server answers it
before its setup, an old server's refusal does not stop the client; the router finds it in
a connection's first record without consuming it, and watches many idle connections on one
thread, not one thread each."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from checkpoint.tokens import TokenDigest
from cricket_server.workers.routing import RestoredRouter, hello_token, resume_hint_of
from cricket_xdr.rpc.auth import AUTH_CRICKET_RESUME, resume_hint
from cricket_xdr.rpc.connection import NEED_DATA, ClientConnection, ServerConnection
from cricket_xdr.rpc.dispatch import ConnectionInfo, Dispatcher
from cricket_xdr.rpc.errors import AuthError
from cricket_xdr.rpc.handshake import Admission, admit, null_call, send_resume_hint
from cricket_xdr.rpc.message import (
    AUTH_TOOWEAK,
    NULL_AUTH,
    OpaqueAuth,
    encode_call_header,
    encode_opaque_auth,
)
from rpc_spec import cricket_rpc as proto

PROGRAM = (proto.CRICKET_PROG, proto.CRICKET_V1)
TOKEN = bytes(range(32))


def _call(proc: int, cred: OpaqueAuth = NULL_AUTH, body: bytes = b"") -> bytes:
    head = encode_call_header(9, *PROGRAM, proc, cred, NULL_AUTH)
    return struct.pack(">I", 0x80000000 | (len(head) + len(body))) + head + body


def test_the_hint_names_the_token_without_revealing_it() -> None:
    hint = resume_hint(TOKEN)
    assert len(hint) == 32 and hint != TOKEN and TOKEN not in hint
    assert resume_hint(TOKEN) == hint != resume_hint(TOKEN[::-1])
    assert TokenDigest.of(TOKEN).hint == hint  # what a checkpoint keeps to match it


def _serve_one_setup(sock: socket.socket, admission: Admission) -> threading.Thread:
    dispatch = Dispatcher([proto.CRICKET_V1_Server()]).dispatch
    thread = threading.Thread(
        target=admit, args=(sock, ServerConnection(), admission, ConnectionInfo(1, "t"), dispatch)
    )
    thread.start()
    return thread


def test_a_server_answers_the_hint_before_its_setup_and_still_requires_the_setup() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        server = _serve_one_setup(theirs, Admission(token=b"server-token", deadline=30.0))
        assert send_resume_hint(ours, resume_hint(TOKEN), program=PROGRAM) is True
        ours.settimeout(30)
        client = ClientConnection()
        _, pieces = client.send_call(*PROGRAM, proto.HELLO, b"")
        ours.sendall(b"".join(pieces))
        while (event := client.next_event()) is NEED_DATA:
            client.receive_data(ours.recv(4096))
        with pytest.raises(AuthError) as refused:  # the token proof has not been made
            event.result()
        assert refused.value.stat == AUTH_TOOWEAK
        ours.close()
        server.join(30)


def test_an_old_server_refusing_the_hint_leaves_the_connection_usable() -> None:
    """An old server answers the unknown flavor with AUTH_ERROR (AUTH_TOOWEAK) and goes on."""
    ours, theirs = socket.socketpair()
    with ours, theirs:

        def old_server() -> None:
            conn = ServerConnection()
            for _ in range(2):
                while (event := conn.next_event()) is NEED_DATA:
                    conn.receive_data(theirs.recv(4096))
                if event.cred.flavor == AUTH_CRICKET_RESUME:
                    theirs.sendall(b"".join(conn.reply_auth_error(event.xid, AUTH_TOOWEAK)))
                else:
                    theirs.sendall(b"".join(conn.reply_success(event.xid)))

        thread = threading.Thread(target=old_server)
        thread.start()
        assert send_resume_hint(ours, resume_hint(TOKEN), program=PROGRAM) is False
        null_call(ours, *PROGRAM)  # the next step of the setup goes through
        thread.join(30)


def test_the_router_finds_the_hint_or_the_hello_token() -> None:
    hint_record = _call(0, OpaqueAuth(AUTH_CRICKET_RESUME, resume_hint(TOKEN)))[4:]
    assert resume_hint_of(hint_record) == resume_hint(TOKEN)
    assert hello_token(hint_record) == b""
    assert resume_hint_of(_call(0)[4:]) == b""  # a plain NULL
    assert resume_hint_of(_call(0, OpaqueAuth(AUTH_CRICKET_RESUME, b"short"))[4:]) == b""
    assert len(encode_opaque_auth(OpaqueAuth(AUTH_CRICKET_RESUME, resume_hint(TOKEN)))) == 40


class FakePool:
    """Records where the router sends connections."""

    def __init__(self) -> None:
        self.restored: list[tuple[bytes, bytes, bytes]] = []  # (token, hint, first bytes)
        self.spare: list[bytes] = []
        self.lock = threading.Lock()

    def waiting_restored(self) -> bool:
        return True

    def hand_off_restored(
        self, sock: socket.socket, peer: object, admitted: bool = False, *,
        token: bytes = b"", hint: bytes = b"",
    ) -> bool:  # fmt: skip
        if hint != resume_hint(TOKEN) and token != TOKEN:
            return False
        first = sock.recv(8, socket.MSG_PEEK)
        with self.lock:
            self.restored.append((token, hint, first))
        sock.close()
        return True

    def hand_off(self, sock: socket.socket, peer: object, admitted: bool = False) -> None:
        try:
            first = sock.recv(8, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            first = b""  # a connection that said nothing in time
        with self.lock:
            self.spare.append(first)
        sock.close()


@contextmanager
def router(pool: FakePool, **kwargs: Any) -> Iterator[RestoredRouter]:
    r = RestoredRouter(pool, **kwargs)
    try:
        yield r
    finally:
        r.close()


def _wait(probe: Any, what: str) -> None:
    deadline = time.monotonic() + 60
    while not probe():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.02)


def test_many_idle_connections_wait_on_one_thread_and_are_routed_when_they_speak() -> None:
    pool = FakePool()
    with router(pool) as r, ExitStack() as stack:
        before = threading.active_count()
        clients = []
        for _ in range(100):
            ours, theirs = socket.socketpair()
            stack.enter_context(ours)
            clients.append(ours)
            r.hand_off(theirs, "peer")
        _wait(lambda: r.waiting == 100, "100 waiting connections")
        assert threading.active_count() <= before + 1
        hint_call = _call(0, OpaqueAuth(AUTH_CRICKET_RESUME, resume_hint(TOKEN)))
        clients[0].sendall(hint_call[:10])  # a record in two parts
        time.sleep(0.1)
        clients[0].sendall(hint_call[10:])
        hello = proto.xdr_hello_args.encode(
            proto.hello_args(protocol_version=1, session_token=TOKEN, client_name="c")
        )
        clients[1].sendall(_call(proto.HELLO, body=hello))
        clients[2].sendall(_call(0))  # names nothing: a spare worker's
        clients[3].close()  # gone before it said anything: closed here
        _wait(lambda: len(pool.restored) == 2 and len(pool.spare) == 1, "three routed")
        routed = sorted((bool(t), bool(h), first) for t, h, first in pool.restored)
        assert [r[:2] for r in routed] == [(False, True), (True, False)]
        assert routed[0][2] == hint_call[:8]  # nothing of the record was consumed
        _wait(lambda: r.waiting == 96, "the closed one dropped")
        assert threading.active_count() <= before + 1


def test_the_router_bounds_waiting_connections_and_their_time() -> None:
    pool = FakePool()
    with router(pool, max_waiting=3, timeout=0.5) as r, ExitStack() as stack:
        pairs = [socket.socketpair() for _ in range(4)]
        for ours, theirs in pairs:
            stack.enter_context(ours)
            r.hand_off(theirs, "peer")
        pairs[3][0].settimeout(30)
        assert pairs[3][0].recv(1) == b""  # the fourth was closed at once
        _wait(lambda: len(pool.spare) == 3, "silent connections going on as usual")
        assert r.waiting == 0
