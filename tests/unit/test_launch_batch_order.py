"""A call made while the timer thread is sending the gathered launches must not overtake them:
`flush` waits for the batch being sent (a thread's copy after its launch read stale memory)."""

from __future__ import annotations

import threading

from cricket_client.launch_batch import LaunchBatcher


def test_flush_waits_for_a_batch_the_timer_is_sending() -> None:
    sending, release = threading.Event(), threading.Event()
    order: list[str] = []

    def send(proc: str, count: int, body: bytes) -> None:
        sending.set()
        release.wait(30)
        order.append(f"batch of {count}")

    batcher = LaunchBatcher(send, delay=0.001)
    try:
        batcher.add(b"launch", at_once=False)  # gathered; the timer sends it
        assert sending.wait(30)

        def other_call() -> None:
            batcher.flush()  # what Connection does before any other call
            order.append("next call")

        caller = threading.Thread(target=other_call)
        caller.start()
        caller.join(0.2)  # it must still be waiting for the batch
        release.set()
        caller.join(30)
        assert order == ["batch of 1", "next call"]
    finally:
        release.set()
        batcher.close()
