"""`SimStream.run`: a synchronous copy on an idle stream runs on the calling thread (no
worker thread), and stream order holds whatever is queued before or during it."""

from __future__ import annotations

import threading
import time

import pytest

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.backends.sim.streams import Context, SimStream

pytestmark = pytest.mark.timeout(60)


def _stream(legacy: bool = False) -> SimStream:
    return SimStream(Context("test"), 0, 0, legacy=legacy)


def test_an_idle_stream_runs_the_copy_on_the_calling_thread() -> None:
    stream = _stream()
    ran_on: list[threading.Thread] = []
    stream.run(lambda: ran_on.append(threading.current_thread()))
    assert ran_on == [threading.current_thread()]
    assert stream._last is None  # no worker thread was started
    assert stream.idle()


def test_a_copy_waits_for_work_queued_before_it() -> None:
    stream = _stream()
    gate = threading.Event()
    order: list[str] = []
    stream.submit(lambda: (gate.wait(30), order.append("queued")))
    done = threading.Event()
    threading.Thread(target=lambda: (stream.run(lambda: order.append("copy")), done.set())).start()
    assert not done.wait(0.2)  # observation window: the copy must not pass the queued work
    gate.set()
    assert done.wait(30)
    assert order == ["queued", "copy"]


def test_work_queued_during_an_inline_copy_runs_after_it() -> None:
    stream = _stream()
    order: list[str] = []
    later: list[object] = []

    def copy() -> None:
        order.append("copy starts")
        later.append(stream.submit(lambda: order.append("queued meanwhile")))
        time.sleep(0.2)  # observation window: the queued item must not start yet
        order.append("copy ends")

    stream.run(copy)
    later[0].done.wait(30)  # type: ignore[attr-defined]
    assert order == ["copy starts", "copy ends", "queued meanwhile"]


def test_the_legacy_stream_waits_for_blocking_streams() -> None:
    legacy = _stream(legacy=True)
    other = SimStream(legacy.context, 0, 0)
    gate = threading.Event()
    order: list[str] = []
    other.submit(lambda: (gate.wait(30), order.append("other")))
    threading.Timer(0.2, gate.set).start()
    legacy.run(lambda: order.append("copy"))
    assert order == ["other", "copy"]


def test_a_failing_copy_fails_the_context_and_later_work_is_skipped() -> None:
    stream = _stream()

    def bad() -> None:
        raise CudaError(CUDA_ERROR_INVALID_VALUE, "bad copy")

    stream.run(bad)
    assert stream.context.error is not None and stream.context.error.code == CUDA_ERROR_INVALID_VALUE
    ran: list[int] = []
    stream.run(lambda: ran.append(1))
    assert ran == []
    assert stream.idle()
