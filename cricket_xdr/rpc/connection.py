"""The sans-io RPC connection: bytes in, events out; calls and replies out as bytes.

`ClientConnection` frames calls, reassembles reply records and matches them to calls by xid.
`ServerConnection` reassembles call records and frames replies. Neither touches a socket:
transports (`client`, `server`) feed them received bytes and send what they return.
"""

from __future__ import annotations

import enum
import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from .auth import AuthNone, ClientAuth
from .errors import LocalRpcError, ReplyDecodeError
from .message import (
    NULL_AUTH,
    CallMessage,
    OpaqueAuth,
    ReplyMessage,
    decode_call,
    decode_reply,
    encode_accepted_error,
    encode_auth_error,
    encode_call_header,
    encode_rpc_mismatch,
    encode_success_header,
    reply_xid,
)
from .record import (
    DEFAULT_MAX_RECORD,
    LAST_FRAGMENT,
    MAX_FRAGMENT,
    Buffer,
    BufferBudget,
    Placed,
    RecordReader,
    frame,
    nbytes,
)

__all__ = ["NEED_DATA", "NeedData", "Reply", "ClientConnection", "ServerConnection", "Args"]

Args = Buffer | Sequence[Buffer]


class NeedData(enum.Enum):
    NEED_DATA = "NEED_DATA"


NEED_DATA: Final = NeedData.NEED_DATA
"""Returned by next_event() when more bytes must be received first."""

_MARK_CALL_NONE = struct.Struct(">11I")  # record mark + call header with AUTH_NONE
_REPLY_SUCCESS = struct.Struct(">6I")  # xid, REPLY, MSG_ACCEPTED, AUTH_NONE, 0, SUCCESS
_MARK_REPLY_EMPTY = struct.Struct(">7I")  # record mark + SUCCESS reply, AUTH_NONE, no results
_JOIN_MAX = 4096  # pieces of records up to this size are joined into one bytes object
_U32 = struct.Struct(">I")


@dataclass(slots=True)
class Reply:
    """A reply matched to the call it answers."""

    xid: int
    prog: int
    vers: int
    proc: int
    message: ReplyMessage | None  # None for a plain SUCCESS (then `body` holds the results)
    error: LocalRpcError | None = None  # the reply could not be decoded
    body: Buffer = b""
    placed: bool = False  # the result's bulk went into the call's `into` view; body: the rest

    def result(self) -> Buffer:
        """The result body, or raise the error the reply stands for."""
        if self.error is not None:
            raise self.error
        msg = self.message
        if msg is None:
            return self.body
        exc = msg.error(self.prog, self.vers, self.proc)
        if exc is not None:
            raise exc
        return msg.body


class _Connection:
    def __init__(self, max_record: int, max_fragment: int) -> None:
        reader = self._reader = RecordReader(max_record)
        self.max_fragment = max_fragment
        # The byte-feeding calls go straight to the reader (they are on every call's path).
        self.receive_data = reader.receive_data
        self.read_buffer = reader.read_buffer
        self.advance = reader.advance

    @property
    def max_record(self) -> int:
        return self._reader.max_record

    @max_record.setter
    def max_record(self, value: int) -> None:
        self._reader.max_record = value

    def use_budget(self, budget: BufferBudget | None) -> None:
        """Charge large incomplete records to `budget` (see `record.BufferBudget`)."""
        self._reader.budget = budget

    def release(self) -> None:
        """The connection ended: give back what its incomplete record took from the budget."""
        self._reader.release()

    @property
    def idle(self) -> bool:
        """No partial record is buffered."""
        return self._reader.idle

    receive_data: Callable[[Buffer], None]
    """Feed received bytes."""
    read_buffer: Callable[[], memoryview | None]
    """See RecordReader.read_buffer (receive straight into a large record)."""
    advance: Callable[[int], None]
    """`n` bytes were received into the view read_buffer() gave."""


