"""Mapped host memory (cuMemHostAlloc / cuMemHostRegister with DEVICEMAP, cudaHostAllocMapped):
a kernel given its device pointer reads what the program wrote and the program sees what the
kernel wrote once it synchronized (a stream or context synchronize, an event, a query that
says done, a read of device memory); ranges past the connection's limit are refused naming it.
"""

from __future__ import annotations

import ctypes
import struct
import time
from typing import Any

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart
from cricket_client.mapped_host import DEFAULT_LIMIT, LIMIT_ENV

DEVICEMAP = cuda.CU_MEMHOSTALLOC_DEVICEMAP
E = cuda.CUresult
N = 1000


def _floats(address: int, n: int) -> Any:
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(address))


def _saxpy(kernels: Any, a: float, x: int, y: int, n: int, stream: Any = 0) -> None:
    f = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    args = ((a, x, y, n), (ctypes.c_float, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernel(f, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))


def _poke(kernels: Any, p: int, value: int, stream: Any = 0) -> None:
    f = check(cuda.cuModuleGetFunction(kernels, b"poke"))
    check(cuda.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, ((p, value), (None, ctypes.c_int)), 0))


def test_a_kernel_reads_and_writes_mapped_host_memory(
    session: cricket_client.Connection, kernels: Any
) -> None:
    x_host = check(cuda.cuMemHostAlloc(4 * N, DEVICEMAP))
    y_host = check(cuda.cuMemHostAlloc(4 * N, DEVICEMAP | cuda.CU_MEMHOSTALLOC_PORTABLE))
    x, y = _floats(x_host, N), _floats(y_host, N)
    assert not x.any() and not y.any()  # zeroed, as the system's fresh pages are
    x[:] = np.arange(N, dtype=np.float32)
    y[:] = 1.0
    dx = check(cuda.cuMemHostGetDevicePointer(x_host, 0))
    dy = check(cuda.cuMemHostGetDevicePointer(y_host, 0))
    assert check(cuda.cuMemHostGetDevicePointer(y_host + 8, 0)) == int(dy) + 8
    _saxpy(kernels, 2.0, dx, dy, N)
    check(cuda.cuCtxSynchronize())
    assert np.array_equal(y, 2 * np.arange(N, dtype=np.float32) + 1)
    y[:] = -1.0  # the program's writes reach the next launch
    _saxpy(kernels, 1.0, dx, dy, N)
    check(cuda.cuStreamSynchronize(0))
    assert np.array_equal(y, np.arange(N, dtype=np.float32) - 1)
    assert check(cuda.cuMemHostGetFlags(x_host)) == DEVICEMAP
    assert check(cuda.cuMemHostGetFlags(y_host + 100)) == DEVICEMAP | cuda.CU_MEMHOSTALLOC_PORTABLE
    check(cuda.cuMemFreeHost(x_host))
    check(cuda.cuMemFreeHost(y_host))
    assert cuda.cuMemFreeHost(x_host)[0] == E.CUDA_ERROR_INVALID_VALUE
    assert cuda.cuMemHostGetDevicePointer(x_host, 0)[0] == E.CUDA_ERROR_INVALID_VALUE


def _until_done(query: Any, limit: float = 60.0) -> None:
    """Query until it no longer answers NOT_READY (a generous bound for a busy machine)."""
    deadline = time.monotonic() + limit
    while query() == E.CUDA_ERROR_NOT_READY:
        assert time.monotonic() < deadline, "the work never finished"


def _flag(session: cricket_client.Connection) -> tuple[int, int, Any]:
    host = check(cuda.cuMemHostAlloc(4, DEVICEMAP))
    return host, check(cuda.cuMemHostGetDevicePointer(host, 0)), (ctypes.c_int).from_address(host)


