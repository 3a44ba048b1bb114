"""Host inputs of queued graph launches in more shapes: two input copies that no node precedes,
and an input copy that follows a kernel. Each launch computes with the bytes of its own call,
however many are queued, on one stream or moving between two."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

N = 1024
BLOCK = 256
LAUNCHES = 20


@pytest.fixture
def saxpy(kernels: Any) -> Any:
    return check(cuda.cuModuleGetFunction(kernels, b"saxpy"))


def _saxpy(saxpy: Any, a: float, x: Any, y: Any, stream: Any) -> None:
    args = ((a, x, y, N), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(saxpy, N // BLOCK, 1, 1, BLOCK, 1, 1, 0, stream, args, 0))


def _buffers(count: int) -> list[Any]:
    out = []
    for _ in range(count):
        ptr = check(cuda.cuMemAlloc(4 * N))
        check(cuda.cuMemsetD8(ptr, 0, 4 * N))
        out.append(ptr)
    return out


def _y(dy: Any) -> np.ndarray:
    y = np.empty(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(y, dy, y.nbytes))
    return y


def _begin(stream: Any) -> None:
    mode = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
    check(cuda.cuStreamBeginCapture(stream, mode))


def _end(stream: Any) -> Any:
    return check(cuda.cuGraphInstantiate(check(cuda.cuStreamEndCapture(stream)), 0))


@pytest.mark.parametrize("streams", [1, 2])
def test_two_root_input_copies_of_queued_launches_each_bring_their_own_bytes(
    session: cricket_client.Connection, saxpy: Any, streams: int
) -> None:
    dx, dw, dy = _buffers(3)
    x, w = np.zeros(N, dtype=np.float32), np.zeros(N, dtype=np.float32)
    ss = [check(cuda.cuStreamCreate(0)) for _ in range(streams)]
    _begin(ss[0])
    check(cuda.cuMemcpyHtoDAsync(dx, x, 4 * N, ss[0]))
    check(cuda.cuMemcpyHtoDAsync(dw, w, 4 * N, ss[0]))
    _saxpy(saxpy, 1.0, dx, dy, ss[0])  # y += x
    _saxpy(saxpy, 2.0, dw, dy, ss[0])  # y += 2 w
    exec_ = _end(ss[0])
    for i in range(1, LAUNCHES + 1):
        x[:] = i
        w[:] = 100 * i
        check(cuda.cuGraphLaunch(exec_, ss[i % streams]))
    for s in ss:
        check(cuda.cuStreamSynchronize(s))
    total = LAUNCHES * (LAUNCHES + 1) / 2
    assert np.array_equal(_y(dy), np.full(N, total + 200 * total, dtype=np.float32))


def test_an_input_copy_after_a_kernel_of_queued_launches_brings_its_own_bytes(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    dx, dy, dz = _buffers(3)
    x = np.zeros(N, dtype=np.float32)
    ones = np.ones(N, dtype=np.float32)
    check(cuda.cuMemcpyHtoD(dz, ones, ones.nbytes))
    stream = check(cuda.cuStreamCreate(0))
    _begin(stream)
    _saxpy(saxpy, 1.0, dz, dy, stream)  # y += 1, before the input copy
    check(cuda.cuMemcpyHtoDAsync(dx, x, 4 * N, stream))
    _saxpy(saxpy, 1.0, dx, dy, stream)  # y += x
    exec_ = _end(stream)
    for i in range(1, LAUNCHES + 1):
        x[:] = i
        check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    expected = LAUNCHES + LAUNCHES * (LAUNCHES + 1) / 2
    assert np.array_equal(_y(dy), np.full(N, expected, dtype=np.float32))