class ClientConnection(_Connection):
    """Client side: `send_call()` gives the bytes of a call; `next_event()` gives Replies."""

    def __init__(
        self,
        *,
        auth: ClientAuth | None = None,
        max_record: int = DEFAULT_MAX_RECORD,
        max_fragment: int = MAX_FRAGMENT,
        first_xid: int | None = None,
    ) -> None:
        super().__init__(max_record, max_fragment)
        self.auth: ClientAuth = auth if auth is not None else AuthNone()
        self._auth_none = isinstance(self.auth, AuthNone)
        self._xid = random.getrandbits(32) if first_xid is None else first_xid & 0xFFFFFFFF
        self._outstanding: dict[int, tuple[int, int, int]] = {}
        self._into: dict[int, tuple[bytes, memoryview]] = {}  # xid -> (result head, bulk view)
        self.dropped = 0  # replies that matched no outstanding call
        self._reader.placer = self._place
        self._reader.placeable = self._placeable

    @property
    def outstanding(self) -> int:
        return len(self._outstanding)

    def send_call(
        self,
        prog: int,
        vers: int,
        proc: int,
        args: Args = b"",
        into: tuple[bytes, memoryview] | None = None,
    ) -> tuple[int, list[Buffer]]:
        """Frame a call: returns its xid and the pieces to send, in order.

        `into = (head, view)`: when the result body turns out to be `head`, then `len(view)`
        bytes, then XDR padding, those bytes are received straight into `view` and the Reply
        is `placed` (its body: `head` and the padding); any other result arrives as usual.
        """
        xid = self._xid
        while xid in self._outstanding:
            xid = (xid + 1) & 0xFFFFFFFF
        self._xid = (xid + 1) & 0xFFFFFFFF
        pieces: Sequence[Buffer]
        if type(args) is bytes:
            size = len(args)
            pieces = (args,) if size else ()
        else:
            pieces = args if isinstance(args, (list, tuple)) else (args,)  # type: ignore[assignment]
            size = 0
            for piece in pieces:
                size += nbytes(piece)
        if self._auth_none and size + 40 <= self.max_fragment:
            head = _MARK_CALL_NONE.pack(
                LAST_FRAGMENT | (size + 40), xid, 0, 2, prog, vers, proc, 0, 0, 0, 0
            )
            out: list[Buffer]
            if not pieces:
                out = [head]
            elif size <= _JOIN_MAX:  # one piece: one plain send, and deferrable
                out = [b"".join((head, *pieces))]
            else:
                out = [head, *pieces]
        else:
            cred, verf = self.auth.credentials()
            header = encode_call_header(xid, prog, vers, proc, cred, verf)
            out = frame([header, *pieces], len(header) + size, self.max_fragment)
        self._outstanding[xid] = (prog, vers, proc)
        if into is not None:
            self._into[xid] = into
        return xid, out

    def forget(self, xid: int) -> None:
        """Stop waiting for `xid` (timed out); its reply, if one comes, is dropped."""
        self._outstanding.pop(xid, None)
        self._into.pop(xid, None)

    def forget_all(self) -> list[int]:
        """Drop every outstanding call (the connection failed); returns their xids."""
        xids = list(self._outstanding)
        self._outstanding.clear()
        self._into.clear()
        return xids

    def _placeable(self, start: bytes) -> bool:
        """RecordReader: a record starting with `start` (its xid, when 4 bytes have come) may
        be a reply to a call sent with `into`."""
        if not self._into:
            return False
        return len(start) < 4 or _U32.unpack(start)[0] in self._into

    def _place(self, start: bytes, size: int) -> tuple[int, memoryview] | None:
        """RecordReader placer: a plain SUCCESS reply to a call sent with `into`."""
        if len(start) < 24:
            return None
        xid, mtype, stat, vflav, vlen, astat = _REPLY_SUCCESS.unpack_from(start)
        into = self._into.get(xid)
        if into is None or mtype != 1 or stat or vflav or vlen or astat:
            return None
        head, view = into
        end = 24 + len(head)
        n = len(view)
        if start[24:end] != head or size != end + n + (-n & 3) or len(start) < end:
            return None
        return end, view

    def take_reply(self, data: Buffer, xid: int) -> Buffer | None:
        """Feed `data` (just received); when it is exactly one whole record that is a plain
        SUCCESS reply to `xid` and nothing else was buffered, take it at once and return its
        result body (the common synchronous call, without a Reply); else None, and the data
        is fed as `receive_data` feeds it (`next_event` then gives what it holds)."""
        reader = self._reader
        size = len(data) - 4  # type: ignore[arg-type]
        if (
            size >= 24
            and not reader._buf
            and reader._record is None
            and reader._place is None
            and not reader._ready
            and not self._into
            and _U32.unpack_from(data)[0] == LAST_FRAGMENT | size
            and size <= reader.max_record
        ):
            rxid, mtype, stat, vflav, vlen, astat = _REPLY_SUCCESS.unpack_from(data, 4)
            if rxid == xid and mtype == 1 and not (stat or vflav or vlen or astat):
                self._outstanding.pop(xid, None)
                return bytes(data[28:])
        reader.receive_data(data)
        return None

    def next_event(self) -> Reply | NeedData:
        """The next Reply, or NEED_DATA.

        Raises RecordTooLarge or ReplyDecodeError when the stream is broken (a record that is
        not a reply at all); a malformed reply to a known xid becomes that call's error.
        """
        reader = self._reader
        while True:
            # Inlined RecordReader.idle: nothing buffered is the common case on every call.
            if (
                not reader._ready
                and not reader._buf
                and reader._record is None
                and reader._place is None
            ):
                return NEED_DATA
            record = reader.next_record()
            if record is None:
                return NEED_DATA
            size = len(record)
            if type(record) is Placed:
                xid = _REPLY_SUCCESS.unpack_from(record)[0]
                self._into.pop(xid, None)
                call = self._outstanding.pop(xid, None)
                if call is None:
                    self.dropped += 1
                    continue
                return Reply(xid, call[0], call[1], call[2], None, None, record[24:], True)
            if size >= 24:
                xid, mtype, stat, vflav, vlen, astat = _REPLY_SUCCESS.unpack_from(record)
                if mtype == 1 and not (stat or vflav or vlen or astat):  # SUCCESS, AUTH_NONE
                    call = self._outstanding.pop(xid, None)
                    if self._into:
                        self._into.pop(xid, None)
                    if call is None:
                        self.dropped += 1
                        continue
                    body = record[24:] if size < 65536 else memoryview(record)[24:]
                    return Reply(xid, call[0], call[1], call[2], None, None, body)
            xid = reply_xid(record)
            if xid is None:
                raise ReplyDecodeError(f"received a {len(record)}-byte record that is not a reply")
            call = self._outstanding.pop(xid, None)
            self._into.pop(xid, None)
            if call is None:
                self.dropped += 1
                continue
            prog, vers, proc = call
            try:
                return Reply(xid, prog, vers, proc, decode_reply(record))
            except ReplyDecodeError as exc:
                return Reply(xid, prog, vers, proc, None, exc)


