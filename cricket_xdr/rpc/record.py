"""Record marking for RPC over byte streams (RFC 5531 section 11), without I/O.

A record is sent as one or more fragments, each behind a 4-byte big-endian header::

    | L | length (31 bits) |  fragment bytes ...
      L = 1 on the record's last fragment

`RecordReader` reassembles records from bytes fed to it and refuses a record larger than its
maximum as soon as a fragment header announces it, before buffering anything of it (beyond
its first 64 bytes, when a placer may take it: a bulk record of the size a caller's buffer
expects is received straight into that buffer, whatever the maximum).
A `BufferBudget` shared by the readers of a server bounds what their incomplete large records
hold together: a reader charges a fragment's size before it allocates room for it and gives it
back when the record is complete (or `release()` when its connection ends).
`frame()` turns a record (a list of bytes-like pieces) into a list of pieces to send, split at a
maximum fragment size, without joining the pieces.
"""

from __future__ import annotations

import struct
import sys
import threading
from collections.abc import Callable, Sequence

from .errors import BufferLimit, RecordTooLarge

__all__ = [
    "LAST_FRAGMENT",
    "MAX_FRAGMENT",
    "DEFAULT_MAX_RECORD",
    "Buffer",
    "BufferBudget",
    "frame",
    "nbytes",
    "RecordReader",
    "Placed",
    "Placer",
]

LAST_FRAGMENT = 0x80000000
MAX_FRAGMENT = 0x7FFFFFFF
DEFAULT_MAX_RECORD = 1 << 30
DIRECT_READ_MIN = 1 << 16  # records at least this large are assembled in place (budget, placer)
DIRECT_TAIL_MIN = 1 << 12  # the rest of a fragment read straight into place, at least this
REUSE_MIN = DIRECT_READ_MIN  # records at least this large reuse the last one's storage when free

Buffer = bytes | bytearray | memoryview
_HEADER = struct.Struct(">I")
_PLACER_LOOK = 64  # bytes of a record's start shown to the placer


class Placed(bytes):
    """A record whose bulk part was received into a buffer a placer chose: these are the
    record's other bytes (its head and what follows the placed part)."""


Placer = Callable[[bytes, int], "tuple[int, memoryview] | None"]
"""`placer(start, size)`: `start` holds the first bytes of a `size`-byte record (up to 64);
return `(head, view)` to have record bytes [head, head + len(view)) received into `view`
(`head <= len(start)`), or None to assemble the record as usual."""


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


class BufferBudget:
    """Bytes that the incomplete records of several readers may hold at once (thread-safe).

    `what` names the budget in the BufferLimit a refused record raises (e.g. "the server's
    --max-buffered")."""

    def __init__(self, limit: int, what: str = "the buffer budget") -> None:
        if limit <= 0:
            raise ValueError(f"BufferBudget: limit must be positive, got {limit}")
        self.limit = limit
        self.what = what
        self.used = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> None:
        """Charge `n` bytes; BufferLimit when they do not fit."""
        with self._lock:
            if self.used + n > self.limit:
                raise BufferLimit(n, self.limit, self.used, self.what)
            self.used += n

    def give(self, n: int) -> None:
        with self._lock:
            self.used -= n


