"""Streams and events: ordering within and across streams, timing, queries."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from behaviour_helpers import SUCCESS, check

import cricket_client
from cricket_client import driver as cuda


def test_work_on_a_stream_runs_in_order(session: cricket_client.Connection, kernels: Any) -> None:
    n = 50_000
    stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    x = np.linspace(0, 1, n, dtype=np.float32)
    dx, dy = check(cuda.cuMemAlloc(x.nbytes)), check(cuda.cuMemAlloc(x.nbytes))
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    out = np.zeros_like(x)
    check(cuda.cuMemcpyHtoDAsync(dx, x, x.nbytes, stream))
    check(cuda.cuMemsetD32Async(dy, 0x3F800000, n, stream))  # 1.0f
    args = ((3.0, dx, dy, n), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(saxpy, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
    check(cuda.cuLaunchKernel(saxpy, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
    check(cuda.cuMemcpyDtoHAsync(out, dy, x.nbytes, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert cuda.cuStreamQuery(stream) == (SUCCESS,)
    assert np.allclose(out, 6.0 * x + 1.0, rtol=1e-6)
    check(cuda.cuStreamDestroy(stream))


def test_event_orders_two_streams(session: cricket_client.Connection, kernels: Any) -> None:
    n = 1 << 20
    first = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    second = check(cuda.cuStreamCreateWithPriority(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING, 0))
    done = check(cuda.cuEventCreate(cuda.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    buf, copy = check(cuda.cuMemAlloc(4 * n)), check(cuda.cuMemAlloc(4 * n))
    fill = check(cuda.cuModuleGetFunction(kernels, b"fill_u32"))
    args = ((buf, 0xC0FFEE, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuLaunchKernel(fill, 64, 1, 1, 256, 1, 1, 0, first, args, 0))
    check(cuda.cuEventRecord(done, first))
    check(cuda.cuStreamWaitEvent(second, done, 0))
    check(cuda.cuMemcpyDtoDAsync(copy, buf, 4 * n, second))
    check(cuda.cuStreamSynchronize(second))
    assert cuda.cuEventQuery(done) == (SUCCESS,)
    out = np.zeros(n, np.uint32)
    check(cuda.cuMemcpyDtoH(out, copy, out.nbytes))
    assert (out == 0xC0FFEE).all()


def test_elapsed_time_between_events(session: cricket_client.Connection, kernels: Any) -> None:
    n = 16 << 20
    start, end = check(cuda.cuEventCreate(0)), check(cuda.cuEventCreate(0))
    buf = check(cuda.cuMemAlloc(4 * n))
    fill = check(cuda.cuModuleGetFunction(kernels, b"fill_u32"))
    check(cuda.cuEventRecord(start, 0))
    check(cuda.cuLaunchKernel(fill, 256, 1, 1, 256, 1, 1, 0, 0, ((buf, 1, n), (None, ctypes.c_uint, ctypes.c_ulonglong)), 0))
    check(cuda.cuEventRecord(end, 0))
    check(cuda.cuEventSynchronize(end))
    assert check(cuda.cuEventElapsedTime(start, end)) > 0
    check(cuda.cuEventDestroy(start))
    check(cuda.cuEventDestroy(end))


def test_default_streams(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(64))
    for stream in (None, 0, cuda.CU_STREAM_LEGACY, cuda.CU_STREAM_PER_THREAD, cuda.CUstream(0)):
        check(cuda.cuMemsetD8Async(ptr, 9, 64, stream))
        check(cuda.cuStreamSynchronize(stream))
        assert cuda.cuStreamQuery(stream) == (SUCCESS,)


def test_stream_priorities(session: cricket_client.Connection) -> None:
    least, greatest = check(cuda.cuCtxGetStreamPriorityRange())
    assert greatest <= least
    stream = check(cuda.cuStreamCreateWithPriority(0, greatest))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuStreamDestroy(stream))
