"""A small cuMemcpyHtoD returns before the server ran it, as CUDA returns from a pageable copy
once the source is staged, and still behaves as a synchronous copy: the data arrives (taken
at the call), the order of the legacy stream holds both ways, a copy that would fail stays
synchronous, and a failure of earlier work surfaces at the next synchronizing call. A
decoding step (copy, gathered launches, a read) costs one round trip, and launches gathered
past 4 KiB leave in the read's write. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check
from test_launch_batch_one_write import CountingSocket

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
N = 1024  # floats: a 4 KiB copy


@pytest.fixture
def writes(session: cricket_client.Connection) -> Iterator[CountingSocket]:
    """The session's socket writes, counted; gathered launches wait for the call after them."""
    rpc = session._rpc
    session.pipeline.launches.delay = 60.0
    counting = CountingSocket(rpc._sock)
    rpc._sock = counting
    yield counting
    rpc._sock = counting._sock


def _saxpy(kernels: Any) -> Any:
    return check(cuda.cuModuleGetFunction(kernels, b"saxpy"))


def _launch_saxpy(saxpy: Any, x: Any, y: Any) -> None:
    args = ((2.0, x, y, N), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(saxpy, N // 256, 1, 1, 256, 1, 1, 0, 0, args, 0))


def test_a_small_copy_returns_early_and_its_bytes_are_taken_at_the_call(
    session: cricket_client.Connection,
) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    host = bytearray(b"a" * 4096)
    check(cuda.cuMemcpyHtoD(ptr, host, 4096))
    assert session.pending_count == 1  # on its way, not waited for
    host[:] = b"b" * 4096  # the caller reuses its buffer at once
    back = bytearray(4096)
    check(cuda.cuMemcpyDtoH(back, ptr, 4096))
    assert back == b"a" * 4096
    assert session.pending_count == 0


def test_the_legacy_stream_order_holds_both_ways(
    session: cricket_client.Connection, kernels: Any
) -> None:
    saxpy = _saxpy(kernels)
    x, y = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    ones = np.ones(N, dtype=np.float32)
    check(cuda.cuMemcpyHtoD(y, ones, ones.nbytes))
    for step in range(1, 21):  # each copy before the kernels that read it, after those before
        check(cuda.cuMemcpyHtoD(x, np.full(N, step, dtype=np.float32), 4 * N))
        _launch_saxpy(saxpy, x, y)  # y += 2 * step
        check(cuda.cuMemcpyHtoD(x, np.zeros(N, dtype=np.float32), 4 * N))  # after the kernel
    out = np.empty(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(out, y, out.nbytes))
    np.testing.assert_array_equal(out, np.full(N, 1 + 2 * sum(range(1, 21)), dtype=np.float32))
    check(cuda.cuMemcpyDtoH(out, x, out.nbytes))
    np.testing.assert_array_equal(out, np.zeros(N, dtype=np.float32))


def test_a_copy_that_would_fail_answers_itself(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    assert cuda.cuMemcpyHtoD(int(ptr) + 4094, b"over", 4) == (E.CUDA_ERROR_INVALID_VALUE,)
    spare = check(cuda.cuMemAlloc(64))
    check(cuda.cuMemFree(spare))
    assert cuda.cuMemcpyHtoD(spare, b"gone", 4)[0] != E.CUDA_SUCCESS  # freed: not early
    assert session.pending_count == 0
    check(cuda.cuMemcpyHtoD(ptr, b"fine", 4))  # the allocation still takes early copies
    assert session.pending_count == 1
    check(cuda.cuCtxSynchronize())


def test_no_early_copy_in_a_context_made_current_after_the_allocation(
    session: cricket_client.Connection,
) -> None:
    ptr = check(cuda.cuMemAlloc(64))
    dev = check(cuda.cuDeviceGet(0))
    other = check(cuda.cuCtxCreate(None, 0, dev))  # current now
    try:
        check(cuda.cuMemcpyHtoD(ptr, b"x" * 64, 64))  # unified addressing: allowed, waited for
        assert session.pending_count == 0
    finally:
        check(cuda.cuCtxDestroy(other))


def test_a_sticky_failure_surfaces_at_the_next_synchronizing_call(
    session: cricket_client.Connection, kernels: Any
) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    poke = check(cuda.cuModuleGetFunction(kernels, b"poke"))
    args = ((16, 1), (None, ctypes.c_int))  # writes outside every allocation
    assert cuda.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, 0, args, 0) == (E.CUDA_SUCCESS,)
    assert cuda.cuMemcpyHtoD(ptr, b"z" * 4096, 4096) == (E.CUDA_SUCCESS,)  # returned early
    word = bytearray(4)
    assert cuda.cuMemcpyDtoH(word, ptr, 4) == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert cuda.cuCtxSynchronize() == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)  # sticky
    assert cuda.cuMemcpyHtoD(ptr, b"z", 1) == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)  # reported now


