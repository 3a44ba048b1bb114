"""Graph launches queued back to back (no wait between them) whose memcpy nodes read client
host memory: each launch copies the host bytes as they were when cuGraphLaunch was called,
however many launches are still in flight, on one stream or alternating between two (CUDA
orders the launches of one exec); a launch with a device-to-host node returns this launch's
bytes."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 1024
BLOCK = 256
LAUNCHES = 24  # more than the server keeps in flight without waiting


@pytest.fixture
def saxpy(kernels: Any) -> Any:
    return check(cuda.cuModuleGetFunction(kernels, b"saxpy"))


def _step_graph(saxpy: Any, dx: Any, dy: Any, host: Any, stream: Any, out: Any = None) -> Any:
    """Captured: host -> dx, y += 1.0 * x, and (with `out`) 4 bytes of y back to the host."""
    args = ((1.0, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    check(cuda.cuMemcpyHtoDAsync(dx, host, 4 * N, stream))
    check(cuda.cuLaunchKernel(saxpy, N // BLOCK, 1, 1, BLOCK, 1, 1, 0, stream, args, 0))
    if out is not None:
        check(cuda.cuMemcpyDtoHAsync(out, dy, 4, stream))
    return check(cuda.cuGraphInstantiate(check(cuda.cuStreamEndCapture(stream)), 0))


def _zeros(nbytes: int) -> Any:
    ptr = check(cuda.cuMemAlloc(nbytes))
    check(cuda.cuMemsetD8(ptr, 0, nbytes))
    return ptr


@pytest.mark.parametrize("host_kind", ["address", "array"])
def test_queued_launches_each_copy_the_host_bytes_of_their_call(
    session: cricket_client.Connection, saxpy: Any, host_kind: str
) -> None:
    dx, dy = _zeros(4 * N), _zeros(4 * N)
    pinned = check(cudart.cudaMallocHost(4 * N))
    view = np.ctypeslib.as_array((ctypes.c_float * N).from_address(pinned))
    host = pinned if host_kind == "address" else np.zeros(N, dtype=np.float32)
    fill = view if host_kind == "address" else host
    stream = check(cuda.cuStreamCreate(0))
    exec_ = _step_graph(saxpy, dx, dy, host, stream)
    for i in range(1, LAUNCHES + 1):
        fill[:] = np.arange(N, dtype=np.float32) + i  # changed right after the launch before
        check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    y = np.empty(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(y, dy, y.nbytes))
    expected = LAUNCHES * np.arange(N, dtype=np.float32) + LAUNCHES * (LAUNCHES + 1) / 2
    assert np.array_equal(y, expected.astype(np.float32))
    check(cuda.cuGraphExecDestroy(exec_))
    del view
    check(cudart.cudaFreeHost(pinned))


def test_queued_launches_alternating_between_two_streams_keep_their_order(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    dx, dy = _zeros(4 * N), _zeros(4 * N)
    host = np.zeros(N, dtype=np.float32)
    streams = [check(cuda.cuStreamCreate(0)), check(cuda.cuStreamCreate(0))]
    exec_ = _step_graph(saxpy, dx, dy, host, streams[0])
    for i in range(1, LAUNCHES + 1):
        host[:] = i
        check(cuda.cuGraphLaunch(exec_, streams[i % 2]))
    for s in streams:
        check(cuda.cuStreamSynchronize(s))
    y = np.empty(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(y, dy, y.nbytes))
    assert np.all(y == np.float32(LAUNCHES * (LAUNCHES + 1) / 2))


def test_each_launch_returns_its_own_device_to_host_bytes(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    """A decoding loop: the token of each step is in host memory when the step is waited for."""
    dx, dy = _zeros(4 * N), _zeros(4 * N)
    host = np.ones(N, dtype=np.float32)
    token = np.full(1, -1, dtype=np.float32)
    stream = check(cuda.cuStreamCreate(0))
    exec_ = _step_graph(saxpy, dx, dy, host, stream, out=token)
    for i in range(1, LAUNCHES + 1):
        check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        assert token[0] == np.float32(i), f"step {i}"
