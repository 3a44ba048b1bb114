"""`Connection.call`'s synchronous path keeps what the replay/reconnect wrapper keeps: the
call is numbered once, not at all when it never ran, resumed after a lost connection, sent
after gathered launches; and the reconnect settings are plain attributes (no server)."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from cricket_client import connection as connection_module
from cricket_client.connection import Connection
from cricket_client.known_answers import KnownAnswers
from cricket_client.pipeline import Pipeline
from cricket_client.reconnect import enable_reconnect, next_address, reconnect_deadline, redirect
from cricket_client.replay import ReplayLog
from cricket_xdr.rpc.errors import ConnectionLost
from cricket_xdr.xdr import XdrEncodeError
from rpc_spec import cricket_rpc as proto

_INT_RESULT = struct.Struct(">ii")


class Answered:
    """A pipelined call's reply that has arrived (CUDA_SUCCESS)."""

    def done(self) -> bool:
        return True

    def result(self, timeout: float | None = None) -> bytes:
        return b"\0\0\0\0"


class Transport:
    """An RpcClient stand-in: records the procedures sent; `lose` calls fail first."""

    def __init__(self, lose: int = 0) -> None:
        self.sent: list[int] = []
        self.lose = lose

    def call(self, prog: int, vers: int, proc: int, args: Any = b"", **_: Any) -> bytes:
        if self.lose:
            self.lose -= 1
            raise ConnectionLost("gone")
        self.sent.append(proc)
        return _INT_RESULT.pack(0, 3)

    def call_async(self, prog: int, vers: int, proc: int, args: Any = b"", **_: Any) -> Answered:
        self.sent.append(proc)
        return Answered()

    def flush(self) -> None:
        """Deferred calls are recorded as sent already."""


def offline(transport: Transport) -> Connection:
    conn = Connection.__new__(Connection)  # its call methods, without a server
    conn.proto = proto
    conn._rpc = transport  # type: ignore[assignment]
    conn._stub = proto.CRICKET_V1_Client(transport)
    conn.pipeline = Pipeline(transport, proto)  # type: ignore[arg-type]
    conn._local_message = None
    conn.replay_log = ReplayLog()
    conn.known = KnownAnswers()
    conn.closed = False
    conn.reconnect_deadline = None
    conn.redirect_address = None
    conn.address = "node:1"
    return conn


def test_a_call_is_numbered_once_and_answered() -> None:
    conn = offline(Transport())
    assert conn.call("CU_CTX_GET_DEVICE") == (0, 3)
    assert conn.replay_log.named(1, conn.replay_log.seq) == [(1, "CU_CTX_GET_DEVICE")]


def test_a_call_that_never_ran_is_not_numbered() -> None:
    conn = offline(Transport())
    with pytest.raises(TypeError):
        conn.call("CU_CTX_GET_DEVICE", 1)  # takes no arguments
    with pytest.raises(XdrEncodeError):
        conn.call("CU_DEVICE_GET_ATTRIBUTE", 1, 1 << 40)  # does not encode
    assert conn.replay_log.seq == 0


def test_a_lost_call_is_resumed_and_numbered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = Transport(lose=1)
    conn = offline(transport)
    resumed: list[object] = []

    def resume(conn: Connection, lost: BaseException, old: object) -> bool:
        resumed.append(old)
        return True

    monkeypatch.setattr(connection_module, "resume_after_loss", resume)
    assert conn.call("CU_CTX_GET_DEVICE") == (0, 3)
    assert resumed == [transport]
    assert conn.replay_log.seq == 1
    assert transport.sent == [proto.CU_CTX_GET_DEVICE]


def test_a_lost_call_without_reconnecting_raises_unnumbered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn = offline(Transport(lose=1))
    monkeypatch.setattr(connection_module, "resume_after_loss", lambda *a: False)
    with pytest.raises(ConnectionLost):
        conn.call("CU_CTX_GET_DEVICE")
    assert conn.replay_log.seq == 0


def test_gathered_launches_go_before_the_call() -> None:
    transport = Transport()
    conn = offline(transport)
    conn.pipeline.launches.queued.append(b"")  # a gathered launch (its encoding aside)
    conn.call("CU_CTX_GET_DEVICE")
    assert transport.sent == [proto.CU_LAUNCH_KERNEL_BATCH, proto.CU_CTX_GET_DEVICE]


def test_reconnect_settings_are_attributes_of_the_connection() -> None:
    conn = offline(Transport())
    assert (conn.reconnect_deadline, conn.redirect_address) == (None, None)
    enable_reconnect(conn, 2.5)
    assert conn.reconnect_deadline == 2.5 == reconnect_deadline(conn)
    redirect(conn, "other:2")
    assert conn.redirect_address == "other:2" == next_address(conn)
    redirect(conn, None)
    assert conn.redirect_address is None
