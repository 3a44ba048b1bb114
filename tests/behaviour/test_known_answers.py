"""Answers the client already knows do not travel: a repeated device, context or function
query is answered by the client, equal to what the server answers, and the server does not
see it (its count of the session's calls, SESSION_CALLS, stays put); the calls that change an
answer make the next query ask again."""

from __future__ import annotations

import ctypes
from typing import Any

from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

A = cuda.CUdevice_attribute
F = cuda.CUfunction_attribute


def server_calls(conn: cricket_client.Connection) -> int:
    """How many calls the server executed for this session (SESSION_CALLS is not counted)."""
    reply = conn._stub.SESSION_CALLS()
    assert reply.err == 0
    return int(reply.value)


def device_answers(dev: Any) -> list[Any]:
    return [
        check(cuda.cuDriverGetVersion()),
        check(cuda.cuDeviceGetCount()),
        int(check(cuda.cuDeviceGet(0))),
        check(cuda.cuDeviceGetName(64, dev)),
        check(cuda.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)),
        check(cuda.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev)),
        check(cuda.cuDeviceTotalMem(dev)),
        check(cuda.cuDeviceGetUuid(dev)).bytes,
        check(cuda.cuDeviceGetPCIBusId(32, dev)),
        int(check(cuda.cuCtxGetDevice())),
        int(check(cuda.cuCtxGetCurrent())),
        check(cuda.cuCtxGetStreamPriorityRange()),
        check(cuda.cuCtxGetId(check(cuda.cuCtxGetCurrent()))),  # fixed for the context's life
    ]


def test_repeated_device_and_context_queries_do_not_travel_and_answer_as_the_server(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    dev = check(cuda.cuDeviceGet(0))
    first = device_answers(dev)
    calls = server_calls(session)
    for _ in range(5):
        assert device_answers(dev) == first
    assert server_calls(session) == calls, "repeated queries reached the server"
    assert session.replay_log.seq == calls  # the client counts what the server counts
    with other_session.active():  # a fresh session asks the server each time
        fresh = device_answers(dev)
    assert fresh[:10] == first[:10]  # contexts differ between sessions; the rest is the device's
    assert fresh[11] == first[11]


def test_device_properties_are_asked_once(session: cricket_client.Connection) -> None:
    first = check(cudart.cudaGetDeviceProperties(0))
    calls = server_calls(session)
    again = check(cudart.cudaGetDeviceProperties(0))
    assert server_calls(session) == calls
    assert again.name == first.name and again.totalGlobalMem == first.totalGlobalMem
    assert again.multiProcessorCount == first.multiProcessorCount
    assert again.multiProcessorCount == check(
        cuda.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)
    )


def test_a_function_attribute_reads_back_what_cuFuncSetAttribute_set(
    session: cricket_client.Connection, kernels: Any
) -> None:
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    dyn = F.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    threads = check(cuda.cuFuncGetAttribute(F.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, saxpy))
    before = check(cuda.cuFuncGetAttribute(dyn, saxpy))
    calls = server_calls(session)
    assert check(cuda.cuFuncGetAttribute(dyn, saxpy)) == before
    assert server_calls(session) == calls
    check(cuda.cuFuncSetAttribute(saxpy, dyn, before + 1024))
    assert check(cuda.cuFuncGetAttribute(dyn, saxpy)) == before + 1024
    assert check(cuda.cuFuncGetAttribute(F.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, saxpy)) == threads


