"""The sans-io pieces of the server's resource bounds: the record budget shared by
connections, rate-limited log lines, sim streams holding a thread only while busy, and the
per-session handle counts."""

from __future__ import annotations

import logging
import struct
import threading

import pytest

from cricket_server.backends.sim.streams import Context, SimStream
from cricket_server.resources import HandleKind, HandleRegistry, HandleTable, StreamRecord
from cricket_xdr.rpc.errors import BufferLimit
from cricket_xdr.rpc.ratelog import RateLimitedLog
from cricket_xdr.rpc.record import BufferBudget, RecordReader


def header(size: int) -> bytes:
    return struct.pack(">I", 0x80000000 | size)


def test_readers_share_a_budget_charged_from_the_header_and_given_back() -> None:
    budget = BufferBudget(3 << 20, "the test budget")
    readers = [RecordReader(16 << 20) for _ in range(3)]
    for reader in readers:
        reader.budget = budget
    readers[0].receive_data(header(1 << 20) + b"x" * 100)
    assert readers[0].next_record() is None
    readers[1].receive_data(header(2 << 20))
    assert readers[1].next_record() is None
    assert budget.used == 3 << 20
    readers[2].receive_data(header(1 << 20))
    with pytest.raises(BufferLimit, match="the test budget of 3145728 bytes"):
        readers[2].next_record()
    readers[0].receive_data(b"y" * ((1 << 20) - 100))  # complete: its bytes are given back
    assert len(readers[0].next_record() or b"") == 1 << 20
    assert budget.used == 2 << 20
    readers[1].release()  # its connection ended mid-record
    assert budget.used == 0


def test_small_records_are_not_charged() -> None:
    budget = BufferBudget(1)
    reader = RecordReader()
    reader.budget = budget
    reader.receive_data(header(1000) + b"a" * 10)
    assert reader.next_record() is None
    reader.receive_data(b"a" * 990)
    assert reader.next_record() == b"a" * 1000
    assert budget.used == 0


def test_rate_limited_log_says_how_many_were_left_out(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.ratelog")
    ratelog = RateLimitedLog(logger, interval=3600)
    with caplog.at_level(logging.WARNING, logger="test.ratelog"):
        for i in range(1000):
            ratelog.log(logging.WARNING, "accept failed: %d", i)
        assert [r.getMessage() for r in caplog.records] == ["accept failed: 0"]
        ratelog._next = 0.0  # the interval has passed
        ratelog.log(logging.WARNING, "accept failed: %d", 1000)
    assert caplog.records[-1].getMessage() == (
        "accept failed: 1000 (999 more like it since the last such line)"
    )


def stream_threads() -> int:
    return sum(t.name.startswith("sim-stream-") for t in threading.enumerate())


def test_a_sim_stream_holds_a_thread_only_while_it_has_work() -> None:
    before = stream_threads()
    context = Context("test")
    streams = [SimStream(context, 0, 0) for _ in range(500)]
    assert stream_threads() == before
    gate = threading.Event()
    ran: list[int] = []
    first = streams[0].submit(gate.wait)
    streams[0].submit(lambda: ran.append(1))
    later = streams[1].submit(lambda: ran.append(2), [first])
    assert stream_threads() == before + 2
    gate.set()
    later.done.wait(30)
    for stream in streams[:2]:
        stream.join()
    assert ran == [1, 2] or ran == [2, 1]
    assert stream_threads() == before
    streams[0].close()  # idle: leaves the context at once
    assert streams[0] not in context.live()
    blocked = threading.Event()
    streams[2].submit(blocked.wait)
    streams[2].close()  # busy: stays in the context until its work is done
    assert streams[2] in context.live()
    blocked.set()
    streams[2].join()
    assert streams[2] not in context.live()


def test_handle_table_counts_live_handles_by_kind() -> None:
    table = HandleTable(HandleRegistry(), 1)
    made = [table.add(HandleKind.STREAM, StreamRecord, ctx=0, obj=None, flags=0, priority=0)
            for _ in range(3)]  # fmt: skip
    assert table.count(HandleKind.STREAM) == 3
    assert table.count(HandleKind.EVENT) == 0
    table.remove(made[0].handle)
    table.remove(made[0].handle)  # twice: counted once
    assert table.count(HandleKind.STREAM) == 2
