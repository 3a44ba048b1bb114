"""`RpcServer(hand_off=...)` and `RpcServer.adopt`: one server accepts, another serves."""

from __future__ import annotations

import queue
import socket
import threading
from typing import Any

from cricket_xdr.rpc import RpcClient, RpcServer
from cricket_xdr.stubs import Procedure
from cricket_xdr.xdr import VarOpaque

PROG = 0x2000009B
LIMIT = 30.0


class EchoService:
    PROGRAM = PROG
    VERSION = 1
    PROCEDURES = {
        1: Procedure(1, "ECHO", (VarOpaque(),), VarOpaque()),
    }

    def ECHO(self, ctx: Any, data: bytes) -> bytes:
        return data


def test_a_handed_off_connection_is_served_by_the_adopting_server() -> None:
    handed: queue.Queue[tuple[socket.socket, object]] = queue.Queue()
    front = RpcServer([EchoService()], hand_off=lambda sock, peer: handed.put((sock, peer)))
    back = RpcServer([EchoService()])
    host, port = front.listen_tcp("127.0.0.1", 0)
    front.start()
    try:
        with RpcClient((host, port), timeout=LIMIT) as rpc:
            pending = rpc.call_async(PROG, 1, 1, b"\x00\x00\x00\x03abc\x00")
            sock, peer = handed.get(timeout=LIMIT)
            assert front.connection_count == 0  # the accepting server serves nothing
            ended = threading.Event()
            info = back.adopt(sock, peer)
            assert info is not None
            info.add_close_callback(ended.set)
            assert bytes(pending.result(timeout=LIMIT)) == b"\x00\x00\x00\x03abc\x00"
            assert isinstance(peer, tuple) and peer[0] == "127.0.0.1"
            assert back.connection_count == 1
        assert ended.wait(LIMIT)  # the client's close ends the adopted connection
    finally:
        front.shutdown()
        back.shutdown()


def test_adopt_takes_the_peer_from_the_socket_and_refuses_after_shutdown() -> None:
    server = RpcServer([EchoService()])
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        client = socket.create_connection(listener.getsockname(), timeout=LIMIT)
        accepted, peer = listener.accept()
        info = server.adopt(accepted)
        assert info is not None and info.peer == peer
        client.close()
        server.shutdown()
        client = socket.create_connection(listener.getsockname(), timeout=LIMIT)
        late, _ = listener.accept()
        assert server.adopt(late) is None
        assert late.fileno() == -1  # closed, not leaked
        client.close()
    finally:
        listener.close()