def test_a_kernels_write_shows_after_each_kind_of_synchronization(
    session: cricket_client.Connection, kernels: Any
) -> None:
    host, dptr, flag = _flag(session)
    stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    event = check(cuda.cuEventCreate(0))
    other = check(cuda.cuMemAlloc(4))

    _poke(kernels, dptr, 1, stream)
    check(cuda.cuStreamSynchronize(stream))
    assert flag.value == 1

    _poke(kernels, dptr, 2, stream)
    check(cuda.cuEventRecord(event, stream))
    check(cuda.cuEventSynchronize(event))
    assert flag.value == 2

    _poke(kernels, dptr, 3, stream)
    check(cuda.cuEventRecord(event, stream))
    _until_done(lambda: cuda.cuEventQuery(event)[0])
    assert flag.value == 3

    _poke(kernels, dptr, 4, stream)
    _until_done(lambda: cuda.cuStreamQuery(stream)[0])
    assert flag.value == 4

    _poke(kernels, dptr, 5, stream)  # a read on the stream brings the range with it
    out = bytearray(4)
    check(cuda.cuMemcpyDtoHAsync(out, other, 4, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert flag.value == 5

    _poke(kernels, dptr, 6, stream)
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(out, dptr, 4))  # a read of the device copy itself
    assert struct.unpack("<i", out)[0] == 6 == flag.value

    flag.value = 7  # a copy from the device copy sees the program's write
    check(cuda.cuMemcpy(other, dptr, 4))
    check(cuda.cuMemcpyDtoH(out, other, 4))
    assert struct.unpack("<i", out)[0] == 7

    check(cuda.cuMemsetD32(other, 8, 1))
    check(cuda.cuMemcpy(dptr, other, 4))  # a synchronous copy into it shows on return
    assert flag.value == 8
    check(cuda.cuMemsetD32(dptr, 9, 1))  # so does a synchronous memset
    assert flag.value == 9
    check(cuda.cuMemsetD32(other, 10, 1))
    check(cuda.cuMemcpyDtoD(dptr, other, 4))  # and cuMemcpyDtoD
    assert flag.value == 10
    flag.value = 11
    check(cuda.cuMemcpyDtoD(other, dptr, 4))  # which sees the program's write
    check(cuda.cuMemcpyDtoH(out, other, 4))
    assert struct.unpack("<i", out)[0] == 11

    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuEventDestroy(event))
    check(cuda.cuMemFree(other))
    check(cuda.cuMemFreeHost(host))


def test_a_read_into_mapped_memory_stays_and_reaches_the_device(
    session: cricket_client.Connection, kernels: Any
) -> None:
    host, dptr, flag = _flag(session)
    src = check(cuda.cuMemAlloc(4))
    check(cuda.cuMemsetD32(src, 41, 1))
    check(cuda.cuMemcpyDtoH(host, src, 4))
    assert flag.value == 41
    out = check(cuda.cuMemAlloc(4))
    check(cuda.cuMemcpy(out, dptr, 4))
    back = bytearray(4)
    check(cuda.cuMemcpyDtoH(back, out, 4))
    assert struct.unpack("<i", back)[0] == 41
    check(cuda.cuMemFree(src))
    check(cuda.cuMemFree(out))
    check(cuda.cuMemFreeHost(host))


def test_registered_memory_can_be_mapped(session: cricket_client.Connection, kernels: Any) -> None:
    x = np.arange(N, dtype=np.float32)
    y = np.full(N, 3.0, dtype=np.float32)
    flags = cuda.CU_MEMHOSTREGISTER_DEVICEMAP
    check(cuda.cuMemHostRegister(x.ctypes.data, x.nbytes, flags))
    check(cuda.cuMemHostRegister(y.ctypes.data, y.nbytes, flags))
    dx = check(cuda.cuMemHostGetDevicePointer(x.ctypes.data, 0))
    dy = check(cuda.cuMemHostGetDevicePointer(y.ctypes.data, 0))
    _saxpy(kernels, 0.5, dx, dy, N)
    check(cuda.cuCtxSynchronize())
    assert np.array_equal(y, 0.5 * np.arange(N, dtype=np.float32) + 3)
    assert cuda.cuMemHostGetFlags(x.ctypes.data)[0] == E.CUDA_ERROR_INVALID_VALUE  # not an allocation
    assert cuda.cuMemFreeHost(x.ctypes.data)[0] == E.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuMemHostUnregister(x.ctypes.data))
    check(cuda.cuMemHostUnregister(y.ctypes.data))
    assert cuda.cuMemHostGetDevicePointer(x.ctypes.data, 0)[0] == E.CUDA_ERROR_INVALID_VALUE


