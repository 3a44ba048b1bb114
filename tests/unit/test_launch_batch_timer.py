"""The launch batcher's timer: a batch gathered while the timer already waits still leaves by
its own deadline, with or without a notification of the timer thread."""

from __future__ import annotations

import threading
import time

from cricket_client.launch_batch import LaunchBatcher


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


def test_a_batch_due_before_the_timer_wakes_still_leaves_by_its_delay() -> None:
    sink = _Sink()
    batcher = LaunchBatcher(sink, max_launches=100, delay=3600.0)
    try:
        batcher.add(b"L000", at_once=False)  # the timer waits an hour for this one
        _wait_for(lambda: batcher._wakes_at is not None, "the timer never waited")
        batcher.flush()  # sent by a call: the timer still sleeps until its old deadline
        assert sink.sent == [1]
        sink.arrived.clear()
        batcher.delay = 0.001  # the next batch is due long before the timer would wake
        batcher.add(b"L001", at_once=False)
        assert sink.arrived.wait(30), "the batch waited for the timer's old deadline"
        assert sink.sent == [1, 1]
    finally:
        batcher.close()


def test_batches_gathered_while_the_timer_waits_all_leave_without_further_calls() -> None:
    sink = _Sink()
    batcher = LaunchBatcher(sink, max_launches=100, delay=0.002)
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


def test_arming_while_the_timer_waits_for_an_earlier_deadline_does_not_notify() -> None:
    sink = _Sink()
    batcher = LaunchBatcher(sink, max_launches=100, delay=3600.0)
    notified: list[int] = []
    try:
        batcher.add(b"L000", at_once=False)
        _wait_for(lambda: batcher._wakes_at is not None, "the timer never waited")
        batcher.flush()
        original = batcher._cond.notify
        batcher._cond.notify = lambda n=1: (notified.append(n), original(n))  # type: ignore[method-assign,func-returns-value]
        batcher.add(b"L001", at_once=False)  # due after the timer's wake-up: no notify
        assert notified == []
        batcher.flush()
        assert sink.sent == [1, 1]
    finally:
        batcher.close()
