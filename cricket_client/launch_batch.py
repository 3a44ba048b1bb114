"""cuLaunchKernel calls gathered into CU_LAUNCH_KERNEL_BATCH calls (D6).

A launch made while nothing of the connection's is outstanding at the server goes out at once,
so the GPU starts without delay. Launches made while earlier work is on its way wait here and
go as one call (one record, one reply) once `max_launches` or `max_bytes` have gathered, when
any other call is made on the connection (`Connection` flushes first, so the server sees the
program's order; a synchronizing call takes the batch along in its own write, so the server
wakes once for both), or `delay` seconds after the first of them at the latest (a
`DeadlineTimer`, armed at a batch's first launch and disarmed when the batch leaves, sees to
that: a program that launches and then computes on the host still gets its kernels started;
a loop whose synchronizing calls send its batches never wakes the timer's thread). Graph
launches are gathered the same way into CU_GRAPH_LAUNCH_BATCH calls: a batch holds calls of
one procedure, so a launch of the other kind first sends what is queued (the server sees the
program's order).

CRICKET_LAUNCH_BATCH sets `max_launches` (1 to cricket.x's MAX_LAUNCH_BATCH; default 128). Smaller batches
let the server start on a step's launches while the client still makes the rest (on a 2-core
machine with the sim server, batches of 2-3 cut a decoding step by about a quarter) at the
price of a send per batch, which a tight launch loop pays: a knob to measure with, not a
default changed without a GPU A/B.

CRICKET_LAUNCH_AT_ONCE=0 gathers every launch, even one made while nothing is outstanding:
it then leaves with the next call (a loop's synchronizing read takes it in its own write: one
write and one server wake-up a step instead of two) or after `delay`. The default (1) starts
the GPU at once, as a program that launches and then computes on the host wants. Measured on
the H200 (two alternated rounds, spinning off): with 0 a PyTorch step of one launch and a
read was slower (259 / 225 us against 157 / 172: the server then launches only when the
read arrives), CuPy's and the convolution's and the decoding loop's within the noise, empty
launches no faster: the default stays.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Callable

from .deadline_timer import DeadlineTimer

__all__ = [
    "AT_ONCE_ENV", "BATCH_ENV", "DELAY", "DELAY_ENV", "GRAPHS", "KERNELS", "LaunchBatcher", "MAX_BYTES",
    "MAX_LAUNCHES",
]

MAX_LAUNCHES = 128  # launches in one batch (the protocol allows MAX_LAUNCH_BATCH)
MAX_BYTES = 1 << 16  # bytes of launch_args in one batch
DELAY = 0.0005  # seconds a gathered launch may wait for more at the most
DELAY_ENV = "CRICKET_LAUNCH_DELAY_US"
BATCH_ENV = "CRICKET_LAUNCH_BATCH"
AT_ONCE_ENV = "CRICKET_LAUNCH_AT_ONCE"
KERNELS = "CU_LAUNCH_KERNEL_BATCH"  # the procedure of a batch of cuLaunchKernel calls
GRAPHS = "CU_GRAPH_LAUNCH_BATCH"  # and of cuGraphLaunch calls
_COUNT = struct.Struct(">I")

Send = Callable[[str, int, bytes], None]  # (procedure, calls, its batch's encoding)


def _delay_from_env() -> float:
    text = os.environ.get(DELAY_ENV)
    if not text:
        return DELAY
    try:
        micros = float(text)
    except ValueError:
        raise ValueError(f"{DELAY_ENV}={text!r}: expected microseconds") from None
    if micros < 0:
        raise ValueError(f"{DELAY_ENV}={text!r}: must not be negative")
    return micros / 1e6


def _at_once_from_env() -> bool:
    text = os.environ.get(AT_ONCE_ENV, "1").strip()
    if text not in ("0", "1"):
        raise ValueError(f"{AT_ONCE_ENV}={text!r}: expected 0 or 1")
    return text == "1"


def _batch_from_env() -> int:
    text = os.environ.get(BATCH_ENV)
    if not text:
        return MAX_LAUNCHES
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{BATCH_ENV}={text!r}: expected a number of launches") from None
    from rpc_spec.cricket_rpc import MAX_LAUNCH_BATCH

    if not 1 <= value <= MAX_LAUNCH_BATCH:
        raise ValueError(f"{BATCH_ENV}={text!r}: expected 1 to {MAX_LAUNCH_BATCH}")
    return value


class LaunchBatcher:
    """Encoded launches waiting to be sent as one batch by `send(proc, count, body)`: the
    launch_args of a launch_batch (`KERNELS`) or the graph_launch_args of a
    graph_launch_batch (`GRAPHS`).

    `send` must not raise for a lost connection (the connection reports lost calls at its
    next synchronizing call); it is called with this batcher's lock held, which keeps the
    batches in order between threads."""

    def __init__(
        self,
        send: Send,
        *,
        send_with_next: Send | None = None,
        max_launches: int | None = None,
        max_bytes: int = MAX_BYTES,
        delay: float | None = None,
        at_once: bool | None = None,
    ) -> None:
        self._send = send
        self._send_with_next = send_with_next or send
        self.max_launches = _batch_from_env() if max_launches is None else max_launches
        self.max_bytes = max_bytes
        self.delay = _delay_from_env() if delay is None else delay
        # whether a launch made while nothing is outstanding leaves at once (AT_ONCE_ENV)
        self.at_once = _at_once_from_env() if at_once is None else at_once
        self._lock = threading.Lock()  # taken directly on the hot path (`with` on a Lock is C)
        self.queued: list[bytes] = []  # encoded launches not sent yet (read without the lock)
        self.proc = KERNELS  # the procedure of those queued
        self._bytes = 0
        self._due: float | None = None  # when the gathered batch must go at the latest
        self.timer = DeadlineTimer(self._on_due)
        self._closed = False

    def __len__(self) -> int:
        return len(self.queued)

    def add(self, body: bytes, *, at_once: bool, proc: str = KERNELS) -> None:
        """Queue one launch of batch procedure `proc`; with `at_once` (nothing outstanding),
        send what is queued now, unless this batcher gathers every launch (`self.at_once`
        false)."""
        with self._lock:
            if proc != self.proc:
                if self.queued:
                    self._flush_locked()  # the other kind's batch goes first
                self.proc = proc
            parts = self.queued
            parts.append(body)
            size = self._bytes = self._bytes + len(body)
            count = len(parts)
            if (at_once and self.at_once) or count >= self.max_launches or size >= self.max_bytes:
                self._flush_locked()
            elif count == 1:
                self._arm_locked()

    def flush(self, *, with_next: bool = False) -> None:
        """Send the queued launches now (before another call, so the server keeps order).

        `with_next`: the caller sends a call right after and sees that it leaves: the batch
        goes by `send_with_next`, which may hold it to leave in one write with that call."""
        if not self.queued:
            return
        with self._lock:
            if self.queued:
                self._flush_locked(self._send_with_next if with_next else self._send)

    def close(self) -> None:
        """Send what is queued and stop the timer's thread."""
        with self._lock:
            if self.queued:
                self._flush_locked()
            self._closed = True
        self.timer.close()

    def _flush_locked(self, send: Send | None = None) -> None:
        parts = self.queued
        count = len(parts)
        body = _COUNT.pack(count) + b"".join(parts)
        try:
            (send or self._send)(self.proc, count, body)
        finally:
            # Emptied only once sent: `flush` (another thread's call) sees them queued until
            # then, takes the lock, and so cannot overtake a batch being sent.
            self.queued = []
            self._bytes = 0
            if self._due is not None:
                self._due = None
                self.timer.disarm()

    def _arm_locked(self) -> None:
        """The first launch of a gathered batch: make sure it leaves within `delay`."""
        due = self._due = time.monotonic() + self.delay
        self.timer.arm(due)

    def _on_due(self) -> None:
        """The timer's thread, a deadline passed: send the batch that is due."""
        with self._lock:
            due = self._due
            if due is None or self._closed:
                return
            if due > time.monotonic():  # armed again meanwhile for a later batch
                self.timer.arm(due)
            elif self.queued:
                self._flush_locked()
