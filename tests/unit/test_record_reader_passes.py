"""RecordReader passes over a large record's bytes: after the first received piece, the rest
of a fragment down to DIRECT_TAIL_MIN goes straight into the record (no copy through the
receive buffer), and records from DIRECT_READ_MIN up reuse the last one's storage when
nothing refers to it (no new zero-filled allocation per copy). Bytes stay exact at the edges
and an oversized record is still refused before anything is allocated."""

from __future__ import annotations

import struct

import pytest

from cricket_xdr.rpc import record as rec
from cricket_xdr.rpc.errors import RecordTooLarge
from cricket_xdr.rpc.record import LAST_FRAGMENT, RecordReader

FIRST = 1 << 16  # what a transport's first receive takes (its scratch buffer)


def _record(body: bytes) -> bytes:
    return struct.pack(">I", LAST_FRAGMENT | len(body)) + body


def _receive(reader: RecordReader, stream: bytes) -> tuple[list[bytes], int]:
    """As the server's loop: a first piece through receive_data, then straight into the
    record wherever read_buffer offers; returns (records, bytes that went through
    receive_data)."""
    records: list[bytes] = []
    pos = through = 0
    while pos < len(stream):
        view = reader.read_buffer()
        if view is not None:
            n = min(len(view), len(stream) - pos)
            view[:n] = stream[pos : pos + n]
            reader.advance(n)
        else:
            n = min(FIRST, len(stream) - pos)
            reader.receive_data(stream[pos : pos + n])
            through += n
        pos += n
        while (got := reader.next_record()) is not None:
            records.append(bytes(got))
    return records, through


@pytest.mark.parametrize("tail", [0, 1, 4095, 4096, 4097, 40_001])
def test_the_rest_of_a_large_record_is_read_into_place(tail: int) -> None:
    body = bytes(i % 253 for i in range(FIRST - 4 + tail))
    records, through = _receive(RecordReader(), _record(body))
    assert records == [body]
    if tail >= 4096:
        assert through == FIRST  # only the first piece went through the receive buffer
    else:
        assert through == FIRST + tail


@pytest.mark.parametrize("size", [rec.DIRECT_READ_MIN, 100_003, (1 << 20) + 1])
def test_storage_of_a_record_from_the_direct_read_size_is_reused(size: int) -> None:
    reader = RecordReader()
    first = _receive_one(reader, bytes([1]) * size)
    assert reader._spare is first  # kept for the next record of this size
    del first
    second = _receive_one(reader, bytes([2]) * size)
    assert reader._spare is second  # the same storage, filled again
    assert second == bytes([2]) * size
    kept = memoryview(second)
    third = _receive_one(reader, bytes([3]) * size)
    assert third is not second and kept[0] == 2  # a view of it is alive: not reused


def _receive_one(reader: RecordReader, body: bytes) -> bytes | bytearray:
    stream = _record(body)
    reader.receive_data(stream[:FIRST])
    pos = FIRST
    out = reader.next_record()
    while out is None:
        view = reader.read_buffer()
        n = min(FIRST if view is None else len(view), len(stream) - pos)
        if view is None:
            reader.receive_data(stream[pos : pos + n])
        else:
            view[:n] = stream[pos : pos + n]
            reader.advance(n)
        pos += n
        out = reader.next_record()
    return out


def test_an_oversized_record_is_refused_before_it_is_stored() -> None:
    reader = RecordReader(max_record=1 << 20)
    reader.receive_data(struct.pack(">I", LAST_FRAGMENT | ((1 << 20) + 1)) + bytes(60))
    with pytest.raises(RecordTooLarge):
        reader.next_record()
    assert reader._record is None