def test_the_current_context_follows_create_pop_push_and_set(
    session: cricket_client.Connection,
) -> None:
    dev = check(cuda.cuDeviceGet(0))
    primary = int(check(cuda.cuCtxGetCurrent()))
    assert primary != 0
    made = check(cuda.cuCtxCreate(None, 0, dev))
    try:
        assert int(check(cuda.cuCtxGetCurrent())) == int(made)
        assert int(check(cuda.cuCtxPopCurrent())) == int(made)
        assert int(check(cuda.cuCtxGetCurrent())) == primary
        check(cuda.cuCtxPushCurrent(made))
        assert int(check(cuda.cuCtxGetCurrent())) == int(made)
        check(cuda.cuCtxSetCurrent(cuda.CUcontext(primary)))
        assert int(check(cuda.cuCtxGetCurrent())) == primary
        assert int(check(cuda.cuCtxGetDevice())) == int(dev)
    finally:
        check(cuda.cuCtxDestroy(made))
    assert int(check(cuda.cuCtxGetCurrent())) == primary


def test_a_released_primary_context_is_no_longer_answered_as_current(
    session: cricket_client.Connection,
) -> None:
    dev = check(cuda.cuDeviceGet(0))
    assert int(check(cuda.cuCtxGetDevice())) == int(dev)
    check(cuda.cuDevicePrimaryCtxRelease(dev))  # open_session retained it once
    err, _ = cuda.cuCtxGetDevice()
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_CONTEXT


def test_a_synchronize_with_nothing_sent_since_the_last_does_not_travel(
    session: cricket_client.Connection, kernels: Any
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuCtxSynchronize())
    calls = server_calls(session)
    for _ in range(3):
        check(cuda.cuCtxSynchronize())
        check(cuda.cuStreamSynchronize(0))
    assert server_calls(session) == calls
    check(cuda.cuStreamSynchronize(stream))  # another stream: asked
    assert server_calls(session) == calls + 1
    check(cuda.cuStreamSynchronize(stream))
    assert cuda.cuStreamQuery(stream)[0] == cuda.CUresult.CUDA_SUCCESS
    assert server_calls(session) == calls + 1


def test_work_sent_after_a_synchronize_is_waited_for_by_the_next(
    session: cricket_client.Connection, kernels: Any
) -> None:
    """The answer only holds while nothing was sent: a launch makes the next synchronize
    travel, wait for it, and report what the launch did."""
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    counter, _ = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
    args = ((5,), (ctypes.c_int,))
    check(cuda.cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, 0, ((0,), (ctypes.c_int,)), 0))
    check(cuda.cuMemsetD32(counter, 0, 1))  # (the first launch asked for the parameters)
    check(cuda.cuCtxSynchronize())
    check(cuda.cuCtxSynchronize())
    calls = server_calls(session)
    check(cuda.cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, 0, args, 0))
    check(cuda.cuCtxSynchronize())
    assert server_calls(session) == calls + 2  # the launch and the synchronize
    out = bytearray(4)
    check(cuda.cuMemcpyDtoH(out, counter, 4))
    assert int.from_bytes(out, "little") == 32 * 5
    check(cuda.cuStreamSynchronize(0))  # after a copy: asked again
    assert server_calls(session) == calls + 4


def test_a_stream_read_back_by_a_copy_needs_no_synchronize_after_it(
    session: cricket_client.Connection, kernels: Any
) -> None:
    """cuMemcpyDtoHAsync returns once the server had the stream hand over the bytes: a
    cuStreamSynchronize (or query) of that stream right after does not travel; one after
    more work does, and another stream is still asked."""
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    counter, _ = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
    stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    other = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    args = ((5,), (ctypes.c_int,))
    check(cuda.cuMemsetD32(counter, 0, 1))
    for size in (4, 64 << 10):  # inline, and through the bulk path where it is set up
        out = bytearray(size)
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, stream, args, 0))
        check(cuda.cuMemcpyDtoHAsync(out, counter, 4, stream))
        calls = server_calls(session)
        check(cuda.cuStreamSynchronize(stream))
        assert cuda.cuStreamQuery(stream)[0] == cuda.CUresult.CUDA_SUCCESS
        assert server_calls(session) == calls, "the synchronize after the copy travelled"
        assert int.from_bytes(out[:4], "little") == 32 * 5 * (1 if size == 4 else 2)
        check(cuda.cuStreamSynchronize(other))  # another stream: asked
        assert server_calls(session) == calls + 1
    calls = server_calls(session)
    check(cuda.cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, stream, args, 0))
    check(cuda.cuStreamSynchronize(stream))  # work sent since the copy: waited for
    assert server_calls(session) == calls + 2  # the launch and the synchronize


