"""Reconnecting by default, and naming the calls a restore lacks (no server, no sockets)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from cricket_client import CallsLost, HelloRefused, SessionNotFound
from cricket_client.connection import Connection
from cricket_client.errors import CricketClientError
from cricket_client.pipeline import Pipeline
from cricket_client.reconnect import (
    DEADLINE_ENV,
    DEFAULT_DEADLINE,
    enable_reconnect,
    reconnect_deadline,
)
from cricket_client.replay import RECENT, ReplayLog, replay
from cricket_xdr.rpc.errors import ConnectionLost, RpcTimeout
from cricket_xdr.xdr import XdrEncodeError


def conn_like() -> Any:
    return SimpleNamespace(reconnect_deadline=None)  # as a new Connection has it


def test_every_connection_reconnects_for_the_default_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    assert reconnect_deadline(conn_like()) == DEFAULT_DEADLINE == 60.0
    monkeypatch.setenv(DEADLINE_ENV, "0")  # off
    assert reconnect_deadline(conn_like()) == 0.0
    monkeypatch.setenv(DEADLINE_ENV, "2.5")
    assert reconnect_deadline(conn_like()) == 2.5
    conn = conn_like()
    enable_reconnect(conn, 0)  # per connection, over the environment
    assert reconnect_deadline(conn) == 0.0
    monkeypatch.setenv(DEADLINE_ENV, "soon")
    with pytest.raises(CricketClientError, match=f"{DEADLINE_ENV}='soon'"):
        reconnect_deadline(conn_like())


def test_session_not_found_is_both_a_refused_hello_and_a_lost_connection() -> None:
    assert issubclass(SessionNotFound, HelloRefused)
    assert issubclass(SessionNotFound, ConnectionLost)


def test_the_ring_names_recent_calls_without_a_log() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    for proc in ("CU_MEM_ALLOC", "GET_ERROR_MESSAGE", "CU_MEMSET", "CU_LAUNCH_KERNEL"):
        book.count(proc)
    assert not book.logging and book.seq == 3
    assert book.named(2, 3) == [(2, "CU_MEMSET"), (3, "CU_LAUNCH_KERNEL")]
    for _ in range(RECENT + 10):
        book.begin([("CU_STREAM_QUERY", (0,))])
    named = book.named(1, book.seq)  # only the last RECENT are still named
    assert len(named) == RECENT and named[-1] == (book.seq, "CU_STREAM_QUERY")


def test_resync_numbers_on_from_the_restored_count() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    book.restart_at(0, "/ckpt")
    book.begin([("CU_MEMSET", (1, 2, 1, 3)), ("CU_MEM_ALLOC", (16,))])
    book.resync(1)
    assert (book.seq, book.base, list(book.entries)) == (1, 1, [])
    book.begin([("CU_MEMSET", (1, 2, 1, 3))])
    assert [e.seq for e in book.to_replay(1)] == [2]  # type: ignore[union-attr]


class FakeStub:
    def __init__(self, restored: int) -> None:
        self.restored = restored

    def SESSION_CALLS(self) -> Any:
        return SimpleNamespace(err=0, value=self.restored)


def resumed(restored: int) -> Any:
    return SimpleNamespace(
        _stub=FakeStub(restored),
        info=SimpleNamespace(session_id=0x1234),
        address="node:1",
        replay_log=ReplayLog(),
    )


def test_calls_after_an_operator_checkpoint_raise_calls_lost_naming_them() -> None:
    conn = resumed(restored=1)
    book = conn.replay_log
    for proc in ("CU_MEM_ALLOC", "CU_MEMSET", "CU_LAUNCH_KERNEL"):
        book.count(proc)
    with pytest.raises(CallsLost) as lost:
        replay(conn)
    assert lost.value.calls == [(2, "CU_MEMSET"), (3, "CU_LAUNCH_KERNEL")]
    message = str(lost.value)
    assert "session 0x1234 resumed on node:1" in message
    assert "CU_MEMSET (call 2), CU_LAUNCH_KERNEL (call 3)" in message
    assert "took no checkpoint" in message
    assert book.seq == 1  # numbered as the server numbers it now
    replay(conn)  # and the next resume from the same checkpoint loses nothing


def test_a_call_that_ran_before_the_checkpoint_but_lost_its_reply_is_named() -> None:
    conn = resumed(restored=2)
    book = conn.replay_log
    book.count("CU_MEM_ALLOC")
    mark = book.count("CU_MODULE_LOAD_DATA")
    book.rollback(mark)  # its reply never came; the wrapper would send it again
    with pytest.raises(CallsLost, match=r"CU_MODULE_LOAD_DATA \(call 2\) ran on the old server"):
        replay(conn)
    assert book.seq == 2


class SilentTransport:
    """An RpcClient stand-in: every call times out (the server may have run it)."""

    def call(self, *args: Any, **kwargs: Any) -> bytes:
        raise RpcTimeout("no reply")


def offline_connection() -> Connection:
    from rpc_spec import cricket_rpc as proto

    conn = Connection.__new__(Connection)  # its call methods, without a server
    conn.proto = proto
    conn._rpc = SilentTransport()  # type: ignore[assignment]
    conn._stub = proto.CRICKET_V1_Client(conn._rpc)
    conn.pipeline = Pipeline(conn._rpc, proto)  # type: ignore[arg-type]
    conn._local_message = None
    conn.replay_log = ReplayLog()
    conn.closed = False
    return conn


def test_a_call_that_never_ran_is_not_numbered() -> None:
    """A call whose arguments do not encode never reaches the server, which counts calls:
    the client does not count it either (else a later resume would report it lost)."""
    conn = offline_connection()
    book = conn.replay_log
    with pytest.raises(XdrEncodeError):
        conn.sync("CU_MEM_ALLOC", -1)
    with pytest.raises(ValueError, match="not marked pipelined"):
        conn.post("CU_MEM_ALLOC", 16)
    assert book.seq == 0
    with pytest.raises(RpcTimeout):  # sent: the server may have run it, so it counts
        conn.sync("CU_MEM_ALLOC", 16)
    assert book.named(1, book.seq) == [(1, "CU_MEM_ALLOC")]


def test_a_restore_that_lacks_only_reads_goes_on_quietly() -> None:
    conn = resumed(restored=1)
    book = conn.replay_log
    for proc in ("CU_MEM_ALLOC", "CU_STREAM_SYNCHRONIZE", "CU_MEMCPY_DTOH", "CU_MEM_GET_INFO"):
        book.count(proc)
    replay(conn)  # nothing the program saw is missing
    assert book.seq == 1
    book.count("CU_MEMCPY_DTOH")
    book.count("CU_MEMSET")  # one change among them: named
    with pytest.raises(CallsLost) as lost:
        replay(conn)
    assert lost.value.calls == [(2, "CU_MEMCPY_DTOH"), (3, "CU_MEMSET")]
