"""Device resources and green contexts, remote, on both backends: a device's SM resource and
its splits (the count query of cuda-python's test_cuDeviceGetDevResource), a green context on
one group (its resource, its context, its streams running kernels, events recorded and waited
for across its streams), streams made while its context is current belonging to it, and the
refusals: a resource the program built itself, a stream without CU_STREAM_NON_BLOCKING,
another session's green context, one already destroyed."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from behaviour_helpers import check, foreign_handle_message

import cricket_client
from cricket_client import driver as cuda

SM = cuda.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM
NON_BLOCKING = cuda.CUstream_flags.CU_STREAM_NON_BLOCKING
DEFAULT_STREAM = cuda.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM


def device_resource() -> Any:
    return check(cuda.cuDeviceGetDevResource(check(cuda.cuDeviceGet(0)), SM))


def test_device_resource_and_its_splits(session: cricket_client.Connection) -> None:
    dev = check(cuda.cuDeviceGet(0))
    sms = check(cuda.cuDeviceGetAttribute(
        cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev
    ))  # fmt: skip
    res = device_resource()
    assert res.type == SM and res.sm.smCount == sms
    groups, count, remainder = check(cuda.cuDevSmResourceSplitByCount(0, res, 0, 2))
    assert count != 0 and len(groups) == 0
    groups, same, remainder = check(cuda.cuDevSmResourceSplitByCount(count, res, 0, 2))
    assert same == count and len(groups) == count
    assert sum(g.sm.smCount for g in groups) + remainder.sm.smCount == sms
    groups, most, _rest = check(cuda.cuDevSmResourceSplitByCount(1 << 30, res, 0, 2))
    assert most == count and len(groups) == count  # as many as fit, however many are asked
    groups, three, remainder = check(cuda.cuDevSmResourceSplitByCount(3, res, 0, 2))
    assert three == 3 and len(groups) == 3
    sizes = {g.sm.smCount for g in groups}
    assert len(sizes) == 1 and sizes.pop() >= 2
    assert remainder.sm.smCount == sms - sum(g.sm.smCount for g in groups)


def _green(sm_count: int) -> tuple[Any, Any]:
    groups, _count, _rest = check(cuda.cuDevSmResourceSplitByCount(2, device_resource(), 0, sm_count))
    desc = check(cuda.cuDevResourceGenerateDesc([groups[0]], 1))
    green = check(cuda.cuGreenCtxCreate(desc, check(cuda.cuDeviceGet(0)), DEFAULT_STREAM))
    return green, groups[0]


def test_green_context_streams_run_kernels(session: cricket_client.Connection, kernels: Any) -> None:
    green, group = _green(16)
    assert check(cuda.cuGreenCtxGetDevResource(green, SM)).sm.smCount == group.sm.smCount
    ctx = check(cuda.cuCtxFromGreenCtx(green))
    assert check(cuda.cuCtxGetDevResource(ctx, SM)).sm.smCount == group.sm.smCount
    first = check(cuda.cuGreenCtxStreamCreate(green, NON_BLOCKING, 0))
    second = check(cuda.cuGreenCtxStreamCreate(green, NON_BLOCKING, 0))
    assert int(check(cuda.cuStreamGetGreenCtx(first))) == int(green)
    n = 1 << 16
    buf = check(cuda.cuMemAlloc(4 * n))
    fill = check(cuda.cuModuleGetFunction(kernels, b"fill_u32"))
    types = (None, ctypes.c_uint, ctypes.c_ulonglong)
    check(cuda.cuLaunchKernel(fill, n // 256, 1, 1, 256, 1, 1, 0, first, ((buf, 7, n), types), 0))
    done = check(cuda.cuEventCreate(0))
    check(cuda.cuGreenCtxRecordEvent(green, done))
    check(cuda.cuGreenCtxWaitEvent(green, done))
    check(cuda.cuLaunchKernel(fill, n // 512, 1, 1, 256, 1, 1, 0, second, ((buf, 9, n // 2), types), 0))
    check(cuda.cuStreamSynchronize(second))
    out = np.zeros(n, dtype=np.uint32)
    check(cuda.cuMemcpyDtoH(out, buf, 4 * n))
    assert (out[: n // 2] == 9).all() and (out[n // 2 :] == 7).all()
    check(cuda.cuEventDestroy(done))
    check(cuda.cuMemFree(buf))
    check(cuda.cuGreenCtxDestroy(green))
    (err,) = cuda.cuStreamQuery(first)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    err, _ = cuda.cuCtxFromGreenCtx(green)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE


def test_streams_made_in_a_green_contexts_context_belong_to_it(
    session: cricket_client.Connection,
) -> None:
    primary = check(cuda.cuCtxGetCurrent())
    green, _group = _green(8)
    plain = check(cuda.cuStreamCreate(0))
    assert int(check(cuda.cuStreamGetGreenCtx(plain))) == 0
    check(cuda.cuCtxSetCurrent(check(cuda.cuCtxFromGreenCtx(green))))
    mine = check(cuda.cuStreamCreate(0))
    assert int(check(cuda.cuStreamGetGreenCtx(mine))) == int(green)
    assert int(check(cuda.cuStreamGetGreenCtx(0))) == int(green)
    check(cuda.cuStreamSynchronize(mine))
    check(cuda.cuCtxSetCurrent(primary))
    check(cuda.cuStreamDestroy(plain))
    check(cuda.cuGreenCtxDestroy(green))


def test_what_green_contexts_refuse(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    made = cuda.CUdevResource()
    made.type = SM
    made.sm.smCount = 8
    desc = check(cuda.cuDevResourceGenerateDesc([made], 1))
    err, green = cuda.cuGreenCtxCreate(desc, check(cuda.cuDeviceGet(0)), DEFAULT_STREAM)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE and green is None
    with other_session.active():  # (before this session has one: under process isolation
        check(cuda.cuInit(0))  # the two sessions' handle values may be the same)
        theirs, _ = _green(8)
    err, _ = cuda.cuGreenCtxGetDevResource(theirs, SM)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    assert foreign_handle_message() in cricket_client.last_error_message()
    (err,) = cuda.cuGreenCtxDestroy(theirs)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    with other_session.active():
        check(cuda.cuGreenCtxDestroy(theirs))
    green, _group = _green(8)
    err, stream = cuda.cuGreenCtxStreamCreate(green, 0, 0)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE and stream is None
    check(cuda.cuGreenCtxDestroy(green))
    (err,) = cuda.cuGreenCtxDestroy(green)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
