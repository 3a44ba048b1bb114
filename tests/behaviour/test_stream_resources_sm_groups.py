"""A stream's device resources (cuStreamGetDevResource: the device's SMs, or its green
context's), the structured SM split (cuDevSmResourceSplit: groups in order, discovery written
back into the caller's parameters; CUDA 13.1's call: a server whose CUDA lacks it answers
CUDA_ERROR_NOT_SUPPORTED naming it, and the test skips), and the runtime's green and
execution contexts (cudaGreenCtxCreate, cudaExecutionCtx*)."""

from __future__ import annotations

from typing import Any

import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

SM = cuda.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM
NON_BLOCKING = cuda.CUstream_flags.CU_STREAM_NON_BLOCKING
DEFAULT_STREAM = cuda.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM
RT_SM = cudart.cudaDevResourceType.cudaDevResourceTypeSm
RT_OK = cudart.cudaError_t.cudaSuccess


def device_resource() -> Any:
    return check(cuda.cuDeviceGetDevResource(check(cuda.cuDeviceGet(0)), SM))


def test_a_streams_resources_are_its_contexts(session: cricket_client.Connection) -> None:
    whole = device_resource()
    stream = check(cuda.cuStreamCreate(NON_BLOCKING))
    assert check(cuda.cuStreamGetDevResource(stream, SM)).sm.smCount == whole.sm.smCount
    assert check(cuda.cuStreamGetDevResource(0, SM)).sm.smCount == whole.sm.smCount
    groups, _n, _rest = check(cuda.cuDevSmResourceSplitByCount(1, whole, 0, 8))
    desc = check(cuda.cuDevResourceGenerateDesc([groups[0]], 1))
    green = check(cuda.cuGreenCtxCreate(desc, check(cuda.cuDeviceGet(0)), DEFAULT_STREAM))
    green_stream = check(cuda.cuGreenCtxStreamCreate(green, NON_BLOCKING, 0))
    got = check(cuda.cuStreamGetDevResource(green_stream, SM))
    assert got.type == SM and got.sm.smCount == groups[0].sm.smCount < whole.sm.smCount
    # the resource is one the session gave: it can be split again
    check(cuda.cuDevSmResourceSplitByCount(0, got, 0, 2))
    check(cuda.cuStreamDestroy(green_stream))
    check(cuda.cuGreenCtxDestroy(green))
    check(cuda.cuStreamDestroy(stream))


def test_a_stream_resource_of_a_workqueue_type_or_a_bad_stream(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(NON_BLOCKING))
    err, _ = cuda.cuStreamGetDevResource(stream, 12345)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_RESOURCE_TYPE
    check(cuda.cuStreamDestroy(stream))
    err, _ = cuda.cuStreamGetDevResource(stream, SM)  # destroyed
    assert err != cuda.CUresult.CUDA_SUCCESS
    assert "cuStreamGetDevResource" in cricket_client.last_error_message()


def _split(params: list[Any]) -> tuple[Any, Any]:
    err, groups, remainder = cuda.cuDevSmResourceSplit(len(params), device_resource(), 0, params)
    if err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED:
        message = cricket_client.last_error_message()
        assert "cuDevSmResourceSplit" in message
        pytest.skip(f"the server's CUDA has no structured split: {message}")
    assert err == cuda.CUresult.CUDA_SUCCESS, cricket_client.last_error_message()
    return groups, remainder


def test_structured_split_in_order_with_discovery(session: cricket_client.Connection) -> None:
    whole = device_resource()
    sms = whole.sm.smCount
    first, rest = cuda.CU_DEV_SM_RESOURCE_GROUP_PARAMS(), cuda.CU_DEV_SM_RESOURCE_GROUP_PARAMS()
    first.smCount = 2 * max(whole.sm.smCoscheduledAlignment, 2)
    groups, remainder = _split([first, rest])
    assert len(groups) == 2 and all(g.type == SM for g in groups)
    assert groups[0].sm.smCount == first.smCount
    assert rest.smCount == groups[1].sm.smCount > 0  # discovered, written back
    assert groups[0].sm.smCount + groups[1].sm.smCount + remainder.sm.smCount == sms
    # a group is a resource of the session: a green context runs on it
    desc = check(cuda.cuDevResourceGenerateDesc([groups[0]], 1))
    green = check(cuda.cuGreenCtxCreate(desc, check(cuda.cuDeviceGet(0)), DEFAULT_STREAM))
    assert check(cuda.cuGreenCtxGetDevResource(green, SM)).sm.smCount == first.smCount
    check(cuda.cuGreenCtxDestroy(green))