def test_the_runtime_maps_host_memory_too(rt: cricket_client.Connection, kernels: Any) -> None:
    mapped_flags = cudart.cudaHostAllocMapped | cudart.cudaHostAllocPortable
    host = check(cudart.cudaHostAlloc(4, mapped_flags))
    assert check(cudart.cudaHostGetFlags(host)) == mapped_flags
    dptr = check(cudart.cudaHostGetDevicePointer(host, 0))
    _poke(kernels, dptr, 9)
    check(cudart.cudaDeviceSynchronize())
    assert ctypes.c_int.from_address(host).value == 9
    check(cudart.cudaFreeHost(host))
    pinned = check(cudart.cudaMallocHost(64))  # page-locked, not mapped
    assert check(cudart.cudaHostGetFlags(pinned + 8)) == cudart.cudaHostAllocDefault
    assert cudart.cudaHostGetDevicePointer(pinned, 0)[0] == cudart.cudaError_t.cudaErrorInvalidValue
    check(cudart.cudaFreeHost(pinned))
    assert cudart.cudaHostGetFlags(pinned)[0] == cudart.cudaError_t.cudaErrorInvalidValue
    y = np.zeros(4, dtype=np.int32)  # registered and mapped
    check(cudart.cudaHostRegister(y.ctypes.data, y.nbytes, cudart.cudaHostRegisterMapped))
    _poke(kernels, check(cudart.cudaHostGetDevicePointer(y.ctypes.data, 0)) + 4, 11)
    check(cudart.cudaDeviceSynchronize())
    assert list(y) == [0, 11, 0, 0]
    check(cudart.cudaHostUnregister(y.ctypes.data))


def test_more_than_the_limit_is_refused_naming_it(session: cricket_client.Connection) -> None:
    err, host = cuda.cuMemHostAlloc(DEFAULT_LIMIT + 1, DEVICEMAP)
    assert err == E.CUDA_ERROR_NOT_SUPPORTED and host is None
    message = cricket_client.last_error_message()
    assert "cuMemHostAlloc" in message and LIMIT_ENV in message, message
    buf = np.zeros(DEFAULT_LIMIT + 4096, dtype=np.uint8)
    flags = cuda.CU_MEMHOSTREGISTER_DEVICEMAP
    assert cuda.cuMemHostRegister(buf.ctypes.data, buf.nbytes, flags)[0] == E.CUDA_ERROR_NOT_SUPPORTED
    check(cuda.cuMemHostRegister(buf.ctypes.data, buf.nbytes, 0))  # not left registered
    check(cuda.cuMemHostUnregister(buf.ctypes.data))


def test_pointer_attributes_say_host_memory_with_a_device_pointer(
    session: cricket_client.Connection,
) -> None:
    host = check(cuda.cuMemHostAlloc(256, DEVICEMAP))
    dptr = int(check(cuda.cuMemHostGetDevicePointer(host, 0)))
    P = cuda.CUpointer_attribute
    kind = check(cuda.cuPointerGetAttribute(P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, host + 16))
    assert kind == cuda.CUmemorytype.CU_MEMORYTYPE_HOST
    asked = [
        P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        P.CU_POINTER_ATTRIBUTE_HOST_POINTER,
        P.CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        P.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        P.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ]
    values = check(cuda.cuPointerGetAttributes(len(asked), asked, host + 16))
    assert values[0] == cuda.CUmemorytype.CU_MEMORYTYPE_HOST
    assert [int(v) for v in values[1:]] == [host + 16, dptr + 16, host, 256]
    check(cuda.cuMemFreeHost(host))


def test_a_runtime_program_maps_memory_before_any_other_call(rt: cricket_client.Connection) -> None:
    y = np.arange(4, dtype=np.int32)  # the runtime makes the device's context current for it
    check(cudart.cudaHostRegister(y.ctypes.data, y.nbytes, cudart.cudaHostRegisterMapped))
    dptr = check(cudart.cudaHostGetDevicePointer(y.ctypes.data, 0))
    dev = check(cudart.cudaMalloc(y.nbytes))
    kinds = cudart.cudaMemcpyKind
    check(cudart.cudaMemcpy(dev, dptr, y.nbytes, kinds.cudaMemcpyDeviceToDevice))
    out = np.zeros(4, dtype=np.int32)
    check(cudart.cudaMemcpy(out.ctypes.data, dev, out.nbytes, kinds.cudaMemcpyDeviceToHost))
    assert list(out) == [0, 1, 2, 3]
    check(cudart.cudaHostUnregister(y.ctypes.data))
    check(cudart.cudaFree(dev))
