"""The client's bounded log of the calls made since the last checkpoint, replayed against a
restored server so that a server crash loses no acknowledged work.

Every call the server counts (all but the procedures marked `@uncounted` in rpc_spec/cricket.x:
`CricketService._run` counts each call it dispatches) gets the next sequence number here, in
the order it is sent (the server executes a connection's calls in that order), and its
procedure's name goes into a ring of the last `RECENT` names (one list
store: no copy, no allocation). Once the program took a checkpoint
(`cricket_client.checkpoint`, which starts the log afresh) or `enable_replay(conn)` was
called, each call is also logged with a copy of its arguments, host data included. After a
reconnect the restored session says how many calls its checkpoint holds (SESSION_CALLS);
the logged calls after that number are sent again, in order, and a replayed allocation or
creation must give the same pointer or handle as the first time, else `ReplayDiverged`.

A checkpoint the client did not take (`cricket-checkpoint --server`, SIGUSR1, periodic or
final checkpoints of the server) is not seen by it, so nothing is logged for it: when the
restored session holds fewer calls than were sent, those calls cannot be replayed and the
resume raises `CallsLost` naming them (from the ring); the session goes on from the restored
state, numbered as the server numbers it.

Bounded: when the log would hold more than `max_bytes`, the client first takes a new
checkpoint at the path of its last one (which empties the log); without a known path it
stops logging, and a later reconnect raises `CallsLost` instead of replaying.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import CricketClientError
from .facts import read_only, uncounted

if TYPE_CHECKING:
    from .connection import Connection

__all__ = [
    "RECENT",
    "ReplayDiverged",
    "ReplayLog",
    "MAX_BYTES_ENV",
    "enable_replay",
    "renew_log",
    "replay",
]

log = logging.getLogger("cricket_client.replay")

MAX_BYTES_ENV = "CRICKET_REPLAY_LOG_BYTES"
DEFAULT_MAX_BYTES = 256 << 20
ENTRY_OVERHEAD = 64
# results whose value a replay must reproduce exactly (pointers and handles)
_IDENTITY_RESULTS = frozenset(
    {"ptr_result", "handle_result", "pitch_result", "module_load_result", "graph_exec_result"}
)
RECENT = 256  # names of the last counted calls kept, to name the calls a restore lacks
_RECENT_MASK = RECENT - 1
EARLY_KEPT_BYTES = 1 << 20  # bytes of the last early-returned copies kept to send again


class ReplayDiverged(CricketClientError):
    """A replayed call answered otherwise than the first time (another pointer or handle)."""


def _freeze(value: Any) -> tuple[Any, int]:
    """(a copy that later changes of the caller's buffers cannot reach, bytes it holds)."""
    if isinstance(value, bytes | str | int | float | bool) or value is None:
        return value, len(value) if isinstance(value, bytes) else 0
    if isinstance(value, list | tuple):
        items = [_freeze(v) for v in value]
        return type(value)(v for v, _ in items), sum(n for _, n in items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes, size = {}, 0
        for f in dataclasses.fields(value):
            frozen, n = _freeze(getattr(value, f.name))
            changes[f.name] = frozen
            size += n
        return dataclasses.replace(value, **changes), size
    try:
        data = bytes(memoryview(value).cast("B"))
    except TypeError:
        return value, 0
    return data, len(data)


@dataclass
class Entry:
    seq: int
    proc: str
    args: tuple[Any, ...]
    size: int
    expect: Any = None  # the first reply, for calls that give pointers or handles


class ReplayLog:
    """Sequence numbers of a connection's counted calls, and the log since the last checkpoint
    (each `Connection` has one: `conn.replay_log`)."""

    def __init__(self, max_bytes: int | None = None) -> None:
        if max_bytes is None:
            max_bytes = int(os.environ.get(MAX_BYTES_ENV) or DEFAULT_MAX_BYTES)
        self.max_bytes = max_bytes
        self.seq = 0  # counted calls sent on this session
        self.base = 0  # seq at the checkpoint the log starts from
        self.enabled = False
        self.overflowed = False
        self.checkpoint_path: str | None = None
        self.entries: deque[Entry] = deque()
        self.bytes = 0
        self.renewing = False
        self.recent: list[str] = [""] * RECENT  # recent[seq % RECENT]: the name of call seq
        self.uncounted = uncounted()
        # the last copies that returned early (cricket_client.early_copies): seq -> call
        self.early: dict[int, tuple[str, tuple[Any, ...]]] = {}
        self._early_bytes: deque[tuple[int, int]] = deque()  # (seq, bytes), oldest first
        self._early_total = 0

    def restart_at(self, seq: int, path: str | None = None) -> None:
        """A checkpoint holds every call up to `seq`: the log keeps what came after it (calls
        of other threads may have followed), or starts now if it was not logging."""
        if self.enabled and not self.overflowed:
            self.base = seq
            while self.entries and self.entries[0].seq <= seq:
                self.bytes -= self.entries.popleft().size
        else:  # calls after `seq` sent before now were not logged: replay only from now
            self.base = max(seq, self.seq)
            self.entries.clear()
            self.bytes = 0
        self.enabled = True
        self.overflowed = False
        if path is not None:
            self.checkpoint_path = path

    @property
    def logging(self) -> bool:
        """Whether calls are logged (not only numbered) now."""
        return self.enabled and not self.overflowed

    def count(self, proc: str) -> tuple[int, int]:
        """Number one call without logging it (`logging` is False); the mark undoes it."""
        mark = (self.seq, len(self.entries))
        if proc not in self.uncounted:
            self.seq += 1
            self.recent[self.seq & _RECENT_MASK] = proc
        return mark

    def keep_early(self, proc: str, args: tuple[Any, ...], held: int | None = None) -> None:
        """The call just numbered returned before the server ran it (an early copy): keep it
        to send again when a restored session lacks it (the last EARLY_KEPT_BYTES); `held`:
        the bytes the entry holds when not its data's length (a view of a shared slot)."""
        seq = self.seq
        size = (len(args[1]) if held is None else held) + ENTRY_OVERHEAD
        self.early[seq] = (proc, args)
        self._early_bytes.append((seq, size))
        self._early_total += size
        while self._early_total > EARLY_KEPT_BYTES:
            old, n = self._early_bytes.popleft()
            self.early.pop(old, None)
            self._early_total -= n

    def forget_early(self, seq: int) -> None:
        """Early copy `seq` can no longer be sent again (its bytes lived in a shared-memory
        slot that is reused now): a restored session lacking it reports it lost."""
        self.early.pop(seq, None)

    def begin(self, calls: list[tuple[str, tuple[Any, ...]]]) -> tuple[int, int]:
        """Number (and log) the calls about to be sent; the mark undoes it (`rollback`)."""
        mark = (self.seq, len(self.entries))
        for proc, args in calls:
            if proc in self.uncounted:
                continue
            self.seq += 1
            self.recent[self.seq & _RECENT_MASK] = proc
            if self.enabled and not self.overflowed:
                frozen, size = _freeze(args)
                self.entries.append(Entry(self.seq, proc, frozen, size + ENTRY_OVERHEAD))
                self.bytes += size + ENTRY_OVERHEAD
        return mark

    def rollback(self, mark: tuple[int, int]) -> None:
        """Forget calls that were never answered (they are sent again)."""
        seq, count = mark
        self.seq = seq
        while len(self.entries) > count:
            self.bytes -= self.entries.pop().size

    def settle(self, mark: tuple[int, int], result: Any) -> None:
        """Keep the reply of a call that gave a pointer or handle, to check its replay."""
        reply = result[1] if isinstance(result, tuple) and len(result) == 2 else result
        if len(self.entries) == mark[1] + 1 and type(reply).__name__ in _IDENTITY_RESULTS:
            self.entries[-1].expect = reply

    def full(self) -> bool:
        return (
            self.enabled
            and not self.overflowed
            and not self.renewing
            and self.bytes > self.max_bytes
        )

    def give_up(self) -> None:
        log.warning(
            "replay log over %d bytes and no checkpoint path to renew it: stopped logging",
            self.max_bytes,
        )
        self.overflowed = True
        self.entries.clear()
        self.bytes = 0

    def to_replay(self, restored: int) -> list[Entry] | str:
        """The entries after call `restored`, or why they cannot be had."""
        if not self.enabled:
            return "this program took no checkpoint, so it kept no replay log"
        if self.overflowed:
            return f"the replay log outgrew its bound of {self.max_bytes} bytes"
        if restored < self.base:
            return (
                f"the restored session holds {restored} calls, older than the replay log, which "
                f"starts after call {self.base}"
            )
        if restored > self.seq:
            return f"the restored session holds {restored} calls, more than the {self.seq} sent"
        return [e for e in self.entries if e.seq > restored]

    def named(self, first: int, last: int) -> list[tuple[int, str]]:
        """(sequence number, procedure) of calls `first`..`last` that the ring still names
        (the last `RECENT` counted calls)."""
        first = max(first, last - RECENT + 1, 1)
        return [(seq, self.recent[seq & _RECENT_MASK]) for seq in range(first, last + 1)]

    def resync(self, restored: int) -> None:
        """The session goes on from a restored state holding `restored` calls (the calls
        after it are reported lost): number from there; a log that was on logs afresh."""
        self.early.clear()
        self._early_bytes.clear()
        self._early_total = 0
        self.seq = self.base = restored
        self.entries.clear()
        self.bytes = 0
        self.overflowed = False


def enable_replay(conn: Connection, path: str | None = None) -> None:
    """Log from now on (a checkpoint holding every call so far exists, at `path` if given)."""
    book = conn.replay_log
    book.restart_at(book.seq, path)


def renew_log(conn: Connection) -> None:
    """`conn.replay_log` outgrew its bound: checkpoint again at the last path (emptying it),
    else stop logging."""
    book = conn.replay_log
    if book.checkpoint_path is None:
        book.give_up()
        return
    from .checkpoints import checkpoint

    book.renewing = True
    try:
        checkpoint(book.checkpoint_path, connection=conn)
    finally:
        book.renewing = False


def calls_of(
    method: str, conn: Connection, args: tuple[Any, ...]
) -> list[tuple[str, tuple[Any, ...]]]:
    """The (procedure, arguments) a Connection call method is about to send."""
    if method in ("call", "_call_resuming", "sync", "_sync", "post", "post_now"):
        return [(args[0], tuple(args[1:]))]
    if method == "post_encoded":  # logged decoded, as `post` would have sent them
        return [(args[0], _decoded_args(conn, args[0], args[1]))]
    if method == "post_now_encoded":
        return [(args[0], _decoded_args(conn, args[0], b"".join(args[1])))]
    if method == "sync_many":
        return [(args[0], tuple(a)) for a in args[1]]
    if method == "sync_into":
        return [(args[0], tuple(a)) for a, _view in args[1]]
    if method == "_fetch_param_layout" and args[0] not in conn._param_info:
        return [("CU_FUNC_GET_PARAM_INFO", (args[0],))]
    return []


def _decoded_args(conn: Connection, proc: str, body: bytes) -> tuple[Any, ...]:
    from cricket_xdr.xdr import Decoder

    codecs = conn.proto.CRICKET_V1_Server.PROCEDURES[int(getattr(conn.proto, proc))].arg_codecs
    dec = Decoder(body)
    args = tuple(codec.unpack(dec) for codec in codecs)
    dec.done()
    return args


def replay(conn: Connection) -> None:
    """After a resume: send again what the restored session lacks (see the module docstring);
    raises CallsLost naming the calls it lacks when they cannot be sent again."""
    from .reconnect import CallsLost

    book = conn.replay_log
    reply = conn._stub.SESSION_CALLS()
    if reply.err != 0:
        raise CallsLost(f"resume: the server does not say how many calls it holds ({reply.err})")
    restored = int(reply.value)
    if restored == book.seq:
        return
    todo = book.to_replay(restored)
    if isinstance(todo, str) and restored < book.seq and book.seq - restored <= RECENT:
        missing = book.named(restored + 1, book.seq)
        changing_nothing = read_only()  # `@readonly` in cricket.x
        early = book.early
        if all(proc in changing_nothing or seq in early for seq, proc in missing):
            again = [early[seq] for seq, _proc in missing if seq in early]
            log.info(
                "the restored session lacks calls %d..%d, which changed nothing but %d "
                "early-returned copies: sending those again, going on",
                restored + 1,
                book.seq,
                len(again),
            )
            book.resync(restored)
            for proc, args in again:  # an operator checkpoint taken before the server ran them
                book.count(proc)
                err = getattr(conn._stub, proc)(*args)
                if err:
                    log.warning("early copy sent again after a resume failed with %d", err)
            return
    if isinstance(todo, str):
        where = f"session {conn.info.session_id:#x} resumed on {conn.address}"
        if restored > book.seq:  # a call ran there, then its reply was lost with the server
            calls = book.named(book.seq + 1, restored)
            message = (
                f"{where}: its checkpoint holds {restored - book.seq} call(s) more than were "
                f"answered here: {_listed(calls)} ran on the old server, but the reply was "
                "lost; not sent again"
            )
        else:
            calls = book.named(restored + 1, book.seq)
            message = (
                f"{where} from a checkpoint that holds calls 1..{restored}; the "
                f"{book.seq - restored} call(s) after it are not in the restored session and "
                f"cannot be replayed ({todo}): {_listed(calls)}"
            )
        book.resync(restored)
        raise CallsLost(message, calls)
    log.warning(
        "replaying %d call(s) made after the checkpoint (calls %d..%d)",
        len(todo),
        restored + 1,
        book.seq,
    )
    for entry in todo:
        method = getattr(conn._stub, entry.proc)
        again = method(*entry.args)
        if entry.expect is not None and again != entry.expect:
            raise ReplayDiverged(
                f"replay of {entry.proc} (call {entry.seq}) answered {again}, the first time {entry.expect}"
            )
        err = again if isinstance(again, int) else int(getattr(again, "err", 0))
        if err:
            log.warning("replayed %s (call %d) failed with %d", entry.proc, entry.seq, err)


def _listed(calls: list[tuple[int, str]], most: int = 16) -> str:
    """"CU_MEMSET_D8 (call 41), ..." for a message; the last `most` of them."""
    shown = ", ".join(f"{proc} (call {seq})" for seq, proc in calls[-most:])
    return f"... {len(calls) - most} more, {shown}" if len(calls) > most else shown
