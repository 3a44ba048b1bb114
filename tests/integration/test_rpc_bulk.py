"""Bulk data without copies: opaque views, results received straight into the caller's buffer."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from server_harness import serving

from cricket_xdr.rpc import RpcClient, RpcServer
from cricket_xdr.rpc.record import DIRECT_READ_MIN, LAST_FRAGMENT, Placed, RecordReader
from cricket_xdr.stubs import Procedure
from cricket_xdr.xdr import BIG_PAYLOAD, Decoder, VarOpaque, xdr_int, xdr_u_int

PROG = 0x20000098
opaque = VarOpaque()
SIZE = 3 * DIRECT_READ_MIN + 6  # not a multiple of 4: the record ends in padding


class BulkService:
    """READ(n) answers n bytes counting up; READ of a negative size is an error code."""

    __test__ = False
    PROGRAM = PROG
    VERSION = 1
    PROCEDURES = {
        1: Procedure(1, "READ", (xdr_int,), opaque),
        2: Procedure(2, "LENGTH", (opaque,), xdr_u_int),
    }
    VIEW_ARGS = frozenset({2})

    def __init__(self) -> None:
        self.seen: list[object] = []

    def READ(self, ctx, n):
        return bytes(range(256)) * (n // 256) + bytes(n % 256) if n >= 0 else b"\x01"

    def LENGTH(self, ctx, data):
        self.seen.append(type(data))
        return len(data)


@pytest.fixture
def client():
    service = BulkService()
    with serving(RpcServer([service])) as address, RpcClient(address, timeout=10) as c:
        c.service = service
        yield c


def expected(n: int) -> bytes:
    return BulkService().READ(None, n)


def head(n: int) -> bytes:
    return struct.pack(">I", n)


def test_result_lands_in_the_callers_buffer(client):
    dest = np.zeros(SIZE, dtype=np.uint8)
    pending = client.call_async(PROG, 1, 1, xdr_int.encode(SIZE), into=(head(SIZE), memoryview(dest)))
    assert pending.result() == head(SIZE) + b"\0\0"  # what is left: the length and the padding
    assert pending.placed
    assert dest.tobytes() == expected(SIZE)


def test_several_placed_results_in_flight(client):
    dest = bytearray(4 * SIZE)
    view = memoryview(dest)
    calls = [
        client.call_async(PROG, 1, 1, xdr_int.encode(SIZE), into=(head(SIZE), view[i * SIZE : (i + 1) * SIZE]))
        for i in range(4)
    ]
    assert all(c.result() and c.placed for c in calls)
    assert bytes(dest) == expected(SIZE) * 4


def test_a_result_of_another_shape_arrives_as_usual(client):
    dest = bytearray(SIZE)
    small = client.call_async(PROG, 1, 1, xdr_int.encode(-1), into=(head(SIZE), memoryview(dest)))
    assert opaque.decode(small.result()) == b"\x01"
    assert not small.placed
    shorter = client.call_async(PROG, 1, 1, xdr_int.encode(SIZE - 4), into=(head(SIZE), memoryview(dest)))
    assert opaque.decode(shorter.result()) == expected(SIZE - 4)
    assert not shorter.placed
    assert dest == bytearray(SIZE)


def test_view_args_reach_the_handler_as_views(client):
    data = bytes(BIG_PAYLOAD + 1)
    assert xdr_u_int.decode(client.call(PROG, 1, 2, opaque.encode(data))) == len(data)
    assert xdr_u_int.decode(client.call(PROG, 1, 2, opaque.encode(b"abc"))) == 3
    assert client.service.seen == [memoryview, bytes]


def test_opaque_decodes_to_a_read_only_view_only_when_asked():
    data = opaque.encode(bytes(range(256)) * (BIG_PAYLOAD // 256))
    copy = opaque.decode(data)
    view = opaque.decode(data, views=True)
    assert type(copy) is bytes
    assert isinstance(view, memoryview) and view.readonly and view == copy
    assert opaque.unpack(Decoder(opaque.encode(b"small"), views=True)) == b"small"


def placed_record(xid_head: bytes, payload: bytes) -> bytes:
    body = xid_head + payload + bytes(-len(payload) & 3)
    return struct.pack(">I", LAST_FRAGMENT | len(body)) + body


def feed(reader: RecordReader, stream: bytes, cuts: list[int], direct: bool) -> list[bytes]:
    """Feed `stream` in pieces of the sizes `cuts` (then the rest), as a transport would."""
    records = []
    pos = 0
    for cut in [*cuts, len(stream)]:
        while pos < len(stream) and cut > 0:
            view = reader.read_buffer() if direct else None
            if view is not None:
                n = min(len(view), cut, len(stream) - pos)
                view[:n] = stream[pos : pos + n]
                reader.advance(n)
            else:
                n = min(cut, len(stream) - pos)
                reader.receive_data(stream[pos : pos + n])
            pos += n
            cut -= n
            while (record := reader.next_record()) is not None:
                records.append(record)
    return records


PAYLOAD = bytes(range(256)) * (SIZE // 256) + b"xyz"
START = b"HEAD0123"


def placing_reader(dest: bytearray) -> RecordReader:
    reader = RecordReader()
    reader.placer = lambda first, size: (
        (len(START), memoryview(dest)) if first.startswith(START) else None
    )
    return reader


def test_reader_places_a_record_that_arrives_in_pieces():
    dest = bytearray(len(PAYLOAD))
    stream = placed_record(START, PAYLOAD) + placed_record(b"", b"next")
    records = feed(placing_reader(dest), stream, [1000] * 400, direct=True)
    assert [type(r) for r in records] == [Placed, bytes]
    assert records == [START + b"\0", b"next"]
    assert bytes(dest) == PAYLOAD


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 70000), min_size=1, max_size=8), st.booleans())
def test_reader_gives_every_record_whole_whatever_the_pieces(cuts, direct):
    dest = bytearray(len(PAYLOAD))
    stream = placed_record(START, PAYLOAD) + placed_record(b"", b"next")
    reader = placing_reader(dest)
    first, second = feed(reader, stream, cuts, direct)
    if type(first) is Placed:  # placed unless the record's start came in too short a piece
        assert first == START + b"\0"
        assert bytes(dest) == PAYLOAD
    else:
        assert first == START + PAYLOAD + b"\0"
    assert second == b"next"
    assert reader.idle


def test_large_record_storage_is_reused_only_when_nothing_refers_to_it():
    from cricket_xdr.rpc.record import REUSE_MIN

    def record(fill: int) -> bytes:
        return struct.pack(">I", LAST_FRAGMENT | REUSE_MIN) + bytes([fill]) * REUSE_MIN

    reader = RecordReader()
    first = feed(reader, record(1), [1000], direct=True)[0]
    kept = memoryview(first)[8:]
    second = feed(reader, record(2), [1000], direct=True)[0]
    assert second is not first and kept[0] == 1  # a view of the first is alive: not reused
    storage = id(second)
    del first, kept, second
    third = feed(reader, record(3), [1000], direct=True)[0]
    assert id(third) == storage  # nothing refers to the second any more: its storage again
    assert bytes(third) == bytes([3]) * REUSE_MIN
