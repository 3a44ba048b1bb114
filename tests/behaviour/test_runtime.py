"""The remote runtime API (cricket_client.runtime) against the server under test: devices,
errors with CUDA's per-thread last-error semantics, memory of every kind, streams, events,
libraries and launches. Each test has its own connection on which no driver call ran first."""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import KERNELS, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess
H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
D2D = cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice
H2H = cudart.cudaMemcpyKind.cudaMemcpyHostToHost
DEFAULT = cudart.cudaMemcpyKind.cudaMemcpyDefault


def test_devices_and_versions(rt: cricket_client.Connection) -> None:
    count = ok(cudart.cudaGetDeviceCount())
    assert count >= 1
    assert ok(cudart.cudaGetDevice()) == 0
    assert ok(cudart.cudaDriverGetVersion()) == ok(cuda.cuDriverGetVersion())
    assert ok(cudart.cudaRuntimeGetVersion()) == rt.info.runtime_version
    (err,) = cudart.cudaSetDevice(count)
    assert err == cudart.cudaError_t.cudaErrorInvalidDevice
    assert f"device {count}" in cricket_client.last_error_message()
    ok(cudart.cudaSetDevice(0))
    assert ok(cudart.cudaGetDevice()) == 0


def test_device_properties_come_from_the_device(rt: cricket_client.Connection) -> None:
    prop = ok(cudart.cudaGetDeviceProperties(0))
    attr = cuda.CUdevice_attribute
    dev = ok(cuda.cuDeviceGet(0))
    assert prop.name == ok(cuda.cuDeviceGetName(256, dev)).rstrip(b"\0")
    assert prop.totalGlobalMem == ok(cuda.cuDeviceTotalMem(dev))
    assert prop.uuid.bytes == ok(cuda.cuDeviceGetUuid(dev)).bytes
    assert prop.major == ok(cuda.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    assert prop.multiProcessorCount == ok(
        cuda.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    )
    assert prop.maxThreadsDim == [
        ok(cuda.cuDeviceGetAttribute(a, dev))
        for a in (
            attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
            attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
            attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
        )
    ]
    assert prop.warpSize == ok(
        cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrWarpSize, 0)
    )
    assert prop.maxThreadsPerBlock >= 1 and prop.sharedMemPerBlock > 0
    assert cudart.cudaGetDeviceProperties(99)[0] == cudart.cudaError_t.cudaErrorInvalidDevice


def test_last_error_stays_until_read_and_is_per_thread(rt: cricket_client.Connection) -> None:
    assert cudart.cudaGetLastError() == (OK,)
    (err,) = cudart.cudaFree(0x1234)  # not an allocation
    assert err == cudart.cudaError_t.cudaErrorInvalidValue
    ptr = ok(cudart.cudaMalloc(64))  # a success in between does not clear it
    assert cudart.cudaPeekAtLastError() == (err,)
    assert cudart.cudaPeekAtLastError() == (err,)
    seen: list[Any] = []
    thread = threading.Thread(target=lambda: seen.append(cudart.cudaPeekAtLastError()))
    thread.start()
    thread.join()
    assert seen == [(OK,)]  # another thread has its own last error
    assert cudart.cudaGetLastError() == (err,)
    assert cudart.cudaGetLastError() == (OK,)
    ok(cudart.cudaFree(ptr))


def test_an_asynchronous_failure_arrives_at_the_next_synchronization(
    rt: cricket_client.Connection,
) -> None:
    ptr = ok(cudart.cudaMalloc(256))
    stream = ok(cudart.cudaStreamCreate())
    # pipelined: the call itself returns success; the server's refusal comes back later
    assert cudart.cudaMemsetAsync(ptr + 4096, 0, 16, stream) == (OK,)
    (err,) = cudart.cudaStreamSynchronize(stream)
    assert err != OK
    assert cudart.cudaGetLastError() == (err,)
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFree(ptr))


def test_error_names_and_strings_are_cudas() -> None:
    e = cudart.cudaError_t.cudaErrorInvalidValue
    assert cudart.cudaGetErrorName(e) == (OK, b"cudaErrorInvalidValue")
    assert cudart.cudaGetErrorString(e) == (OK, b"invalid argument")
    assert cudart.cudaGetErrorString(OK) == (OK, b"no error")


