"""Bounded busy-polling receives: take what a socket holds within N microseconds, else say so.

Waking a thread blocked in `recv` on another core costs more than a small RPC's whole round
trip on loopback, so a reader that expects an answer soon first retries `recv` with
MSG_DONTWAIT for a short window and only then blocks. The window adapts: after
`MISSES_BEFORE_BACKOFF` windows in a row found nothing (the peer computes for longer than it),
the spinner sits out 1, 2, 4 ... up to `MAX_SKIP` receives before it tries again, so a
connection that mostly waits long burns little CPU; any window that finds data restores
spinning on every receive.

Only for plain sockets that have no Python-level timeout: CPython polls before each receive
on a socket with a timeout, which would defeat MSG_DONTWAIT; TLS sockets hold decrypted bytes
no receive flag can reach.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

__all__ = ["Spinner", "default_spin_us", "MISSES_BEFORE_BACKOFF", "MAX_SKIP", "MAX_SPIN_US"]

_DONTWAIT = socket.MSG_DONTWAIT
MISSES_BEFORE_BACKOFF = 4  # empty windows in a row before the spinner starts sitting out
MAX_SKIP = 64  # receives sat out at most between two tries
DEFAULT_SPIN_US = 100.0
MIN_CPUS = 4  # below this many cores a spinning end takes the core its peer needs
MAX_SPIN_US = 1_000_000.0  # a longer window is a mistake, not a tuning


def default_spin_us() -> float:
    """The spin window a process serving one peer uses by default: 100 us with at least 4
    cores, else 0 (off)."""
    return DEFAULT_SPIN_US if (os.cpu_count() or 1) >= MIN_CPUS else 0.0


class Spinner:
    """One reading end's bounded busy poll; `spin_us` is the window in microseconds.

    Not thread-safe: one reader at a time uses it (the caller serializes its readers).
    """

    __slots__ = ("window", "_misses", "_skip", "_skipped")

    def __init__(self, spin_us: float) -> None:
        if not 0 <= spin_us <= MAX_SPIN_US:
            raise ValueError(f"spin_us must be from 0 to {MAX_SPIN_US:g}, got {spin_us}")
        self.window = spin_us / 1e6  # seconds
        self._misses = 0  # empty windows in a row
        self._skip = 0  # receives to sit out after the next miss
        self._skipped = 0  # receives still to sit out

    def recv_into(self, sock: Any, view: Any, limit: float | None = None) -> int | None:
        """`sock.recv_into(view)` without blocking, retried for up to the window (and never
        longer than `limit` seconds): the byte count (0 when the peer closed), or None when
        nothing came in time, or when this receive is sat out. OSError other than
        "would block" propagates, as from a blocking receive."""
        if self._skipped:
            self._skipped -= 1
            return None
        window = self.window if limit is None else min(self.window, limit)
        clock = time.perf_counter
        end = clock() + window
        recv_into = sock.recv_into
        while True:
            try:
                n: int = recv_into(view, 0, _DONTWAIT)
            except (BlockingIOError, InterruptedError):
                if clock() < end:
                    continue
                self._missed()
                return None
            self._misses = 0
            self._skip = 0
            return n

    def _missed(self) -> None:
        self._misses += 1
        if self._misses >= MISSES_BEFORE_BACKOFF:
            self._skip = min(MAX_SKIP, self._skip * 2 or 1)
            self._skipped = self._skip

    @property
    def backing_off(self) -> bool:
        """Whether the next receive(s) are sat out after windows that found nothing."""
        return self._skipped > 0

    def __repr__(self) -> str:
        return f"<Spinner {self.window * 1e6:g} us, {self._misses} empty windows in a row>"