def test_a_failed_launch_after_a_synchronize_is_reported_by_the_next(
    session: cricket_client.Connection, kernels: Any
) -> None:
    check(cuda.cuCtxSynchronize())
    poke = check(cuda.cuModuleGetFunction(kernels, b"poke"))
    err = cuda.cuLaunchKernel(poke, 1, 1, 1, 1 << 20, 1, 1, 0, 0, ((0, 1), (None, ctypes.c_int)), 0)[0]
    if err == cuda.CUresult.CUDA_SUCCESS:  # pipelined: the failure comes with the synchronize
        err = cuda.cuCtxSynchronize()[0]
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE


P = cuda.CUpointer_attribute


def test_pointer_attributes_of_an_allocation_are_asked_once_and_forgotten_at_its_free(
    session: cricket_client.Connection,
) -> None:
    size = 1 << 16
    ptr = check(cuda.cuMemAlloc(size))
    base = int(check(cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr)))
    assert base == int(ptr)
    ordinal = check(cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr))
    calls = server_calls(session)
    for _ in range(3):
        assert int(check(cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr))) == base
        assert check(cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)) == ordinal
    assert server_calls(session) == calls
    check(cuda.cuMemFree(ptr))
    err, _ = cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE


def test_an_address_freed_on_a_stream_is_no_longer_answered_as_allocated(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    ptr = check(cuda.cuMemAllocAsync(4096, stream))
    check(cuda.cuStreamSynchronize(stream))
    size = check(cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr))
    assert size >= 4096
    check(cuda.cuMemFreeAsync(ptr, stream))
    check(cuda.cuStreamSynchronize(stream))
    err, _ = cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE


def test_an_address_that_is_no_allocation_yet_is_answered_once_allocated(
    session: cricket_client.Connection,
) -> None:
    ptr = check(cuda.cuMemAlloc(1 << 20))
    check(cuda.cuMemFree(ptr))
    err, _ = cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    again = check(cuda.cuMemAlloc(1 << 20))
    if int(again) == int(ptr):  # the same address handed out again: answered as allocated
        assert check(cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_RANGE_SIZE, again)) >= 1 << 20
    check(cuda.cuMemFree(again))


def test_copies_of_the_context_answers_are_dropped_whenever_the_clients_may_change(
    session: cricket_client.Connection, other_session: cricket_client.Connection, kernels: Any
) -> None:
    """What the native library keeps in C (known_context) hears each time: a context call, a
    failure waiting to be reported, another connection made a thread's."""
    from cricket_client import known_answers

    heard: list[int] = []
    known_answers.on_context_change.append(lambda: heard.append(1))
    try:
        ctx = check(cuda.cuCtxGetCurrent())
        assert not heard  # a query changes nothing
        check(cuda.cuCtxSetCurrent(ctx))
        assert not heard  # nor does setting the context already current
        popped = check(cuda.cuCtxPopCurrent())
        assert len(heard) >= 1
        check(cuda.cuCtxPushCurrent(popped))
        heard.clear()
        poke = check(cuda.cuModuleGetFunction(kernels, b"poke"))
        check(cuda.cuCtxSynchronize())
        cuda.cuLaunchKernel(poke, 1, 1, 1, 1 << 20, 1, 1, 0, 0, ((0, 1), (None, ctypes.c_int)), 0)
        assert cuda.cuCtxSynchronize()[0] == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
        assert heard  # the failure waited to be reported
        heard.clear()
        with other_session.active():
            assert heard
        assert len(heard) == 2
    finally:
        known_answers.on_context_change.pop()


