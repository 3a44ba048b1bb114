"""Host functions and stream callbacks run on the client after the stream's earlier work and
before work added later (cuLaunchHostFunc, cuStreamAddCallback, their runtime forms), with
cuda-python's ways of passing the function; in a capture they are refused naming the call."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 1 << 20  # large enough that the memset is still running if nothing waited for it


class Seen(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_int), ("first", ctypes.c_uint8), ("status", ctypes.c_int)]


def _device_bytes(ptr: Any) -> np.ndarray:
    out = np.zeros(N, np.uint8)
    check(cuda.cuMemcpyDtoH(out, ptr, N))
    return out


def test_a_host_function_sees_the_streams_earlier_work_done(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    ptr = check(cuda.cuMemAlloc(N))
    seen = Seen()
    host = np.zeros(1, np.uint8)

    def callback(data: int) -> None:
        state = Seen.from_address(data)
        state.calls += 1
        check(cuda.cuMemcpyDtoH(host, ptr, 1))  # (a real host function must not call CUDA;
        state.first = int(host[0])  # this test does, to see what the GPU had done)

    c_callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(callback)
    check(cuda.cuMemsetD8Async(ptr, 9, N, stream))
    fn = cuda.CUhostFn(_ptr=ctypes.addressof(c_callback))  # as cuda-python's samples do
    assert cuda.cuLaunchHostFunc(stream, fn, ctypes.addressof(seen)) == (cuda.CUresult.CUDA_SUCCESS,)
    assert (seen.calls, seen.first) == (1, 9)
    assert cuda.cuLaunchHostFunc(stream, cuda.CUhostFn(ctypes.cast(c_callback, ctypes.c_void_p).value),
                                 ctypes.addressof(seen), ) == (cuda.CUresult.CUDA_SUCCESS,)
    assert seen.calls == 2
    assert cuda.cuLaunchHostFunc_v2(stream, fn, ctypes.addressof(seen), 0) == (cuda.CUresult.CUDA_SUCCESS,)
    assert seen.calls == 3
    assert (_device_bytes(ptr) == 9).all()
    check(cuda.cuMemFree(ptr))
    check(cuda.cuStreamDestroy(stream))


def test_a_stream_callback_gets_its_stream_and_status(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    seen = Seen(status=-1)
    streams: list[int] = []

    def callback(hstream: int, status: int, data: int) -> None:
        streams.append(hstream)
        state = Seen.from_address(data)
        state.calls += 1
        state.status = status

    c_callback = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p)(callback)
    fn = cuda.CUstreamCallback(_ptr=ctypes.addressof(c_callback))
    assert cuda.cuStreamAddCallback(stream, fn, ctypes.addressof(seen), 0) == (cuda.CUresult.CUDA_SUCCESS,)
    assert (seen.calls, seen.status, streams) == (1, 0, [int(stream)])
    assert cuda.cuStreamAddCallback(stream, fn, ctypes.addressof(seen), 1) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    assert seen.calls == 1
    check(cuda.cuStreamDestroy(stream))


def test_in_a_capture_a_host_function_is_refused_naming_the_call(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    calls = []
    c_callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda data: calls.append(data))
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    err, = cuda.cuLaunchHostFunc(stream, cuda.CUhostFn(_ptr=ctypes.addressof(c_callback)), None)
    assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED and calls == []
    assert "cuLaunchHostFunc" in cricket_client.last_error_message()
    graph = check(cuda.cuStreamEndCapture(stream))
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuStreamDestroy(stream))


def test_runtime_forms_as_cuda_pythons_test_passes_them(rt: cricket_client.Connection) -> None:
    seen = Seen()

    def host(data: int) -> int:
        Seen.from_address(data).calls += 1
        return 0

    def on_stream(stream: int, status: int, data: int) -> int:
        Seen.from_address(data).calls += 10
        return 0

    c_host = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(host)
    c_stream = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(on_stream)
    err, stream = cudart.cudaStreamCreate()
    ok = (cudart.cudaError_t.cudaSuccess,)
    assert cudart.cudaLaunchHostFunc(stream, cudart.cudaHostFn_t(_ptr=ctypes.addressof(c_host)),
                                     ctypes.addressof(seen)) == ok
    assert cudart.cudaStreamAddCallback(stream, cudart.cudaStreamCallback_t(_ptr=ctypes.addressof(c_stream)),
                                        ctypes.addressof(seen), 0) == ok
    assert seen.calls == 11
    assert cudart.cudaStreamDestroy(stream) == ok
