"""`SocketWatcher`: one thread that watches connections waiting in the main process.

The admission gate (`gate.AdmissionGate`) and the restored-session router
(`routing.RestoredRouter`) both keep accepted sockets for a while, each until something
arrives or its deadline passes. The shared part lives here: a selector, a wake-up socket
pair, a lock-protected list of new entries, a heap of deadlines, and a loop that never dies
(a failure is logged, rate-limited, and the loop goes on after `poll` seconds). A subclass
says what to do with an entry whose deadline passed, one that is readable, and those that
must be polled rather than watched.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from cricket_xdr.rpc.ratelog import RateLimitedLog


class Entry(Protocol):
    """What a watched connection carries."""

    sock: socket.socket
    deadline: float  # time.monotonic() by which it must be done with


E = TypeVar("E", bound=Entry)


class SocketWatcher(Generic[E]):
    """Watches entries on a thread of its own (`name`). A subclass calls `__init__` last in
    its own (the thread starts here) and adds entries with `_add`. `failure`: the log message
    (one `%r`) for a failed loop step."""

    def __init__(self, *, name: str, log: logging.Logger, failure: str, poll: float) -> None:
        self._lock = threading.Lock()
        self._new: list[E] = []  # added, not yet watched by the thread
        self._closing = False
        self._trouble = RateLimitedLog(log)
        self._failure = failure
        self._poll_interval = poll
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread, let go of all entries (`_release_all`), close the selector."""
        with self._lock:
            self._closing = True
        self._wake()
        self._thread.join()
        self._release_all()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _add(self, entries: dict[socket.socket, E], limit: int, make: Callable[[], E]) -> bool:
        """Put `make()` into `entries` (the subclass's, guarded by `_lock`) and watch it;
        False (nothing made) while closing or when `limit` entries are there already."""
        with self._lock:
            if self._closing or len(entries) >= limit:
                return False
            entry = make()
            entries[entry.sock] = entry
            self._new.append(entry)
        self._wake()
        return True

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    # -- hooks -----------------------------------------------------------------------------
    def _guarded(self, step: Callable[[E], None], entry: E) -> None:
        """Run one step for `entry`; a failure must end that entry only."""
        raise NotImplementedError

    def _expired(self, entry: E) -> None:
        """`entry`'s deadline has passed (it may be done with already)."""
        raise NotImplementedError

    def _readable(self, entry: E) -> None:
        """`entry`'s socket is readable (called through `_guarded`)."""
        raise NotImplementedError

    def _poll(self) -> bool:
        """Look at the entries that are polled rather than watched; whether to look again
        within `poll` seconds."""
        raise NotImplementedError

    def _release_all(self) -> None:
        """On close, after the thread ended: let go of the entries still here."""
        raise NotImplementedError

    # -- the thread ------------------------------------------------------------------------
    def _run(self) -> None:
        deadlines: list[tuple[float, int, E]] = []
        order = itertools.count()
        while True:
            with self._lock:
                if self._closing:
                    return
                new, self._new = self._new, []
            for entry in new:
                heapq.heappush(deadlines, (entry.deadline, next(order), entry))
                self._guarded(self._watch, entry)
            try:
                self._step(deadlines)
            except Exception as exc:  # never the end of the thread
                self._trouble.log(logging.ERROR, self._failure, exc)
                time.sleep(self._poll_interval)

    def _watch(self, entry: E) -> None:
        entry.sock.setblocking(False)
        self._selector.register(entry.sock, selectors.EVENT_READ, entry)

    def _step(self, deadlines: list[tuple[float, int, E]]) -> None:
        """Expire entries past their deadline, poll those that want it, serve readable ones."""
        now = time.monotonic()
        while deadlines and deadlines[0][0] <= now:
            self._expired(heapq.heappop(deadlines)[2])
        soon = self._poll()
        timeout = max(0.0, deadlines[0][0] - now) if deadlines else None
        if soon:
            timeout = self._poll_interval if timeout is None else min(timeout, self._poll_interval)
        for key, _ in self._selector.select(timeout):
            if key.data is None:
                with contextlib.suppress(OSError):
                    self._wake_r.recv(4096)
            else:
                self._guarded(self._readable, key.data)
