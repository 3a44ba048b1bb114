"""Record marking for RPC over byte streams (RFC 5531 section 11), without I/O.

A record is sent as one or more fragments, each behind a 4-byte big-endian header::

    | L | length (31 bits) |  fragment bytes ...
      L = 1 on the record's last fragment

`RecordReader` reassembles records from bytes fed to it and refuses a record larger than its
maximum as soon as a fragment header announces it, before buffering anything of it.
`frame()` turns a record (a list of bytes-like pieces) into a list of pieces to send, split at a
maximum fragment size, without joining the pieces.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from .errors import RecordTooLarge

__all__ = [
    "LAST_FRAGMENT",
    "MAX_FRAGMENT",
    "DEFAULT_MAX_RECORD",
    "Buffer",
    "frame",
    "nbytes",
    "RecordReader",
]

LAST_FRAGMENT = 0x80000000
MAX_FRAGMENT = 0x7FFFFFFF
DEFAULT_MAX_RECORD = 1 << 30
DIRECT_READ_MIN = 1 << 16  # fragments left at least this large are read straight into place

Buffer = bytes | bytearray | memoryview
_HEADER = struct.Struct(">I")


def nbytes(piece: object) -> int:
    """Length in bytes of a bytes-like object (numpy arrays included)."""
    if type(piece) is bytes or type(piece) is bytearray:
        return len(piece)  # type: ignore[arg-type]
    return memoryview(piece).nbytes  # type: ignore[arg-type]


def frame(pieces: Sequence[Buffer], total: int, max_fragment: int = MAX_FRAGMENT) -> list[Buffer]:
    """Pieces of one record (`total` bytes in all) with fragment headers in front."""
    if total <= max_fragment:
        return [_HEADER.pack(LAST_FRAGMENT | total), *pieces]
    if not 0 < max_fragment <= MAX_FRAGMENT:
        raise ValueError(f"fragment size {max_fragment} outside 1..{MAX_FRAGMENT}")
    out: list[Buffer] = []
    left = total
    room = 0  # bytes still to place in the current fragment
    for piece in pieces:
        view = memoryview(piece).cast("B") if not isinstance(piece, bytes) else memoryview(piece)
        pos = 0
        size = len(view)
        while pos < size:
            if room == 0:
                room = min(max_fragment, left)
                left -= room
                out.append(_HEADER.pack((LAST_FRAGMENT if left == 0 else 0) | room))
            take = min(room, size - pos)
            out.append(view[pos : pos + take])
            pos += take
            room -= take
    if total == 0:
        out.append(_HEADER.pack(LAST_FRAGMENT))
    return out


class RecordReader:
    """Reassembles records from a byte stream.

    `receive_data(data)` feeds bytes; `next_record()` returns a complete record or None when
    more bytes are needed. For large fragments, `read_buffer()` offers the place the next bytes
    belong in, so a transport can `recv_into` it directly, then report `advance(n)`.
    After RecordTooLarge the reader is failed and raises it again on every use.
    """

    def __init__(self, max_record: int = DEFAULT_MAX_RECORD) -> None:
        self.max_record = max_record
        self._buf = bytearray()  # received bytes not yet placed in a record
        self._record: bytearray | None = None  # the record being assembled
        self._filled = 0  # bytes of _record received so far
        self._frag_end = 0  # where the current fragment ends in _record
        self._in_fragment = False
        self._last = False
        self._failed: RecordTooLarge | None = None
        self._ready: list[bytes] = []  # whole records taken straight from receive_data

    @property
    def idle(self) -> bool:
        """True when no part of a record has been received."""
        return not self._buf and self._record is None and not self._ready

    def receive_data(self, data: Buffer) -> None:
        buf = self._buf
        if not buf and self._record is None:
            # Fast path: the data is exactly one single-fragment record.
            size = len(data) - 4
            if (
                size >= 0
                and _HEADER.unpack_from(data)[0] == LAST_FRAGMENT | size
                and size <= self.max_record
            ):
                self._ready.append(bytes(data[4:]))
                return
        buf += data

    def read_buffer(self) -> memoryview | None:
        """Where the next received bytes go when they continue a large fragment, else None."""
        if (
            self._in_fragment
            and not self._buf
            and self._record is not None
            and self._frag_end - self._filled >= DIRECT_READ_MIN
        ):
            return memoryview(self._record)[self._filled : self._frag_end]
        return None

    def advance(self, n: int) -> None:
        """`n` bytes were written into the view `read_buffer()` gave."""
        self._filled += n

    def next_record(self) -> bytes | bytearray | None:
        if self._ready:
            return self._ready.pop(0)
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        while True:
            if not self._in_fragment:
                if len(buf) < 4:
                    return None
                (header,) = _HEADER.unpack_from(buf)
                length = header & MAX_FRAGMENT
                last = bool(header & LAST_FRAGMENT)
                size = self._filled + length
                if size > self.max_record:
                    self._failed = RecordTooLarge(size, self.max_record)
                    raise self._failed
                if self._record is None and last and len(buf) >= 4 + length:
                    whole = bytes(buf[4 : 4 + length])
                    del buf[: 4 + length]
                    return whole
                del buf[:4]
                if self._record is None:
                    self._record = bytearray(length)
                else:
                    self._record.extend(bytes(length))
                self._frag_end = size
                self._last = last
                self._in_fragment = True
            record = self._record
            assert record is not None
            take = min(len(buf), self._frag_end - self._filled)
            if take:
                record[self._filled : self._filled + take] = buf[:take]
                del buf[:take]
                self._filled += take
            if self._filled < self._frag_end:
                return None
            self._in_fragment = False
            if self._last:
                self._record = None
                self._filled = self._frag_end = 0
                return record
