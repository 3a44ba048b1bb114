"""The launch batcher's timer thread: woken only where it would not look again in time (each
wake takes the GIL from the launching thread, at once where that is a C caller of the native
library), and still sending every gathered batch within its delay, whether it lingers after
a batch or sleeps until told."""

from __future__ import annotations

import threading
import time

from cricket_client.launch_batch import LaunchBatcher

LIMIT = 30.0  # seconds any wait may take on a busy machine


class _Sink:
    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def __call__(self, count: int, body: bytes) -> None:
        with self.changed:
            self.count += count
            self.changed.notify_all()

    def wait_for(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count >= count, LIMIT)


def test_batches_armed_while_the_timer_waits_do_not_wake_it() -> None:
    sink = _Sink()
    batcher = LaunchBatcher(sink, max_launches=4, delay=LIMIT)
    notified: list[int] = []
    plain_notify = batcher._cond.notify
    batcher._cond.notify = lambda n=1: (notified.append(n), plain_notify(n))  # type: ignore[method-assign]
    batcher.add(b"L000", at_once=False)  # starts the timer thread, which waits for this batch
    deadline = time.monotonic() + LIMIT
    while batcher._waking is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert batcher._waking is not None, "the timer thread never began to wait"
    for i in range(1, 38):  # nine more batches, each due after the one the timer waits for
        batcher.add(f"L{i:03}".encode(), at_once=False)
    assert sink.count == 36  # full batches left at once; the last gathers
    assert notified == []
    batcher.close()
    assert sink.count == 38


def test_every_gathered_launch_leaves_within_its_delay_after_lingering_or_sleeping() -> None:
    sink = _Sink()
    delay = 0.005
    batcher = LaunchBatcher(sink, max_launches=100, delay=delay)
    try:
        # after each batch the timer lingers for `delay`, then sleeps until told: launches
        # come while it waits for a batch, while it lingers, and once it sleeps
        for i, pause in enumerate([0, 0.5, 1, 1.5, 3, 10, 0, 2, 0.2] * 3):
            time.sleep(pause * delay)
            batcher.add(f"L{i:03}".encode(), at_once=False)
            if i % 2:
                assert sink.wait_for(i + 1), f"launch {i} was never sent"
        assert sink.wait_for(27)
    finally:
        batcher.close()
