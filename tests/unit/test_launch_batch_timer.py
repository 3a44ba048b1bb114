"""The launch batcher's timer (cricket_client.deadline_timer): a gathered batch leaves by its
deadline without further calls, whichever timer serves it; a batch that a call sends first
never wakes the timer's thread (the timerfd) or wakes it only when its planned wake-up is
too late (the portable Condition); a forked child's batches leave by their deadline too."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from cricket_client.deadline_timer import DeadlineTimer, timerfd_available
from cricket_client.launch_batch import LaunchBatcher

TIMERS = ["timerfd", "condition"]


class _Sink:
    def __init__(self) -> None:
        self.sent: list[int] = []
        self.arrived = threading.Event()
        self.procs: list[str] = []

    def __call__(self, proc: str, count: int, body: bytes) -> None:
        self.procs.append(proc)
        self.sent.append(count)
        self.arrived.set()


def _wait_for(cond: object, what: str, bound: float = 30.0) -> None:
    deadline = time.monotonic() + bound
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.001)


def _batcher(sink: _Sink, timer: str, delay: float) -> LaunchBatcher:
    batcher = LaunchBatcher(sink, max_launches=100, delay=delay)
    if timer == "condition":
        batcher.timer = DeadlineTimer(batcher._on_due, use_timerfd=False)
    assert batcher.timer.uses_timerfd == (timer == "timerfd")
    return batcher


@pytest.fixture(params=TIMERS)
def timer(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "timerfd" and not timerfd_available():
        assert not sys.platform.startswith("linux"), "Linux has timerfd_create"
        pytest.skip("no timerfd here (Linux only)")
    yield request.param


def test_linux_batchers_use_the_timerfd() -> None:
    if sys.platform.startswith("linux"):
        assert LaunchBatcher(_Sink()).timer.uses_timerfd


def test_a_batch_no_call_sends_leaves_by_its_delay(timer: str) -> None:
    sink = _Sink()
    batcher = _batcher(sink, timer, delay=0.002)
    try:
        batcher.add(b"L000", at_once=False)
        batcher.add(b"L001", at_once=False)
        assert sink.arrived.wait(30), "the gathered launches were never sent"
        assert sink.sent == [2] and len(batcher) == 0
    finally:
        batcher.close()


def test_a_batch_due_before_the_timer_wakes_still_leaves_by_its_delay(timer: str) -> None:
    sink = _Sink()
    batcher = _batcher(sink, timer, delay=3600.0)
    try:
        batcher.add(b"L000", at_once=False)  # the timer is set an hour ahead for this one
        batcher.flush()  # sent by a call
        assert sink.sent == [1]
        sink.arrived.clear()
        batcher.delay = 0.001  # the next batch is due long before the old deadline
        batcher.add(b"L001", at_once=False)
        assert sink.arrived.wait(30), "the batch waited for the timer's old deadline"
        assert sink.sent == [1, 1]
    finally:
        batcher.close()


def test_batches_gathered_while_the_timer_waits_all_leave_without_further_calls(
    timer: str,
) -> None:
    sink = _Sink()
    batcher = _batcher(sink, timer, delay=0.002)
    try:
        for i in range(50):  # each batch sent by a call, or by the timer, never left behind
            batcher.add(b"L%03d" % i, at_once=False)
            if i % 3:
                batcher.flush()
            time.sleep(0.0005)
        _wait_for(lambda: sum(sink.sent) == 50, f"launches left behind: {sink.sent}")
        assert len(batcher) == 0
    finally:
        batcher.close()


@pytest.mark.skipif(not timerfd_available(), reason="no timerfd here (Linux only)")
def test_batches_that_calls_send_never_wake_the_timerfd_thread() -> None:
    sink = _Sink()
    batcher = _batcher(sink, "timerfd", delay=0.02)
    try:
        for i in range(200):  # a loop: each step's launches sent by its synchronizing call
            batcher.add(b"L%03d" % i, at_once=False)
            batcher.add(b"M%03d" % i, at_once=False)
            batcher.flush(with_next=True)
        time.sleep(0.1)  # five delays: any deadline left armed would have passed
        assert sink.sent == [2] * 200
        assert batcher.timer.wakes == 0, "the timer's thread woke for batches already sent"
    finally:
        batcher.close()


def test_arming_while_the_condition_waits_for_an_earlier_deadline_does_not_notify() -> None:
    sink = _Sink()
    batcher = _batcher(sink, "condition", delay=3600.0)
    notified: list[int] = []
    try:
        batcher.add(b"L000", at_once=False)
        _wait_for(lambda: batcher.timer._wakes_at is not None, "the timer never waited")
        batcher.flush()
        cond = batcher.timer._cond
        original = cond.notify
        cond.notify = lambda n=1: (notified.append(n), original(n))  # type: ignore[method-assign,func-returns-value]
        batcher.add(b"L001", at_once=False)  # due after the timer's wake-up: no notify
        assert notified == []
        batcher.flush()
        assert sink.sent == [1, 1]
    finally:
        batcher.close()


def test_close_sends_what_waits_and_stops_the_timer_thread(timer: str) -> None:
    sink = _Sink()
    batcher = _batcher(sink, timer, delay=60.0)
    batcher.add(b"L000", at_once=False)
    thread = batcher.timer._thread
    assert thread is not None and thread.is_alive()
    batcher.close()
    assert sink.sent == [1]
    assert not thread.is_alive()
    batcher.close()  # twice: nothing more


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_childs_batch_leaves_by_its_delay(timer: str) -> None:
    sink = _Sink()
    batcher = _batcher(sink, timer, delay=3600.0)
    try:
        batcher.add(b"L000", at_once=False)  # the parent's timer is set and running
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its own timer thread sends its batch by the delay
            ok = False
            try:
                batcher.flush()
                sink.arrived.clear()
                batcher.delay = 0.002
                batcher.add(b"C000", at_once=False)
                ok = sink.arrived.wait(30)
            finally:
                os.write(write_end, b"1" if ok else b"0")
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as child:
            said = child.read()
        os.waitpid(pid, 0)
        assert said == b"1", "the child's batch never left by its delay"
        assert sink.sent == [] and len(batcher) == 1  # the parent's batch still waits
        batcher.flush()
        assert sink.sent == [1]
    finally:
        batcher.close()


def test_a_failing_callback_does_not_stop_the_timer(timer: str) -> None:
    calls: list[int] = []

    def on_due() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the first deadline's callback fails")

    deadline_timer = DeadlineTimer(on_due, use_timerfd=timer == "timerfd")
    try:
        deadline_timer.arm(time.monotonic() + 0.001)
        _wait_for(lambda: len(calls) == 1, "the first deadline never came")
        deadline_timer.arm(time.monotonic() + 0.001)
        _wait_for(lambda: len(calls) == 2, "the timer stopped after a failing callback")
    finally:
        deadline_timer.close()