def test_a_primary_contexts_state_is_asked_once_and_again_once_it_changes(
    session: cricket_client.Connection,
) -> None:
    dev = check(cuda.cuDeviceGet(0))
    first = cuda.cuDevicePrimaryCtxGetState(dev)  # open_session retained it once: active
    assert first[0] == cuda.CUresult.CUDA_SUCCESS and first[2] == 1
    calls = server_calls(session)
    for _ in range(3):
        assert cuda.cuDevicePrimaryCtxGetState(dev) == first
    assert server_calls(session) == calls, "a repeated state query reached the server"
    check(cuda.cuDevicePrimaryCtxRelease(dev))
    assert cuda.cuDevicePrimaryCtxGetState(dev)[2] == 0  # released: asked again, inactive
    check(cuda.cuDevicePrimaryCtxRetain(dev))
    assert cuda.cuDevicePrimaryCtxGetState(dev) == first
    assert server_calls(session) > calls


def test_setting_the_context_already_current_does_not_travel(
    session: cricket_client.Connection,
) -> None:
    dev = check(cuda.cuDeviceGet(0))
    primary = check(cuda.cuCtxGetCurrent())
    calls = server_calls(session)
    for _ in range(3):  # CuPy sets its device's context around each operation
        assert cuda.cuCtxSetCurrent(primary) == (cuda.CUresult.CUDA_SUCCESS,)
        assert int(check(cuda.cuCtxGetCurrent())) == int(primary)
    assert server_calls(session) == calls, "setting the current context again reached the server"
    assert session.replay_log.seq == calls
    made = check(cuda.cuCtxCreate(None, 0, dev))  # now current
    try:
        assert cuda.cuCtxSetCurrent(primary) == (cuda.CUresult.CUDA_SUCCESS,)  # a change: sent
        assert int(check(cuda.cuCtxGetCurrent())) == int(primary)
        assert int(check(cuda.cuCtxGetDevice())) == int(dev)
    finally:
        check(cuda.cuCtxDestroy(made))
    assert server_calls(session) > calls


def test_a_default_stream_is_known_not_capturing_until_a_capture_begins(
    session: cricket_client.Connection,
) -> None:
    none = cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
    active = cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE
    check(cuda.cuCtxGetCurrent())  # the current context known (the default streams are valid)
    calls = server_calls(session)
    for stream in (0, cuda.CUstream(cuda.CU_STREAM_LEGACY), cuda.CUstream(cuda.CU_STREAM_PER_THREAD)):
        info = cuda.cuStreamGetCaptureInfo(stream)
        assert info[:3] == (cuda.CUresult.CUDA_SUCCESS, none, 0) and info[4:] == ([], [], 0)
        assert cuda.cuStreamIsCapturing(stream) == (cuda.CUresult.CUDA_SUCCESS, none)
    assert server_calls(session) == calls, "a default stream's capture status reached the server"
    stream = check(cuda.cuStreamCreate(0))
    try:
        assert cuda.cuStreamIsCapturing(stream)[1] == none  # a stream made here: asked
        relaxed = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        check(cuda.cuStreamBeginCapture(stream, relaxed))
        asked = server_calls(session)
        assert cuda.cuStreamIsCapturing(stream)[1] == active
        assert cuda.cuStreamGetCaptureInfo(0)[0] == cuda.CUresult.CUDA_SUCCESS
        assert server_calls(session) == asked + 2  # while a capture is under way: asked
        graph = check(cuda.cuStreamEndCapture(stream))
        check(cuda.cuGraphDestroy(graph))
    finally:
        check(cuda.cuStreamDestroy(stream))
    calls = server_calls(session)
    assert cuda.cuStreamIsCapturing(0) == (cuda.CUresult.CUDA_SUCCESS, none)
    assert server_calls(session) == calls