class ServerConnection(_Connection):
    """Server side: `next_event()` gives CallMessages; `reply_*()` give the bytes to send."""

    def __init__(
        self, *, max_record: int = DEFAULT_MAX_RECORD, max_fragment: int = MAX_FRAGMENT
    ) -> None:
        super().__init__(max_record, max_fragment)

    def take_call(self, data: Buffer) -> CallMessage | None:
        """Feed `data` (just received); when it is exactly one whole record and nothing else
        was buffered, the call it holds at once (CallDecodeError as `next_event`); else None,
        and the data is fed as `receive_data` feeds it (`next_event` gives what it holds)."""
        reader = self._reader
        size = len(data) - 4  # type: ignore[arg-type]
        if (
            size >= 40
            and not reader._buf
            and reader._record is None
            and not reader._ready
            and _U32.unpack_from(data)[0] == LAST_FRAGMENT | size
            and size <= reader.max_record
        ):
            return decode_call(bytes(data[4:]))
        reader.receive_data(data)
        return None

    def next_event(self) -> CallMessage | NeedData:
        """The next call, or NEED_DATA. Raises RecordTooLarge or CallDecodeError (drop the peer)."""
        reader = self._reader
        # Inlined RecordReader.idle: nothing buffered is the common case after each call.
        if not reader._ready and not reader._buf and reader._record is None:
            return NEED_DATA
        record = reader.next_record()
        if record is None:
            return NEED_DATA
        return decode_call(record)

    def _framed(self, head: bytes, body: Sequence[Buffer] = ()) -> list[Buffer]:
        size = len(head)
        for piece in body:
            size += nbytes(piece)
        if size <= self.max_fragment:
            if size <= _JOIN_MAX:  # one piece: one plain send
                return [b"".join((_U32.pack(LAST_FRAGMENT | size), head, *body))]
            return [_U32.pack(LAST_FRAGMENT | size) + head, *body]
        return frame([head, *body], size, self.max_fragment)

    def reply_success(
        self, xid: int, body: Sequence[Buffer] = (), verf: OpaqueAuth = NULL_AUTH
    ) -> list[Buffer]:
        if verf is NULL_AUTH:
            if not body:
                return [_MARK_REPLY_EMPTY.pack(LAST_FRAGMENT | 24, xid, 1, 0, 0, 0, 0)]
            if len(body) == 1 and (size := 24 + len(body[0])) <= min(_JOIN_MAX, self.max_fragment):
                head = _MARK_REPLY_EMPTY.pack(LAST_FRAGMENT | size, xid, 1, 0, 0, 0, 0)
                return [head + body[0]]  # a small result: one piece
        return self._framed(encode_success_header(xid, verf), body)

    def reply_error(
        self, xid: int, accept_stat: int, *, low: int = 0, high: int = 0
    ) -> list[Buffer]:
        return self._framed(encode_accepted_error(xid, accept_stat, low=low, high=high))

    def reply_rpc_mismatch(self, xid: int) -> list[Buffer]:
        return self._framed(encode_rpc_mismatch(xid))

    def reply_auth_error(self, xid: int, auth_stat: int) -> list[Buffer]:
        return self._framed(encode_auth_error(xid, auth_stat))
