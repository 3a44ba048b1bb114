"""A client never hangs on a peer that does not answer, and refuses a reply it never asked for.

Fake peers on loopback, in this process: one that accepts and never says a word, one that reads
a call and then closes, one that announces a huge reply, one that is stuck inside a call.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from test_client_fakes import FakeCricket, FakeServer

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr.rpc.client import DEFAULT_MAX_REPLY, KEEPALIVE, RpcClient
from cricket_xdr.rpc.errors import ConnectionLost, ConnectTimeout, RecordTooLarge, RpcTimeout

BOUND = 15.0  # seconds a test waits for what must happen well within it
_HEADER = struct.Struct(">I")
_LAST = 0x80000000


class SilentPeer:
    """Listens on loopback; `on_call(sock, xid)` runs for each call record received (default:
    nothing, the peer just keeps the connection open)."""

    def __init__(self, on_call: Callable[[socket.socket, int], None] | None = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()[:2]
        self.on_call = on_call
        self.socks: list[socket.socket] = []
        self.closed = threading.Event()  # the client closed its end
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        self.socks.append(sock)
        buf = b""
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    self.closed.set()
                    return
                buf += data
                while len(buf) >= 8 and len(buf) >= 4 + (_HEADER.unpack_from(buf)[0] & ~_LAST):
                    size = _HEADER.unpack_from(buf)[0] & ~_LAST
                    xid = _HEADER.unpack_from(buf, 4)[0]
                    buf = buf[4 + size :]
                    if self.on_call is not None:
                        self.on_call(sock, xid)
        except OSError:
            self.closed.set()

    def stop(self) -> None:
        self.listener.close()
        for sock in self.socks:
            sock.close()
        self.thread.join(BOUND)


@pytest.fixture
def peer_factory() -> Iterator[Callable[..., SilentPeer]]:
    peers: list[SilentPeer] = []

    def make(on_call: Callable[[socket.socket, int], None] | None = None) -> SilentPeer:
        peers.append(SilentPeer(on_call))
        return peers[-1]

    yield make
    for peer in peers:
        peer.stop()


def _in_thread(fn: Callable[[], Any], cleanup: Callable[[], None]) -> BaseException | None:
    """Run `fn` in a thread; the exception it raised (None: it returned). If it is still
    running after BOUND seconds, `cleanup` unblocks it and the test fails: it hung."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    if thread.is_alive():
        cleanup()
        thread.join(BOUND)
        pytest.fail(f"still waiting after {BOUND} s: the client hangs")
    return outcome[0]


def _success_reply(xid: int, body: bytes) -> bytes:
    head = struct.pack(">6I", xid, 1, 0, 0, 0, 0)
    return _HEADER.pack(_LAST | (len(head) + len(body))) + head + body


# -- connection set-up -----------------------------------------------------------------------


def test_connect_to_a_server_that_never_answers_raises_connect_timeout(peer_factory) -> None:
    peer = peer_factory()
    address = f"{peer.address[0]}:{peer.address[1]}"
    started = time.monotonic()
    exc = _in_thread(
        lambda: cricket_client.connect(address, make_default=False, connect_timeout=0.5),
        peer.stop,
    )
    assert isinstance(exc, ConnectTimeout), exc
    assert time.monotonic() - started < BOUND
    assert exc.stage == "HELLO" and address in str(exc) and "HELLO" in str(exc)


def test_connect_timeout_comes_from_the_environment(peer_factory, monkeypatch) -> None:
    monkeypatch.setenv("CRICKET_CONNECT_TIMEOUT", "0.5")
    peer = peer_factory()
    address = f"{peer.address[0]}:{peer.address[1]}"
    exc = _in_thread(lambda: cricket_client.connect(address, make_default=False), peer.stop)
    assert isinstance(exc, ConnectTimeout), exc


def test_the_default_connect_deadline_is_ten_seconds(monkeypatch) -> None:
    from cricket_client.security import connect_timeout_from_env

    monkeypatch.delenv("CRICKET_CONNECT_TIMEOUT", raising=False)
    assert connect_timeout_from_env() == 10.0
    monkeypatch.setenv("CRICKET_CONNECT_TIMEOUT", "soon")
    with pytest.raises(cricket_client.CricketClientError, match="CRICKET_CONNECT_TIMEOUT"):
        connect_timeout_from_env()


