"""Graph launches gathered as kernel launches are: a loop of launches with host inputs leaves
in few writes (not one per launch) and computes what the same launches made one by one do;
a launch held while earlier work is outstanding leaves by itself, without a later call."""

from __future__ import annotations

import ctypes
import time
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

N = 1024
BLOCK = 256
LAUNCHES = 40


@pytest.fixture
def saxpy(kernels: Any) -> Any:
    return check(cuda.cuModuleGetFunction(kernels, b"saxpy"))


def _graph(saxpy: Any, dx: Any, dy: Any, host: Any, stream: Any) -> Any:
    """Captured: host -> dx, then y += 1.0 * x."""
    args = ((1.0, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    check(cuda.cuMemcpyHtoDAsync(dx, host, 4 * N, stream))
    check(cuda.cuLaunchKernel(saxpy, N // BLOCK, 1, 1, BLOCK, 1, 1, 0, stream, args, 0))
    return check(cuda.cuGraphInstantiate(check(cuda.cuStreamEndCapture(stream)), 0))


class _CountingSocket:
    """The connection's socket, its writes counted."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._sock, name)
        if name not in ("send", "sendmsg", "sendall"):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            return attr(*args, **kwargs)

        return counted


def _setup(saxpy: Any) -> tuple[Any, Any, Any, Any, Any]:
    dx, dy = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    check(cuda.cuMemsetD8(dy, 0, 4 * N))
    host = np.zeros(N, dtype=np.float32)
    stream = check(cuda.cuStreamCreate(0))
    return dx, dy, host, stream, _graph(saxpy, dx, dy, host, stream)


def _y(dy: Any) -> np.ndarray:
    y = np.empty(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(y, dy, y.nbytes))
    return y


def test_a_loop_of_graph_launches_leaves_in_few_writes_and_computes_the_same(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    dx, dy, host, stream, exec_ = _setup(saxpy)
    rpc = session._rpc
    counting = _CountingSocket(rpc._sock)
    rpc._sock = counting
    try:
        for i in range(1, LAUNCHES + 1):
            host[:] = i  # each launch takes the bytes of its own call
            check(cuda.cuGraphLaunch(exec_, stream))
        writes = counting.writes
        check(cuda.cuStreamSynchronize(stream))
    finally:
        rpc._sock = counting._sock
    assert writes <= LAUNCHES // 4, f"{writes} writes for {LAUNCHES} graph launches"
    assert np.array_equal(_y(dy), np.full(N, LAUNCHES * (LAUNCHES + 1) / 2, dtype=np.float32))


def test_a_held_graph_launch_leaves_without_a_later_call(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    dx, dy, host, stream, exec_ = _setup(saxpy)
    host[:] = 1
    check(cuda.cuGraphLaunch(exec_, stream))  # nothing outstanding: leaves at once
    host[:] = 2
    check(cuda.cuGraphLaunch(exec_, stream))  # the first one's reply not in: held
    rpc = session._rpc
    deadline = time.monotonic() + 30
    while rpc.queued_bytes or session.pipeline.launches.queued:  # no call meanwhile
        assert time.monotonic() < deadline, "a held graph launch never left"
        time.sleep(0.001)
    check(cuda.cuStreamSynchronize(stream))
    assert np.array_equal(_y(dy), np.full(N, 3, dtype=np.float32))