def test_memcpy_every_kind(rt: cricket_client.Connection) -> None:
    n = 4096
    src = np.arange(n, dtype=np.uint8)
    a, b = ok(cudart.cudaMalloc(n)), ok(cudart.cudaMalloc(n))
    ok(cudart.cudaMemcpy(a, src, n, H2D))
    ok(cudart.cudaMemcpy(b, a, n, D2D))
    out = np.zeros(n, np.uint8)
    ok(cudart.cudaMemcpy(out, b, n, D2H))
    assert (out == src).all()
    host = np.zeros(n, np.uint8)
    ok(cudart.cudaMemcpy(host, src, n, H2H))
    assert (host == src).all()
    # cudaMemcpyDefault: the direction from the addresses (unified addressing)
    ok(cudart.cudaMemset(b, 0, n))
    ok(cudart.cudaMemcpy(b, src[::-1].copy(), n, DEFAULT))
    ok(cudart.cudaMemcpy(out, b, n, DEFAULT))
    assert (out == src[::-1]).all()
    ok(cudart.cudaMemcpy(a, b, n, DEFAULT))
    back = np.zeros(n, np.uint8)
    ok(cudart.cudaMemcpy(back, a, n, DEFAULT))
    assert (back == src[::-1]).all()
    ok(cudart.cudaFree(a))
    ok(cudart.cudaFree(b))