def test_token_handshake_with_a_silent_server_names_its_stage(peer_factory) -> None:
    peer = peer_factory()
    address = f"{peer.address[0]}:{peer.address[1]}"
    exc = _in_thread(
        lambda: cricket_client.connect(
            address, make_default=False, connect_timeout=0.5, token=b"secret"
        ),
        peer.stop,
    )
    assert isinstance(exc, ConnectTimeout), exc
    assert exc.stage == "the token handshake"


def test_client_sockets_use_tcp_keepalive(peer_factory) -> None:
    peer = peer_factory()
    with RpcClient(peer.address) as client:
        sock = client._sock
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            idle, interval, count = KEEPALIVE
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == idle
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == interval
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == count
            assert idle + interval * count <= 60  # a dead peer is found within a minute


# -- a peer that goes away or gets stuck during a call ---------------------------------------


def test_a_peer_that_reads_the_call_and_vanishes_raises_connection_lost(peer_factory) -> None:
    def vanish(sock: socket.socket, xid: int) -> None:
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    peer = peer_factory(vanish)
    client = RpcClient(peer.address)
    try:
        exc = _in_thread(lambda: client.call(0x20000001, 1, 5), peer.stop)
        assert isinstance(exc, ConnectionLost), exc
    finally:
        client.close()


class StuckCricket(FakeCricket):
    """cuCtxSynchronize never returns (until released at the end of the test)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def CU_CTX_SYNCHRONIZE(self, ctx: Any) -> int:
        self.release.wait(60)
        return 0


def test_call_timeout_from_the_environment_ends_a_call_to_a_stuck_server(monkeypatch) -> None:
    monkeypatch.setenv("CRICKET_CALL_TIMEOUT", "0.5")
    service = StuckCricket()
    server = FakeServer(service)
    conn = cricket_client.connect(server.address, make_default=False)
    try:

        def synchronize() -> None:
            with conn.active():
                cuda.cuCtxSynchronize()

        exc = _in_thread(synchronize, service.release.set)
        assert isinstance(exc, RpcTimeout), exc
    finally:
        service.release.set()
        conn.close()
        server.stop()


# -- replies larger than asked for -----------------------------------------------------------


def test_a_huge_reply_is_refused_and_the_connection_closed(peer_factory) -> None:
    def announce(sock: socket.socket, xid: int) -> None:
        # A reply announced as 512 MiB that keeps coming until the client hangs up.
        sock.sendall(_HEADER.pack(_LAST | (512 << 20)) + struct.pack(">6I", xid, 1, 0, 0, 0, 0))
        with contextlib.suppress(OSError):
            for _ in range(512):
                sock.sendall(bytes(1 << 20))

    peer = peer_factory(announce)
    client = RpcClient(peer.address)
    try:
        exc = _in_thread(lambda: client.call(0x20000001, 1, 5, timeout=BOUND), peer.stop)
        assert isinstance(exc, RecordTooLarge), exc
        assert exc.limit == DEFAULT_MAX_REPLY <= 64 << 20
        assert peer.closed.wait(BOUND), "the client kept the connection open"
        with pytest.raises(ConnectionLost):
            client.call(0x20000001, 1, 5)
    finally:
        client.close()


def test_a_bulk_reply_into_the_callers_buffer_may_exceed_the_bound(peer_factory) -> None:
    n = 1 << 18
    head = struct.pack(">iI", 0, n)

    def answer(sock: socket.socket, xid: int) -> None:
        sock.sendall(_success_reply(xid, head + bytes(range(256)) * (n // 256)))

    peer = peer_factory(answer)
    client = RpcClient(peer.address, max_record=1 << 16)
    try:
        view = memoryview(bytearray(n))
        pending = client.call_async(0x20000001, 1, 5, into=(head, view))
        pending.result(timeout=BOUND)
        assert pending.placed and view[:256] == bytes(range(256))
        # The same reply to a call that gave no buffer is refused.
        with pytest.raises(RecordTooLarge):
            client.call(0x20000001, 1, 5, timeout=BOUND)
    finally:
        client.close()
