"""Stream capture interaction modes: cuThreadExchangeStreamCaptureMode is per thread, and a
potentially unsafe call (cuMemAlloc, cuMemFree) during a capture is refused, invalidating
the capture, exactly when the calling thread's mode says so."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from behaviour_helpers import SUCCESS, check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

GLOBAL = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
THREAD_LOCAL = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
RELAXED = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
UNSUPPORTED = cuda.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
INVALIDATED = cuda.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED


@pytest.fixture(autouse=True)
def global_mode() -> Iterator[None]:
    """Each test starts, and leaves its thread, in Global mode (CUDA's default)."""
    check(cuda.cuThreadExchangeStreamCaptureMode(GLOBAL))
    yield
    check(cuda.cuThreadExchangeStreamCaptureMode(GLOBAL))


def in_thread(work: Callable[[], Any]) -> Any:
    """`work`'s result, run in another thread of this process."""
    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(work()))
    t.start()
    t.join(timeout=120)
    assert not t.is_alive() and box, "the thread did not finish"
    return box[0]


def test_exchange_returns_the_previous_mode_of_this_thread(
    session: cricket_client.Connection,
) -> None:
    assert check(cuda.cuThreadExchangeStreamCaptureMode(RELAXED)) == GLOBAL
    assert check(cuda.cuThreadExchangeStreamCaptureMode(THREAD_LOCAL)) == RELAXED
    # another thread has its own mode, Global until it exchanges it
    assert in_thread(lambda: check(cuda.cuThreadExchangeStreamCaptureMode(RELAXED))) == GLOBAL
    assert check(cuda.cuThreadExchangeStreamCaptureMode(GLOBAL)) == THREAD_LOCAL
    err, mode = cudart.cudaThreadExchangeStreamCaptureMode(
        cudart.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
    )
    assert err == cudart.cudaError_t.cudaSuccess
    assert mode == cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    err, mode = cuda.cuThreadExchangeStreamCaptureMode(7)
    assert (err, mode) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)


def test_global_mode_refuses_an_allocation_and_invalidates_the_capture(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCapture(stream, GLOBAL))
    err, ptr = cuda.cuMemAlloc(1024)
    assert (err, ptr) == (UNSUPPORTED, None)
    assert "cuMemAlloc" in cricket_client.last_error_message()
    assert cuda.cuStreamEndCapture(stream)[0] == INVALIDATED
    # the capture is over: allocating works again
    check(cuda.cuMemFree(check(cuda.cuMemAlloc(1024))))


def test_relaxed_thread_mode_allows_an_allocation_during_a_capture(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCapture(stream, GLOBAL))
    check(cuda.cuThreadExchangeStreamCaptureMode(RELAXED))
    ptr = check(cuda.cuMemAlloc(1024))
    check(cuda.cuMemFree(ptr))
    graph = check(cuda.cuStreamEndCapture(stream))
    check(cuda.cuGraphDestroy(graph))


def test_a_relaxed_capture_prohibits_nothing(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCapture(stream, RELAXED))
    check(cuda.cuMemFree(check(cuda.cuMemAlloc(1024))))
    check(cuda.cuGraphDestroy(check(cuda.cuStreamEndCapture(stream))))


def test_another_threads_global_capture_prohibits_only_global_mode_threads(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCapture(stream, GLOBAL))

    def thread_local_alloc() -> Any:
        check(cuda.cuThreadExchangeStreamCaptureMode(THREAD_LOCAL))
        err, ptr = cuda.cuMemAlloc(1024)
        if err == SUCCESS:
            check(cuda.cuMemFree(ptr))
        return err

    assert in_thread(thread_local_alloc) == SUCCESS  # not its capture
    assert in_thread(lambda: cuda.cuMemAlloc(1024)[0]) == UNSUPPORTED  # Global mode
    assert cuda.cuStreamEndCapture(stream)[0] == INVALIDATED


def test_another_threads_thread_local_capture_prohibits_nothing_here(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuStreamBeginCapture(stream, THREAD_LOCAL))
    assert cuda.cuMemAlloc(8)[0] == UNSUPPORTED  # the capturing thread itself is prohibited
    assert cuda.cuStreamEndCapture(stream)[0] == INVALIDATED
    check(cuda.cuStreamBeginCapture(stream, THREAD_LOCAL))
    assert in_thread(lambda: cuda.cuMemAlloc(1024)[0]) == SUCCESS
    check(cuda.cuGraphDestroy(check(cuda.cuStreamEndCapture(stream))))


def test_runtime_forms_follow_the_thread_mode(session: cricket_client.Connection) -> None:
    rt = cudart.cudaError_t
    err, stream = cudart.cudaStreamCreate()
    assert err == rt.cudaSuccess
    global_ = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    assert cudart.cudaStreamBeginCapture(stream, global_)[0] == rt.cudaSuccess
    assert cudart.cudaMalloc(256) == (rt.cudaErrorStreamCaptureUnsupported, None)
    assert cudart.cudaStreamEndCapture(stream)[0] == rt.cudaErrorStreamCaptureInvalidated
    assert cudart.cudaStreamBeginCapture(stream, global_)[0] == rt.cudaSuccess
    relaxed = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
    assert cudart.cudaThreadExchangeStreamCaptureMode(relaxed) == (rt.cudaSuccess, global_)
    err, ptr = cudart.cudaMalloc(256)
    assert err == rt.cudaSuccess
    assert cudart.cudaFree(ptr) == (rt.cudaSuccess,)
    err, graph = cudart.cudaStreamEndCapture(stream)
    assert err == rt.cudaSuccess
    assert cudart.cudaGraphDestroy(graph) == (rt.cudaSuccess,)
