"""Driver and runtime calls in one program, as CUDA allows: the runtime works in the device's
primary context, and a context the driver made current is the one the runtime uses."""

from __future__ import annotations

import numpy as np
from behaviour_helpers import ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess


def test_runtime_makes_the_primary_context_current(rt: cricket_client.Connection) -> None:
    ptr = ok(cudart.cudaMalloc(1024))  # first runtime call: primary context of device 0
    current = ok(cuda.cuCtxGetCurrent())
    primary = ok(cuda.cuDevicePrimaryCtxRetain(ok(cuda.cuDeviceGet(0))))
    assert current == primary
    _flags, active = ok(cuda.cuDevicePrimaryCtxGetState(0))
    assert active
    ctx = ok(cuda.cuPointerGetAttribute(cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT, ptr))
    assert ctx == primary
    ok(cuda.cuDevicePrimaryCtxRelease(0))
    ok(cudart.cudaFree(ptr))


def test_driver_and_runtime_share_memory_streams_and_events(
    rt: cricket_client.Connection,
) -> None:
    n = 4096
    rt_ptr = ok(cudart.cudaMalloc(n))
    data = np.arange(n, dtype=np.uint8)
    ok(cuda.cuMemcpyHtoD(rt_ptr, data, n))  # driver writes runtime memory
    drv_ptr = ok(cuda.cuMemAlloc(n))
    ok(cudart.cudaMemcpy(int(drv_ptr), rt_ptr, n, cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice))
    stream = ok(cudart.cudaStreamCreate())  # a cudaStream_t is a CUstream
    assert isinstance(stream, cuda.CUstream)
    event = ok(cuda.cuEventCreate(0))
    out = np.zeros(n, np.uint8)
    ok(cuda.cuMemcpyDtoHAsync(out, drv_ptr, n, stream))
    ok(cudart.cudaEventRecord(event, stream))
    ok(cudart.cudaEventSynchronize(event))
    assert (out == data).all()
    ok(cuda.cuStreamSynchronize(stream))
    ok(cudart.cudaFree(int(drv_ptr)))  # the runtime frees driver memory
    ok(cuda.cuMemFree(rt_ptr))  # and the driver runtime memory
    ok(cuda.cuEventDestroy(event))
    ok(cudart.cudaStreamDestroy(stream))


def test_runtime_uses_a_context_the_driver_made_current(rt: cricket_client.Connection) -> None:
    ok(cuda.cuInit(0))
    ctx = ok(cuda.cuCtxCreate(None, 0, ok(cuda.cuDeviceGet(0))))
    ptr = ok(cudart.cudaMalloc(256))
    owner = ok(cuda.cuPointerGetAttribute(cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT, ptr))
    assert owner == ctx
    assert ok(cudart.cudaGetDevice()) == 0
    ok(cudart.cudaFree(ptr))
    ok(cuda.cuCtxDestroy(ctx))


def test_runtime_errors_are_driver_results_by_number(rt: cricket_client.Connection) -> None:
    (rt_err,) = cudart.cudaFree(0x10)  # initializes, as the runtime does
    (drv_err,) = cuda.cuMemFree(0x10)
    assert int(drv_err) == int(rt_err) == int(cudart.cudaError_t.cudaErrorInvalidValue)