def test_a_decoding_step_is_one_round_trip(
    session: cricket_client.Connection, kernels: Any, writes: CountingSocket
) -> None:
    """Per step: the copy's write, then the gathered launches and the read in one write;
    the only wait is the read's."""
    saxpy = _saxpy(kernels)
    x, y = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    host = np.ones(N, dtype=np.float32)
    check(cuda.cuMemcpyHtoD(y, host, host.nbytes))
    token = bytearray(4)
    _launch_saxpy(saxpy, x, y)  # its parameter layout fetched once, before counting
    check(cuda.cuMemcpyHtoD(y, host, host.nbytes))
    check(cuda.cuMemcpyDtoH(token, y, 4))
    rpc = session._rpc
    # a reply waited for among calls in flight; a synchronous call (answered at once when
    # nothing else is in flight, else it waits as `_call_waiting`)
    waits = {"_wait": 0, "call": 0, "_call_waiting": 0}

    def counting(name: str) -> Any:
        original = getattr(rpc, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            waits[name] += 1
            return original(*args, **kwargs)

        return counted

    before = len(writes.writes)
    steps = 20
    rpc._wait, rpc.call = counting("_wait"), counting("call")  # type: ignore[method-assign]
    rpc._call_waiting = counting("_call_waiting")  # type: ignore[method-assign]
    try:
        for _ in range(steps):
            check(cuda.cuMemcpyHtoD(x, host, host.nbytes))
            for _ in range(10):
                _launch_saxpy(saxpy, x, y)
            check(cuda.cuMemcpyDtoH(token, y, 4))
    finally:
        del rpc._wait, rpc.call, rpc._call_waiting
    assert struct.unpack("<f", token)[0] == 1 + 2 * 10 * steps
    answered_at_once = waits["call"] - waits["_call_waiting"]
    assert waits["_wait"] + answered_at_once == steps  # one round trip per step: the read's
    assert len(writes.writes) - before == 2 * steps, writes.writes[before:]


def test_launches_gathered_past_4_kib_leave_in_the_write_of_the_read(
    session: cricket_client.Connection, kernels: Any, writes: CountingSocket
) -> None:
    counter, _size = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    check(cuda.cuMemsetD32(counter, 0, 1))
    for _ in range(120):
        cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, ((1,), (ctypes.c_int,)), 0)
    assert sum(map(len, session.pipeline.launches.queued)) > 4096
    before = len(writes.writes)
    word = bytearray(4)
    check(cuda.cuMemcpyDtoH(word, counter, 4))
    assert struct.unpack("<i", word)[0] == 120
    assert len(writes.writes) - before == 1, writes.writes[before:]


def test_the_runtime_copies_take_the_same_path(server_address: str) -> None:
    from cricket_client import runtime as cudart

    conn = cricket_client.connect(server_address)
    try:
        err, ptr = cudart.cudaMalloc(4096)
        assert err == cudart.cudaError_t.cudaSuccess
        h2d = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
        assert cudart.cudaMemcpy(ptr, b"r" * 4096, 4096, h2d) == (cudart.cudaError_t.cudaSuccess,)
        assert conn.pending_count == 1  # returned early
        back = bytearray(4096)
        d2h = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        assert cudart.cudaMemcpy(back, ptr, 4096, d2h) == (cudart.cudaError_t.cudaSuccess,)
        assert back == b"r" * 4096
        assert cudart.cudaFree(ptr) == (cudart.cudaError_t.cudaSuccess,)
    finally:
        conn.close()
