"""Stream memory operations on device memory: cuStreamWriteValue32/64 and
cuStreamWaitValue32/64 in stream order, cuStreamBatchMemOp, and their checks."""

from __future__ import annotations

import time

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

ERR = cuda.CUresult
NON_BLOCKING = cuda.CUstream_flags.CU_STREAM_NON_BLOCKING
EQ = cuda.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_EQ
GEQ = cuda.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ


def _read(ptr: int, dtype: type, n: int = 1) -> np.ndarray:
    out = np.zeros(n, dtype)
    check(cuda.cuMemcpyDtoH(out, ptr, out.nbytes))
    return out


def test_write_values_in_stream_order(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(64))
    stream = check(cuda.cuStreamCreate(NON_BLOCKING))
    check(cuda.cuMemsetD32Async(ptr, 0, 16, stream))
    check(cuda.cuStreamWriteValue32(stream, ptr, 0xDEADBEEF, 0))
    check(cuda.cuStreamWriteValue64(stream, int(ptr) + 8, 0x0123456789ABCDEF, 0))
    check(cuda.cuStreamSynchronize(stream))
    assert _read(int(ptr), np.uint32)[0] == 0xDEADBEEF
    assert _read(int(ptr) + 8, np.uint64)[0] == 0x0123456789ABCDEF
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuMemFree(ptr))


def test_a_wait_holds_its_stream_until_another_stream_writes(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(16))
    flag, out = int(ptr), int(ptr) + 8
    check(cuda.cuMemsetD32(ptr, 0, 4))
    check(cuda.cuCtxSynchronize())  # a memset may still run when it returns
    waiter = check(cuda.cuStreamCreate(NON_BLOCKING))
    writer = check(cuda.cuStreamCreate(NON_BLOCKING))
    check(cuda.cuStreamWaitValue32(waiter, flag, 5, GEQ))
    check(cuda.cuStreamWriteValue32(waiter, out, 2, 0))
    time.sleep(0.2)
    assert cuda.cuStreamQuery(waiter) == (ERR.CUDA_ERROR_NOT_READY,)
    assert _read(out, np.uint32)[0] == 0
    check(cuda.cuStreamWriteValue32(writer, flag, 7, 0))  # 7 >= 5
    check(cuda.cuStreamSynchronize(waiter))
    assert _read(out, np.uint32)[0] == 2
    check(cuda.cuStreamDestroy(waiter))
    check(cuda.cuStreamDestroy(writer))
    check(cuda.cuMemFree(ptr))


def test_batch_of_operations(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(32))
    stream = check(cuda.cuStreamCreate(NON_BLOCKING))
    check(cuda.cuMemsetD32Async(ptr, 0, 8, stream))
    ops = []
    write = cuda.CUstreamBatchMemOpParams()
    write.operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_32
    write.writeValue.operation = write.operation
    write.writeValue.address = ptr
    write.writeValue.value = 11
    ops.append(write)
    barrier = cuda.CUstreamBatchMemOpParams()
    barrier.operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_BARRIER
    barrier.memoryBarrier.operation = barrier.operation
    barrier.memoryBarrier.flags = cuda.CUstreamMemoryBarrier_flags.CU_STREAM_MEMORY_BARRIER_TYPE_GPU
    ops.append(barrier)
    wait = cuda.CUstreamBatchMemOpParams()
    wait.operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WAIT_VALUE_32
    wait.waitValue.operation = wait.operation
    wait.waitValue.address = ptr
    wait.waitValue.value = 11
    wait.waitValue.flags = EQ
    ops.append(wait)
    write64 = cuda.CUstreamBatchMemOpParams()
    write64.operation = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_64
    write64.writeValue.operation = write64.operation
    write64.writeValue.address = int(ptr) + 16
    write64.writeValue.value64 = 1 << 40
    ops.append(write64)
    check(cuda.cuStreamBatchMemOp(stream, len(ops), ops, 0))
    check(cuda.cuStreamSynchronize(stream))
    assert _read(int(ptr), np.uint32)[0] == 11
    assert _read(int(ptr) + 16, np.uint64)[0] == 1 << 40
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuMemFree(ptr))


def test_memory_operation_checks(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(16))
    stream = check(cuda.cuStreamCreate(NON_BLOCKING))
    check(cuda.cuStreamWriteValue32(stream, int(ptr) + 1, 1, 0))  # misaligned: reported later
    assert cuda.cuStreamSynchronize(stream) == (ERR.CUDA_ERROR_INVALID_VALUE,)
    assert "aligned" in cricket_client.last_error_message()
    check(cuda.cuStreamWaitValue32(stream, ptr, 0, 0x7))  # no such condition
    assert cuda.cuStreamSynchronize(stream) == (ERR.CUDA_ERROR_INVALID_VALUE,)
    check(cuda.cuStreamSynchronize(stream))  # nothing was queued
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuMemFree(ptr))
