"""Calls held in the RPC client for the launch batcher's timer (`arm_held`): they leave by the
delay when nothing else sends them, with the next batch when one goes, and at close."""

from __future__ import annotations

import threading

from test_launch_batch_timer import _wait_for

from cricket_client.launch_batch import LaunchBatcher


class _Held:
    def __init__(self) -> None:
        self.flushes = 0
        self.flushed = threading.Event()

    def __call__(self) -> None:
        self.flushes += 1
        self.flushed.set()


def test_held_calls_leave_by_the_delay_without_another_call() -> None:
    held = _Held()
    batcher = LaunchBatcher(lambda count, body: None, flush_held=held, delay=0.002)
    try:
        batcher.arm_held()
        assert held.flushed.wait(30), "held calls never left"
        assert held.flushes == 1
    finally:
        batcher.close()


def test_a_batch_sent_meanwhile_carries_the_held_calls() -> None:
    held = _Held()
    sent: list[int] = []
    batcher = LaunchBatcher(lambda count, body: sent.append(count), flush_held=held, delay=0.05)
    try:
        batcher.arm_held()
        _wait_for(lambda: batcher._wakes_at is not None, "the timer never waited for the delay")
        batcher.add(b"L000", at_once=True)  # its write takes the held calls along
        # the timer wakes at the delay, finds nothing due and waits without a deadline
        _wait_for(lambda: batcher._wakes_at is None, "the timer never woke at the delay")
        assert sent == [1]
        assert held.flushes == 0
    finally:
        batcher.close()
    assert held.flushes == 0


def test_close_sends_held_calls() -> None:
    held = _Held()
    batcher = LaunchBatcher(lambda count, body: None, flush_held=held, delay=3600.0)
    batcher.arm_held()
    batcher.close()
    assert held.flushes == 1
