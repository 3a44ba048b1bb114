"""cuMemcpyBatchAsync / cudaMemcpyBatchAsync (and the one-copy cuMemcpyWithAttributesAsync): host-to-device, device-to-device and
device-to-host copies in one batch, in stream order; attributes checked as CUDA checks them."""

from __future__ import annotations

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 4096
STREAM_ORDER = cuda.CUmemcpySrcAccessOrder.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM


def attributes(order: int = STREAM_ORDER) -> cuda.CUmemcpyAttributes:
    attrs = cuda.CUmemcpyAttributes()
    attrs.srcAccessOrder = order
    return attrs


def test_one_batch_of_every_direction(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    a, b = check(cuda.cuMemAlloc(N)), check(cuda.cuMemAlloc(N))
    src = np.arange(N, dtype=np.uint8)
    check(cuda.cuMemcpyHtoD(b, np.full(N, 5, np.uint8), N))
    back = np.zeros(N, np.uint8)
    other = np.zeros(N // 2, np.uint8)
    # one batch: the host's bytes -> a, b's first half -> host memory (by address); then a
    # second batch, after the first in stream order: a -> b
    dsts = [a, other.ctypes.data]
    srcs = [src.ctypes.data, b]
    sizes = [N, N // 2]
    assert cuda.cuMemcpyBatchAsync(dsts, srcs, sizes, 2, [attributes()], [0], 1, stream) == (
        cuda.CUresult.CUDA_SUCCESS,
    )
    check(cuda.cuMemcpyBatchAsync([b], [a], [N], 1, [attributes()], [0], 1, stream))  # next batch: after
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(back, b, N))
    assert np.array_equal(back, src)
    assert (other == 5).all()
    for p in (a, b):
        check(cuda.cuMemFree(p))
    check(cuda.cuStreamDestroy(stream))


def test_attributes_that_do_not_describe_the_batch_are_refused(session: cricket_client.Connection) -> None:
    a = check(cuda.cuMemAlloc(N))
    host = np.zeros(N, np.uint8)
    invalid = cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    cases = [
        ([attributes()], [1], "attrsIdxs[0] is 1"),
        ([attributes(), attributes()], [0, 0], "must rise"),
        ([attributes(0)], [0], "srcAccessOrder 0"),
    ]
    for attrs, idxs, why in cases:
        assert cuda.cuMemcpyBatchAsync([a, a], [host.ctypes.data] * 2, [N, N], 2, attrs, idxs, len(attrs), 0) == (
            invalid,
        )
        assert why in cricket_client.last_error_message()
    check(cuda.cuMemFree(a))


def test_the_runtime_form(rt: cricket_client.Connection) -> None:
    err, ptr = cudart.cudaMalloc(N)
    src = np.arange(N, dtype=np.uint8)[::-1].copy()
    back = np.zeros(N, np.uint8)
    attrs = cudart.cudaMemcpyAttributes()
    attrs.srcAccessOrder = cudart.cudaMemcpySrcAccessOrder.cudaMemcpySrcAccessOrderStream
    ok = (cudart.cudaError_t.cudaSuccess,)
    assert cudart.cudaMemcpyBatchAsync([ptr], [src.ctypes.data], [N], 1, [attrs], [0], 1, 0) == ok
    assert cudart.cudaMemcpyBatchAsync([back.ctypes.data], [ptr], [N], 1, [attrs], [0], 1, 0) == ok
    assert cudart.cudaStreamSynchronize(0) == ok
    assert np.array_equal(back, src)
    assert cudart.cudaFree(ptr) == ok


def test_one_copy_with_attributes(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(N))
    src = np.arange(N, dtype=np.uint8)
    back = np.zeros(N, np.uint8)
    check(cuda.cuMemcpyWithAttributesAsync(ptr, src.ctypes.data, N, attributes(), 0))
    check(cuda.cuMemcpyWithAttributesAsync(back.ctypes.data, ptr, N, attributes(), 0))
    check(cuda.cuStreamSynchronize(0))
    assert np.array_equal(back, src)
    assert cuda.cuMemcpyWithAttributesAsync(ptr, src.ctypes.data, N, None, 0) == (
        cuda.CUresult.CUDA_ERROR_INVALID_VALUE,
    )
    check(cuda.cuMemFree(ptr))