def test_structured_split_refusals(session: cricket_client.Connection) -> None:
    whole = device_resource()
    too_many = cuda.CU_DEV_SM_RESOURCE_GROUP_PARAMS()
    too_many.smCount = whole.sm.smCount + 2
    err, _g, _r = cuda.cuDevSmResourceSplit(1, whole, 0, [too_many])
    if err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED:
        pytest.skip(
            f"the server's CUDA has no structured split: {cricket_client.last_error_message()}"
        )
    assert err != cuda.CUresult.CUDA_SUCCESS
    made = cuda.CUdevResource()  # not one the session gave
    made.type, made.sm.smCount = SM, whole.sm.smCount
    err, _g, _r = cuda.cuDevSmResourceSplit(1, made, 0, [cuda.CU_DEV_SM_RESOURCE_GROUP_PARAMS()])
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    assert "cuDevSmResourceSplit" in cricket_client.last_error_message()
    err, _g, _r = cuda.cuDevSmResourceSplit(2, whole, 0, [cuda.CU_DEV_SM_RESOURCE_GROUP_PARAMS()])
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE  # two groups, one parameter


def test_runtime_green_and_execution_contexts(rt: cricket_client.Connection) -> None:
    err, whole = cudart.cudaDeviceGetDevResource(0, RT_SM)
    assert err == RT_OK
    err, groups, _n, _rest = cudart.cudaDevSmResourceSplitByCount(1, whole, 0, 8)
    assert err == RT_OK
    err, desc = cudart.cudaDevResourceGenerateDesc([groups[0]], 1)
    assert err == RT_OK
    assert cudart.cudaGreenCtxCreate(desc, 0, 1) == (cudart.cudaError_t.cudaErrorInvalidValue, None)
    err, ctx = cudart.cudaGreenCtxCreate(desc, 0, 0)
    assert err == RT_OK and isinstance(ctx, cudart.cudaExecutionContext_t)
    err, res = cudart.cudaExecutionCtxGetDevResource(ctx, RT_SM)
    assert err == RT_OK and res.sm.smCount == groups[0].sm.smCount
    err, stream = cudart.cudaExecutionCtxStreamCreate(ctx, 0, 0)
    assert err == RT_OK
    err, res = cudart.cudaStreamGetDevResource(stream, RT_SM)
    assert err == RT_OK and res.sm.smCount == groups[0].sm.smCount
    err, event = cudart.cudaEventCreate()
    assert err == RT_OK
    err, ptr = cudart.cudaMalloc(4096)
    assert err == RT_OK
    assert cudart.cudaMemsetAsync(ptr, 7, 4096, stream) == (RT_OK,)
    assert cudart.cudaExecutionCtxRecordEvent(ctx, event) == (RT_OK,)
    assert cudart.cudaEventSynchronize(event) == (RT_OK,)
    assert cudart.cudaExecutionCtxWaitEvent(ctx, event) == (RT_OK,)
    assert cudart.cudaExecutionCtxSynchronize(ctx) == (RT_OK,)
    assert cudart.cudaStreamDestroy(stream) == (RT_OK,)
    assert cudart.cudaExecutionCtxDestroy(ctx) == (RT_OK,)
    # the primary context is not the runtime's to destroy; a destroyed one is gone
    err, primary = cudart.cudaDeviceGetExecutionCtx(0)
    assert err == RT_OK
    assert cudart.cudaExecutionCtxDestroy(primary) == (cudart.cudaError_t.cudaErrorNotPermitted,)
    assert cudart.cudaExecutionCtxDestroy(ctx) == (cudart.cudaError_t.cudaErrorNotPermitted,)
    assert cudart.cudaEventDestroy(event) == (RT_OK,)
    assert cudart.cudaFree(ptr) == (RT_OK,)


def test_runtime_structured_split(rt: cricket_client.Connection) -> None:
    err, whole = cudart.cudaDeviceGetDevResource(0, RT_SM)
    assert err == RT_OK
    params = cudart.cudaDevSmResourceGroupParams()
    err, groups, remainder = cudart.cudaDevSmResourceSplit(1, whole, 0, [params])
    if err == cudart.cudaError_t.cudaErrorNotSupported:
        pytest.skip(
            f"the server's CUDA has no structured split: {cricket_client.last_error_message()}"
        )
    assert err == RT_OK
    assert isinstance(groups[0], cudart.cudaDevResource)
    assert params.smCount == groups[0].sm.smCount
    assert groups[0].sm.smCount + remainder.sm.smCount == whole.sm.smCount
