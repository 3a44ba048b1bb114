"""The sans-io RPC core: record marking, messages, auth bodies, client/server connections.

A client and a server connection are joined by a fake link that carries bytes between them,
optionally in small chunks, as h11's ConnectionPair does.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cricket_xdr.rpc import message as m
from cricket_xdr.rpc.auth import AuthSys, AuthSysParams, verify_sys
from cricket_xdr.rpc.connection import NEED_DATA, ClientConnection, Reply, ServerConnection
from cricket_xdr.rpc.errors import (
    AuthError,
    CallDecodeError,
    GarbageArgs,
    ProcUnavail,
    ProgMismatch,
    ProgUnavail,
    RecordTooLarge,
    ReplyDecodeError,
    RpcMismatch,
    SystemErr,
)
from cricket_xdr.rpc.record import RecordReader, frame

PROG, VERS = 0x20000099, 1


def joined(pieces: list) -> bytes:
    return b"".join(bytes(p) for p in pieces)


class LinkPair:
    """A client and a server connection joined by a fake link."""

    def __init__(self, chunk: int | None = None, **client_kw: object) -> None:
        self.client = ClientConnection(**client_kw)  # type: ignore[arg-type]
        self.server = ServerConnection()
        self.chunk = chunk

    def _carry(self, data: bytes, conn: ClientConnection | ServerConnection) -> list:
        events = []
        step = self.chunk or max(len(data), 1)
        for i in range(0, len(data), step):
            conn.receive_data(data[i : i + step])
            while (event := conn.next_event()) is not NEED_DATA:
                events.append(event)
        return events

    def call(self, proc: int, args: bytes | list = b"", prog: int = PROG, vers: int = VERS):
        xid, pieces = self.client.send_call(prog, vers, proc, args)
        (call,) = self._carry(joined(pieces), self.server)
        return xid, call

    def reply(self, pieces: list) -> list[Reply]:
        return self._carry(joined(pieces), self.client)


# -- record marking -----------------------------------------------------------------------


def test_single_fragment_record_roundtrip():
    reader = RecordReader()
    reader.receive_data(joined(frame([b"abcd", b"efgh"], 8)))
    assert reader.next_record() == b"abcdefgh"
    assert reader.next_record() is None


def test_record_split_into_fragments_has_correct_headers():
    pieces = frame([b"0123456789"], 10, max_fragment=4)
    data = joined(pieces)
    headers = [struct.unpack_from(">I", data, off)[0] for off in (0, 8, 16)]
    assert headers == [4, 4, 0x80000000 | 2]
    reader = RecordReader()
    reader.receive_data(data)
    assert bytes(reader.next_record()) == b"0123456789"


def test_multi_fragment_record_fed_byte_by_byte():
    payload = bytes(range(256)) * 3
    data = joined(frame([payload[:100], payload[100:]], len(payload), max_fragment=7))
    reader = RecordReader()
    records = []
    for i in range(len(data)):
        reader.receive_data(data[i : i + 1])
        if (rec := reader.next_record()) is not None:
            records.append(bytes(rec))
    assert records == [payload]


def test_empty_record():
    reader = RecordReader()
    reader.receive_data(joined(frame([], 0)))
    assert reader.next_record() == b""


def test_two_records_in_one_chunk():
    reader = RecordReader()
    reader.receive_data(joined(frame([b"one!"], 4)) + joined(frame([b"two!"], 4, max_fragment=2)))
    assert bytes(reader.next_record()) == b"one!"
    assert bytes(reader.next_record()) == b"two!"


def test_huge_fragment_header_refused_before_buffering():
    reader = RecordReader(max_record=1 << 20)
    reader.receive_data(struct.pack(">I", 0x80000000 | 0x7FFFFFFF))
    with pytest.raises(RecordTooLarge) as info:
        reader.next_record()
    assert info.value.size == 0x7FFFFFFF and info.value.limit == 1 << 20
    with pytest.raises(RecordTooLarge):  # the reader stays failed
        reader.next_record()


def test_record_limit_counts_all_fragments():
    reader = RecordReader(max_record=10)
    reader.receive_data(struct.pack(">I", 6) + b"x" * 6 + struct.pack(">I", 0x80000000 | 6))
    with pytest.raises(RecordTooLarge) as info:
        reader.next_record()
    assert info.value.size == 12


def test_large_fragment_offers_direct_read_buffer():
    payload = bytes(range(256)) * 1024  # 256 KiB
    data = joined(frame([payload], len(payload)))
    reader = RecordReader()
    reader.receive_data(data[:1000])
    assert reader.next_record() is None
    pos = 1000
    while pos < len(data):
        view = reader.read_buffer()
        assert view is not None or len(data) - pos < 1 << 16
        if view is None:
            reader.receive_data(data[pos:])
            pos = len(data)
        else:
            with view:
                n = min(len(view), 50000)
                view[:n] = data[pos : pos + n]
            reader.advance(n)
            pos += n
        rec = reader.next_record()
    assert bytes(rec) == payload


# -- messages and auth --------------------------------------------------------------------


def test_call_header_layout_auth_none():
    header = m.encode_call_header(7, PROG, VERS, 3, m.NULL_AUTH, m.NULL_AUTH)
    assert struct.unpack(">10I", header) == (7, 0, 2, PROG, VERS, 3, 0, 0, 0, 0)


def test_call_with_auth_sys_roundtrip():
    params = AuthSysParams("node-a", 1000, 100, (4, 27), stamp=99)
    cred, verf = AuthSys(params).credentials()
    header = m.encode_call_header(5, PROG, VERS, 9, cred, verf)
    call = m.decode_call(header + b"ARGS")
    assert (call.xid, call.prog, call.vers, call.proc) == (5, PROG, VERS, 9)
    assert call.cred.flavor == m.AUTH_SYS and bytes(call.body) == b"ARGS"
    assert verify_sys(call.cred, call.verf) == params


def test_auth_sys_body_layout():
    body = AuthSysParams("ab", 1, 2, (3,), stamp=9).encode()
    assert body == struct.pack(">II", 9, 2) + b"ab\0\0" + struct.pack(">4I", 1, 2, 1, 3)


@pytest.mark.parametrize(
    "body",
    [b"", struct.pack(">II", 0, 300), struct.pack(">II", 0, 0) + struct.pack(">3I", 0, 0, 17)],
)
def test_malformed_auth_sys_body_is_badcred(body):
    with pytest.raises(AuthError) as info:
        verify_sys(m.OpaqueAuth(m.AUTH_SYS, body), m.NULL_AUTH)
    assert info.value.stat == m.AUTH_BADCRED


def test_auth_sys_refuses_oversized_fields():
    with pytest.raises(ValueError, match="17 gids"):
        AuthSysParams("x", 0, 0, tuple(range(17))).encode()
    with pytest.raises(ValueError, match="machinename of 256 bytes"):
        AuthSysParams("x" * 256, 0, 0).encode()


def test_decode_call_rejects_reply_and_short_records():
    with pytest.raises(CallDecodeError, match="message type 1"):
        m.decode_call(struct.pack(">3I", 1, 1, 2))
    with pytest.raises(CallDecodeError, match="too short"):
        m.decode_call(b"\0" * 8)
    with pytest.raises(CallDecodeError, match="truncated"):
        m.decode_call(struct.pack(">6I", 1, 0, 2, 1, 1, 1))
    with pytest.raises(CallDecodeError, match="exceeds 400"):
        m.decode_call(struct.pack(">8I", 1, 0, 2, 1, 1, 1, 1, 401) + b"\0" * 408)


def test_decode_call_with_other_rpc_version_keeps_xid():
    call = m.decode_call(struct.pack(">3I", 77, 0, 3))
    assert (call.xid, call.rpcvers) == (77, 3)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (m.encode_accepted_error(1, m.PROG_UNAVAIL), ProgUnavail),
        (m.encode_accepted_error(1, m.PROC_UNAVAIL), ProcUnavail),
        (m.encode_accepted_error(1, m.GARBAGE_ARGS), GarbageArgs),
        (m.encode_accepted_error(1, m.SYSTEM_ERR), SystemErr),
        (m.encode_accepted_error(1, m.PROG_MISMATCH, low=1, high=3), ProgMismatch),
        (m.encode_rpc_mismatch(1), RpcMismatch),
        (m.encode_auth_error(1, m.AUTH_TOOWEAK), AuthError),
    ],
)
def test_reply_states_map_to_exceptions(reply, expected):
    exc = m.decode_reply(reply).error(PROG, VERS, 4)
    assert type(exc) is expected
    assert f"program {PROG:#x} version {VERS} procedure 4" in str(exc)


def test_mismatch_and_auth_details_survive_decoding():
    exc = m.decode_reply(m.encode_accepted_error(1, m.PROG_MISMATCH, low=2, high=5)).error()
    assert (exc.low, exc.high) == (2, 5)
    exc = m.decode_reply(m.encode_rpc_mismatch(1)).error()
    assert (exc.low, exc.high) == (2, 2)
    exc = m.decode_reply(m.encode_auth_error(1, m.AUTH_TOOWEAK)).error()
    assert exc.stat == m.AUTH_TOOWEAK and "AUTH_TOOWEAK" in str(exc)


@pytest.mark.parametrize(
    "record",
    [
        struct.pack(">3I", 1, 0, 2),  # a CALL
        struct.pack(">3I", 1, 1, 7),  # unknown reply_stat
        struct.pack(">6I", 1, 1, 0, 0, 0, 9),  # unknown accept_stat
        struct.pack(">6I", 1, 1, 0, 0, 0, m.PROG_MISMATCH),  # missing low/high
        struct.pack(">4I", 1, 1, 1, 0),  # RPC_MISMATCH without versions
        struct.pack(">5I", 1, 1, 0, 0, 500),  # verifier too long
    ],
)
def test_malformed_replies_raise_reply_decode_error(record):
    with pytest.raises(ReplyDecodeError):
        m.decode_reply(record)


# -- connections over a fake link -------------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_call_and_success_reply_over_link(chunk):
    pair = LinkPair(chunk=chunk)
    xid, call = pair.call(3, [b"ab", b"cd"])
    assert (call.xid, call.prog, call.vers, call.proc, bytes(call.body)) == (
        xid,
        PROG,
        VERS,
        3,
        b"abcd",
    )
    (reply,) = pair.reply(pair.server.reply_success(xid, [b"RESULT!!"]))
    assert (reply.xid, reply.proc, bytes(reply.result())) == (xid, 3, b"RESULT!!")
    assert pair.client.outstanding == 0


def test_calls_split_into_fragments_by_client_and_server():
    pair = LinkPair(max_fragment=8)
    pair.server.max_fragment = 8
    xid, pieces = pair.client.send_call(PROG, VERS, 2, b"x" * 30)
    data = joined(pieces)
    assert struct.unpack_from(">I", data)[0] == 8  # first fragment, not last
    (call,) = pair._carry(data, pair.server)
    assert bytes(call.body) == b"x" * 30
    reply_bytes = joined(pair.server.reply_success(xid, [b"y" * 20]))
    assert struct.unpack_from(">I", reply_bytes)[0] == 8
    (reply,) = pair.reply([reply_bytes])
    assert bytes(reply.result()) == b"y" * 20


def test_replies_matched_by_xid_in_any_order():
    pair = LinkPair()
    calls = [pair.call(proc, b"") for proc in (1, 2, 3)]
    pieces = []
    for xid, call in reversed(calls):
        pieces += pair.server.reply_success(xid, [struct.pack(">I", call.proc)])
    replies = pair.reply(pieces)
    assert [(r.xid, r.proc, bytes(r.result())) for r in replies] == [
        (xid, call.proc, struct.pack(">I", call.proc)) for xid, call in reversed(calls)
    ]


def test_reply_for_forgotten_xid_is_dropped():
    pair = LinkPair()
    xid, _ = pair.call(1)
    pair.client.forget(xid)
    assert pair.reply(pair.server.reply_success(xid)) == []
    assert pair.client.dropped == 1


def test_error_reply_over_link_names_the_call():
    pair = LinkPair()
    xid, _ = pair.call(4, prog=PROG, vers=2)
    (reply,) = pair.reply(pair.server.reply_error(xid, m.PROG_MISMATCH, low=1, high=1))
    with pytest.raises(ProgMismatch, match=f"program {PROG:#x} version 2 procedure 4"):
        reply.result()


def test_malformed_reply_to_known_xid_fails_only_that_call():
    pair = LinkPair()
    xid, _ = pair.call(1)
    (reply,) = pair.reply(frame([struct.pack(">3I", xid, 1, 9)], 12))
    with pytest.raises(ReplyDecodeError, match="reply_stat 9"):
        reply.result()


def test_call_record_to_client_breaks_the_stream():
    pair = LinkPair()
    pair.call(1)
    with pytest.raises(ReplyDecodeError, match="not a reply"):
        pair.reply(frame([struct.pack(">3I", 1, 0, 2)], 12))


def test_auth_sys_client_sends_its_credential():
    params = AuthSysParams("client", 5, 6)
    pair = LinkPair(auth=AuthSys(params))
    _, call = pair.call(1, b"zz\0\0")
    assert call.cred.flavor == m.AUTH_SYS and verify_sys(call.cred, call.verf) == params
    assert bytes(call.body) == b"zz\0\0"


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(st.binary(max_size=300), min_size=1, max_size=5),
    max_fragment=st.integers(min_value=1, max_value=64),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=10),
)
def test_any_fragmenting_and_any_chunking_reassembles(records, max_fragment, cuts):
    stream = b"".join(joined(frame([r], len(r), max_fragment)) for r in records)
    reader = RecordReader()
    got = []
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    for start, end in zip(bounds, bounds[1:], strict=False):
        reader.receive_data(stream[start:end])
        while (rec := reader.next_record()) is not None:
            got.append(bytes(rec))
    assert got == records