def test_async_copies_and_memsets_on_a_stream(rt: cricket_client.Connection) -> None:
    n = 1 << 16
    stream = ok(cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking))
    ptr = ok(cudart.cudaMalloc(n))
    ok(cudart.cudaMemsetAsync(ptr, 0xAB, n, stream))
    src = np.full(100, 7, np.uint8)
    ok(cudart.cudaMemcpyAsync(ptr + 10, src, 100, H2D, stream))
    out = np.zeros(n, np.uint8)
    ok(cudart.cudaMemcpyAsync(out, ptr, n, D2H, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    expect = np.full(n, 0xAB, np.uint8)
    expect[10:110] = 7
    assert (out == expect).all()
    assert cudart.cudaStreamQuery(stream) == (OK,)
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFree(ptr))


def test_pitched_memory_and_2d_copies(rt: cricket_client.Connection) -> None:
    width, height = 100, 7
    ptr, pitch = ok(cudart.cudaMallocPitch(width, height))
    assert pitch >= width
    host = np.arange(height * 128, dtype=np.uint32).astype(np.uint8).reshape(height, 128)
    ok(cudart.cudaMemset2D(ptr, pitch, 0xEE, pitch, height))
    ok(cudart.cudaMemcpy2D(ptr, pitch, host, 128, width, height, H2D))
    out = np.zeros((height, width + 3), np.uint8)
    ok(cudart.cudaMemcpy2D(out, width + 3, ptr, pitch, width, height, D2H))
    assert (out[:, :width] == host[:, :width]).all()
    assert (out[:, width:] == 0).all()  # the destination's pitch gap is left alone
    gap = np.zeros(pitch * height, np.uint8)
    ok(cudart.cudaMemcpy(gap, ptr, pitch * height, D2H))
    assert (gap.reshape(height, pitch)[:, width:] == 0xEE).all()  # so is the device's
    # device to device, and a 2D memset of a sub-rectangle, on a stream
    other, pitch2 = ok(cudart.cudaMallocPitch(width, height))
    stream = ok(cudart.cudaStreamCreate())
    ok(cudart.cudaMemcpy2DAsync(other, pitch2, ptr, pitch, width, height, D2D, stream))
    ok(cudart.cudaMemset2DAsync(other, pitch2, 1, 4, 2, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    ok(cudart.cudaMemcpy2DAsync(out, width + 3, other, pitch2, width, height, DEFAULT, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    expect = host[:, :width].copy()
    expect[:2, :4] = 1
    assert (out[:, :width] == expect).all()
    (err,) = cudart.cudaMemcpy2D(ptr, 8, host, 128, 16, 2, H2D)  # width > dpitch
    assert err == cudart.cudaError_t.cudaErrorInvalidPitchValue
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFree(ptr))
    ok(cudart.cudaFree(other))


def test_stream_ordered_allocation_and_mem_info(rt: cricket_client.Connection) -> None:
    free0, total = ok(cudart.cudaMemGetInfo())
    assert 0 < free0 <= total
    stream = ok(cudart.cudaStreamCreate())
    ptr = ok(cudart.cudaMallocAsync(1 << 20, stream))
    ok(cudart.cudaMemsetAsync(ptr, 3, 1 << 20, stream))
    out = np.zeros(16, np.uint8)
    ok(cudart.cudaMemcpyAsync(out, ptr + 1000, 16, D2H, stream))
    ok(cudart.cudaFreeAsync(ptr, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    assert (out == 3).all()
    ok(cudart.cudaStreamDestroy(stream))


def test_pointer_attributes(rt: cricket_client.Connection) -> None:
    ptr = ok(cudart.cudaMalloc(256))
    attrs = ok(cudart.cudaPointerGetAttributes(ptr + 16))
    assert attrs.type == cudart.cudaMemoryType.cudaMemoryTypeDevice
    assert attrs.device == 0
    assert attrs.devicePointer == ptr + 16
    pinned = ok(cudart.cudaMallocHost(64))
    attrs = ok(cudart.cudaPointerGetAttributes(pinned))
    assert attrs.type == cudart.cudaMemoryType.cudaMemoryTypeHost
    assert attrs.hostPointer == pinned and attrs.devicePointer == 0
    plain = ctypes.create_string_buffer(16)
    attrs = ok(cudart.cudaPointerGetAttributes(ctypes.addressof(plain)))
    assert attrs.type == cudart.cudaMemoryType.cudaMemoryTypeUnregistered
    ok(cudart.cudaFreeHost(pinned))
    ok(cudart.cudaFree(ptr))


def test_host_allocations_live_on_the_client(rt: cricket_client.Connection) -> None:
    n = 8192
    pinned = ok(cudart.cudaMallocHost(n))
    ctypes.memset(pinned, 0x5A, n)
    dev = ok(cudart.cudaMalloc(n))
    ok(cudart.cudaMemcpy(dev, pinned, n, H2D))
    other = ok(cudart.cudaHostAlloc(n, cudart.cudaHostAllocPortable))
    stream = ok(cudart.cudaStreamCreate())
    ok(cudart.cudaMemcpyAsync(other, dev, n, D2H, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    assert ctypes.string_at(other, n) == b"\x5a" * n
    mapped = ok(cudart.cudaHostAlloc(64, cudart.cudaHostAllocMapped))  # test_mapped_host_memory
    assert ok(cudart.cudaHostGetDevicePointer(mapped, 0))
    ok(cudart.cudaFreeHost(mapped))
    ok(cudart.cudaFreeHost(pinned))
    ok(cudart.cudaFreeHost(other))
    assert cudart.cudaFreeHost(pinned) == (cudart.cudaError_t.cudaErrorInvalidValue,)
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFree(dev))


def test_events_time_and_order_streams(rt: cricket_client.Connection) -> None:
    low, high = ok(cudart.cudaDeviceGetStreamPriorityRange())
    s1 = ok(cudart.cudaStreamCreateWithPriority(cudart.cudaStreamNonBlocking, high))
    s2 = ok(cudart.cudaStreamCreate())
    start, stop = ok(cudart.cudaEventCreate()), ok(cudart.cudaEventCreate())
    done = ok(cudart.cudaEventCreateWithFlags(cudart.cudaEventDisableTiming))
    n = 1 << 20
    ptr = ok(cudart.cudaMalloc(n))
    ok(cudart.cudaEventRecord(start, s1))
    ok(cudart.cudaMemsetAsync(ptr, 9, n, s1))
    ok(cudart.cudaEventRecordWithFlags(stop, s1, cudart.cudaEventRecordDefault))
    ok(cudart.cudaEventRecord(done, s1))
    ok(cudart.cudaStreamWaitEvent(s2, done, 0))
    out = np.zeros(n, np.uint8)
    ok(cudart.cudaMemcpyAsync(out, ptr, n, D2H, s2))  # after s1's memset
    ok(cudart.cudaStreamSynchronize(s2))
    assert (out == 9).all()
    ok(cudart.cudaEventSynchronize(stop))
    assert cudart.cudaEventQuery(stop) == (OK,)
    assert ok(cudart.cudaEventElapsedTime(start, stop)) >= 0.0
    err, ms = cudart.cudaEventElapsedTime(start, done)  # done has no timing
    assert err != OK and ms is None
    cudart.cudaGetLastError()
    for e in (start, stop, done):
        ok(cudart.cudaEventDestroy(e))
    for s in (s1, s2):
        ok(cudart.cudaStreamDestroy(s))
    ok(cudart.cudaFree(ptr))


def test_library_kernels_launch_and_report_attributes(rt: cricket_client.Connection) -> None:
    cubin = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
    lib = ok(cudart.cudaLibraryLoadData(cubin, None, None, 0, None, None, 0))
    kernel = ok(cudart.cudaLibraryGetKernel(lib, b"vector_add"))
    assert isinstance(kernel, cudart.cudaKernel_t)
    err, missing = cudart.cudaLibraryGetKernel(lib, b"no_such_kernel")
    assert err != OK and missing is None
    cudart.cudaGetLastError()
    n = 1000
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, np.float32)
    da, db, dc = (ok(cudart.cudaMalloc(a.nbytes)) for _ in range(3))
    ok(cudart.cudaMemcpy(da, a, a.nbytes, H2D))
    ok(cudart.cudaMemcpy(db, b, b.nbytes, H2D))
    args = ((da, db, dc, n), (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))
    block = 128
    ok(cudart.cudaLaunchKernel(kernel, cudart.dim3(x=(n + block - 1) // block), (block,), args, 0, 0))
    ok(cudart.cudaDeviceSynchronize())
    c = np.zeros(n, np.float32)
    ok(cudart.cudaMemcpy(c, dc, c.nbytes, D2H))
    assert (c == a + b).all()
    attrs = ok(cudart.cudaFuncGetAttributes(kernel))
    assert attrs.maxThreadsPerBlock >= block
    assert attrs.binaryVersion >= 90
    ok(cudart.cudaFuncSetAttribute(
        kernel, cudart.cudaFuncAttribute.cudaFuncAttributeMaxDynamicSharedMemorySize, 1024
    ))
    assert ok(cudart.cudaFuncGetAttributes(kernel)).maxDynamicSharedSizeBytes == 1024
    assert ok(cudart.cudaOccupancyMaxActiveBlocksPerMultiprocessor(kernel, block, 0)) >= 1
    (err,) = cudart.cudaLaunchKernel(kernel, 1, 1, ((da,), (ctypes.c_void_p,)), 0, 0)
    assert err == cudart.cudaError_t.cudaErrorInvalidValue  # 1 argument for 4 parameters
    assert cudart.cudaGetLastError() == (err,)
    for p in (da, db, dc):
        ok(cudart.cudaFree(p))
    ok(cudart.cudaLibraryUnload(lib))


def test_limits_reset_and_synchronize(rt: cricket_client.Connection) -> None:
    limit = cudart.cudaLimit.cudaLimitStackSize
    stack = ok(cudart.cudaDeviceGetLimit(limit))
    assert stack > 0
    ok(cudart.cudaDeviceSetLimit(limit, stack * 2))
    assert ok(cudart.cudaDeviceGetLimit(limit)) >= stack * 2
    ptr = ok(cudart.cudaMalloc(1 << 20))
    ok(cudart.cudaDeviceSynchronize())
    ok(cudart.cudaDeviceReset())  # frees what the device's primary context holds
    assert cudart.cudaFree(ptr) == (cudart.cudaError_t.cudaErrorInvalidValue,)
    cudart.cudaGetLastError()
    again = ok(cudart.cudaMalloc(256))  # and the runtime goes on on the same device
    ok(cudart.cudaFree(again))


def test_unsupported_names_fail_loudly() -> None:
    with pytest.raises(cricket_client.NotSupportedRemotely, match="cudaGraphicsGLRegisterBuffer"):
        cudart.cudaGraphicsGLRegisterBuffer  # noqa: B018
    with pytest.raises(AttributeError, match="cudaNoSuchThing"):
        cudart.cudaNoSuchThing  # noqa: B018


def test_a_sticky_error_is_never_reset(server_address: str) -> None:
    """An illegal address spoils the context: cudaGetLastError cannot clear it; the session
    must end (a new session starts clean)."""
    conn = cricket_client.connect(server_address)
    try:
        cudart.cudaGetLastError()
        cubin = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
        lib = ok(cudart.cudaLibraryLoadData(cubin, None, None, 0, None, None, 0))
        poke = ok(cudart.cudaLibraryGetKernel(lib, b"poke"))
        bad = ((16, 1), (ctypes.c_void_p, ctypes.c_int))  # writes to address 16
        assert cudart.cudaLaunchKernel(poke, 1, 1, bad, 0, 0) == (OK,)
        illegal = cudart.cudaError_t.cudaErrorIllegalAddress
        assert cudart.cudaDeviceSynchronize() == (illegal,)
        assert cudart.cudaGetLastError() == (illegal,)
        assert cudart.cudaGetLastError() == (illegal,)  # sticky
        assert cudart.cudaPeekAtLastError() == (illegal,)
        assert cudart.cudaDeviceSynchronize() == (illegal,)
        assert cudart.cudaGetLastError() == (illegal,)
    finally:
        conn.close()
    fresh = cricket_client.connect(server_address)
    try:
        assert cudart.cudaGetLastError() == (OK,)
        ok(cudart.cudaFree(ok(cudart.cudaMalloc(64))))
    finally:
        fresh.close()