class RecordReader:
    """Reassembles records from a byte stream.

    `receive_data(data)` feeds bytes; `next_record()` returns a complete record or None when
    more bytes are needed. For large fragments, `read_buffer()` offers the place the next bytes
    belong in, so a transport can `recv_into` it directly, then report `advance(n)`.
    After RecordTooLarge the reader is failed and raises it again on every use.

    `placer` (optional, see `Placer`) may put the bulk of a large single-fragment record
    straight into a buffer of its choice; `next_record()` then returns a `Placed` record. Such
    a record may exceed `max_record`.
    """

    placer: Placer | None = None
    placeable: Callable[[bytes], bool] | None = None
    """`placeable(start)`: whether the placer may take a record that starts with `start` (up
    to 4 bytes, maybe none yet); lets a record over the maximum be refused early."""
    budget: BufferBudget | None = None  # charged for fragments of DIRECT_READ_MIN or more

    def __init__(self, max_record: int = DEFAULT_MAX_RECORD) -> None:
        self.max_record = max_record
        self._charged = 0  # bytes taken from `budget` for the record being assembled
        self._buf = bytearray()  # received bytes not yet placed in a record
        self._record: bytearray | None = None  # the record being assembled
        self._filled = 0  # bytes of _record received so far
        self._frag_end = 0  # where the current fragment ends in _record
        self._in_fragment = False
        self._last = False
        self._failed: RecordTooLarge | None = None
        self._ready: list[bytes] = []  # whole records taken straight from receive_data
        self._spare: bytearray | None = None  # the last large record, reused once released
        self._place: memoryview | None = None  # where a placed record's bulk goes
        self._placed = 0  # bytes of _place received so far
        self._place_head = b""  # the placed record's bytes before its bulk
        self._place_rest = 0  # bytes of the record after its bulk, still to read
        self._place_tail = bytearray()

    @property
    def idle(self) -> bool:
        """True when no part of a record has been received."""
        return not self._buf and self._record is None and not self._ready and self._place is None

    def receive_data(self, data: Buffer) -> None:
        buf = self._buf
        if not buf and self._record is None and self._place is None:
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
        place = self._place
        if place is not None:
            if self._buf or self._placed >= len(place):
                return None
            return place[self._placed :]
        if (
            self._in_fragment
            and not self._buf
            and self._record is not None
            and self._frag_end - self._filled >= DIRECT_TAIL_MIN
        ):
            return memoryview(self._record)[self._filled : self._frag_end]
        return None

    def advance(self, n: int) -> None:
        """`n` bytes were written into the view `read_buffer()` gave."""
        if self._place is not None:
            self._placed += n
        else:
            self._filled += n

    def next_record(self) -> bytes | bytearray | None:
        if self._ready:
            return self._ready.pop(0)
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        while True:
            if self._place is not None:
                return self._next_placed()
            if not self._in_fragment:
                if len(buf) < 4:
                    return None
                (header,) = _HEADER.unpack_from(buf)
                length = header & MAX_FRAGMENT
                last = bool(header & LAST_FRAGMENT)
                size = self._filled + length
                if size > self.max_record:
                    # Only a bulk record a placer takes whole may be larger (its size is what
                    # the caller's buffer expects); its first bytes decide that.
                    if (
                        self.placer is not None
                        and self._record is None
                        and last
                        and (self.placeable is None or self.placeable(bytes(buf[4:8])))
                    ):
                        if len(buf) < 4 + min(length, _PLACER_LOOK):
                            return None
                        if self._start_placed(length):
                            continue
                    self._failed = RecordTooLarge(size, self.max_record)
                    raise self._failed
                if self._record is None and last and len(buf) >= 4 + length:
                    whole = bytes(buf[4 : 4 + length])
                    del buf[: 4 + length]
                    return whole
                if (
                    self.placer is not None
                    and self._record is None
                    and last
                    and length >= DIRECT_READ_MIN
                    and self._start_placed(length)
                ):
                    continue
                if self.budget is not None and length >= DIRECT_READ_MIN:
                    try:
                        self.budget.take(length)
                    except BufferLimit as exc:
                        self.release()
                        self._failed = exc
                        raise
                    self._charged += length
                del buf[:4]
                if self._record is None:
                    self._record = self._new_record(length) if last else bytearray(length)
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
                if self._charged:
                    self.release()
                return record

    def release(self) -> None:
        """Give back what the record being assembled took from `budget` (when it is complete,
        and when its connection ends)."""
        if self._charged and self.budget is not None:
            self.budget.give(self._charged)
        self._charged = 0

    def _new_record(self, length: int) -> bytearray:
        """Storage for a single-fragment record: the last large one again when nothing refers
        to it any more (records of a chunked copy have one size), else a new one."""
        if length < REUSE_MIN:
            return bytearray(length)
        spare = self._spare
        # References: self._spare, `spare` and getrefcount's argument; a view would add one.
        if spare is not None and len(spare) == length and sys.getrefcount(spare) == 3:
            return spare
        self._spare = spare = bytearray(length)
        return spare

    def _start_placed(self, length: int) -> bool:
        """Ask the placer where a new record's bulk goes; True when it chose a buffer."""
        buf = self._buf
        assert self.placer is not None
        chosen = self.placer(bytes(buf[4 : 4 + _PLACER_LOOK]), length)
        if chosen is None:
            return False
        head, view = chosen
        if not 0 <= head <= min(len(buf) - 4, _PLACER_LOOK) or head + len(view) > length:
            return False
        self._place_head = bytes(buf[4 : 4 + head])
        del buf[: 4 + head]
        self._place = view
        self._placed = 0
        self._place_rest = length - head - len(view)
        self._place_tail = bytearray()
        return True

    def _next_placed(self) -> Placed | None:
        """Move buffered bytes into the placed record; the record once it is complete."""
        place = self._place
        assert place is not None
        buf = self._buf
        if buf:
            take = min(len(buf), len(place) - self._placed)
            if take:
                place[self._placed : self._placed + take] = buf[:take]
                del buf[:take]
                self._placed += take
            if self._placed >= len(place) and buf and self._place_rest:
                take = min(len(buf), self._place_rest)
                self._place_tail += buf[:take]
                del buf[:take]
                self._place_rest -= take
        if self._placed < len(place) or self._place_rest:
            return None
        record = Placed(self._place_head + self._place_tail)
        self._place = None
        self._place_head = b""
        self._place_tail = bytearray()
        return record
