"""One deadline at a time, met by a background thread: the launch batcher's timer.

`DeadlineTimer(on_due)`: `arm(when)` (a `time.monotonic()` instant) replaces the deadline,
`disarm()` drops it, and once a deadline passes the thread calls `on_due()` (without any
lock of the timer's held; it may `arm` again). `close()` stops the thread.

A loop that gathers launches arms the timer at each step's first launch and disarms it when
the step's synchronizing call sends them, so the deadline almost never passes. What that
costs decides the step's time on a small machine:

- On Linux the deadline is a timerfd (CLOCK_MONOTONIC, absolute): `arm` and `disarm` are one
  `timerfd_settime` each, called with the interpreter lock kept (no handover), and never
  wake the thread, which sleeps in `read` until a deadline really passes. `wakes` counts
  those wake-ups.
- Elsewhere a `threading.Condition`: `arm` notifies the thread only when the new deadline is
  earlier than its planned wake-up (nearly always: after a deadline it waits without one),
  and each notice is a thread wake-up that takes the interpreter lock from the caller for a
  moment. On the H200 that cost empty launches a third of their rate (304 k/s against
  481 k/s with the timerfd; on a 2-core machine a context switch a gathered batch).

A forked child gets timers of its own: a timer armed there starts a new thread (and timerfd;
the parent's is shared with the child otherwise).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable

__all__ = ["DeadlineTimer", "timerfd_available"]

log = logging.getLogger(__name__)

_CLOCK_MONOTONIC = 1
_TFD_CLOEXEC = 0o2000000
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _ITimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _timerfd_functions() -> tuple[Callable[..., int], Callable[..., int]] | None:
    """libc's timerfd_create and timerfd_settime, called without releasing the interpreter
    lock (PyDLL: each is one short system call); None where there are none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.PyDLL(None, use_errno=True)
        create, settime = libc.timerfd_create, libc.timerfd_settime
    except (OSError, AttributeError):
        return None
    create.argtypes, create.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_ITimerspec), ctypes.c_void_p]
    settime.restype = ctypes.c_int
    return create, settime


_TIMERFD = _timerfd_functions()


def timerfd_available() -> bool:
    return _TIMERFD is not None


_LIVE: weakref.WeakSet[DeadlineTimer] = weakref.WeakSet()


class DeadlineTimer:
    """Calls `on_due()` from a background thread once the armed deadline passes."""

    def __init__(self, on_due: Callable[[], None], *, use_timerfd: bool = True) -> None:
        self._on_due = on_due
        self._use_timerfd = use_timerfd and _TIMERFD is not None
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._fd = -1
        self._spec = _ITimerspec()
        self._spec_ref = ctypes.byref(self._spec)
        self._deadline: float | None = None  # the Condition thread's deadline
        self._wakes_at: float | None = None  # when that thread wakes next (None: notified)
        self._closed = False
        self.wakes = 0  # times the thread woke for a deadline (or a notification)
        _LIVE.add(self)

    @property
    def uses_timerfd(self) -> bool:
        return self._use_timerfd

    def arm(self, when: float) -> None:
        """Call `on_due` once `time.monotonic()` reaches `when` (the earlier deadline goes)."""
        if self._thread is None:
            self._start()
        if self._use_timerfd:
            self._settime(when)
            return
        with self._cond:
            self._deadline = when
            wakes_at = self._wakes_at
            if wakes_at is None or when < wakes_at:
                self._cond.notify()

    def disarm(self) -> None:
        """Drop the deadline (the thread is not woken)."""
        if self._thread is None:
            return
        if self._use_timerfd:
            self._settime(0.0)
        else:
            self._deadline = None  # the thread finds none when it wakes as planned

    def close(self) -> None:
        """Stop the thread (no `on_due` after this returns, from another thread)."""
        thread = self._thread
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        if thread is None:
            return
        if self._use_timerfd:
            self._settime(1e-9)  # expires at once: the thread reads, sees closed, ends
        if thread is not threading.current_thread():
            thread.join()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # -- the thread -------------------------------------------------------------------------

    def _start(self) -> None:
        with self._cond:
            if self._thread is not None:
                return
            if self._use_timerfd:
                assert _TIMERFD is not None
                fd = _TIMERFD[0](_CLOCK_MONOTONIC, _TFD_CLOEXEC)
                if fd < 0:
                    self._use_timerfd = False  # e.g. out of descriptors: the portable way
                else:
                    self._fd = fd
            target = self._read_loop if self._use_timerfd else self._cond_loop
            thread = threading.Thread(target=target, name="cricket-launch-timer", daemon=True)
            self._thread = thread
            thread.start()

    def _settime(self, when: float) -> None:
        """Arm the timerfd at monotonic instant `when` (0: disarmed)."""
        value = self._spec.it_value
        sec = int(when)
        value.tv_sec, value.tv_nsec = sec, int((when - sec) * 1e9)
        if when and not (sec or value.tv_nsec):
            value.tv_nsec = 1
        assert _TIMERFD is not None
        if _TIMERFD[1](self._fd, _TFD_TIMER_ABSTIME, self._spec_ref, None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_settime: {os.strerror(err)}")

    def _read_loop(self) -> None:
        fd = self._fd
        while True:
            try:
                os.read(fd, 8)  # blocks (without the interpreter lock) until a deadline
            except OSError:
                return
            if self._closed:
                return
            self.wakes += 1
            self._call_on_due()

    def _call_on_due(self) -> None:
        """`on_due`, whose failure is logged: the thread must go on meeting deadlines."""
        try:
            self._on_due()
        except Exception:
            log.exception("the deadline timer's callback failed")

    def _cond_loop(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while True:
                    if self._closed:
                        return
                    deadline = self._deadline
                    if deadline is None:
                        self._wakes_at = None
                        cond.wait()
                    else:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            self._deadline = None
                            break
                        self._wakes_at = deadline
                        cond.wait(left)
                    self.wakes += 1
            self._call_on_due()

    def _after_fork(self) -> None:
        """In a forked child: no thread runs; the next `arm` starts one (and a timerfd)."""
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._thread = None
        if self._fd >= 0:
            os.close(self._fd)  # the child's reference only: the parent's timer runs on
            self._fd = -1
        self._deadline = self._wakes_at = None


def _reset_after_fork() -> None:
    for timer in list(_LIVE):
        timer._after_fork()


os.register_at_fork(after_in_child=_reset_after_fork)
