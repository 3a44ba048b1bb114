"""Flags, attributes and launch variants, as local CUDA answers them: context and device
flags, cache configurations, cuLaunchKernelEx with launch attributes (clusters, priority,
cooperative) as one pipelined call, occupancy of dynamic shared memory and clusters, stream
priorities, flags and attributes, events without timing, cooperative runtime launches."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from behaviour_helpers import SUCCESS, check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

R = cuda.CUresult
LA = cuda.CUlaunchAttributeID
N = 4096


def _vector_add(kernels: Any) -> tuple[Any, Any, Any, Any, np.ndarray, np.ndarray]:
    func = check(cuda.cuModuleGetFunction(kernels, b"vector_add"))
    a = np.arange(N, dtype=np.float32)
    b = np.full(N, 2.0, dtype=np.float32)
    da, db, dc = (check(cuda.cuMemAlloc(a.nbytes)) for _ in range(3))
    check(cuda.cuMemcpyHtoD(da, a, a.nbytes))
    check(cuda.cuMemcpyHtoD(db, b, b.nbytes))
    check(cuda.cuMemsetD8(dc, 0, a.nbytes))
    return func, da, db, dc, a, b


def _config(grid: int, block: int, stream: Any, *attrs: Any) -> Any:
    config = cuda.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = 0
    config.hStream = stream
    config.attrs = list(attrs)
    config.numAttrs = len(attrs)
    return config


def _attr(attr_id: Any, **fields: Any) -> Any:
    attr = cuda.CUlaunchAttribute()
    attr.id = attr_id
    for name, value in fields.items():
        if name == "clusterDim":
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = value
        else:
            setattr(attr.value, name, value)
    return attr


def test_context_flags_and_cache_config(session: cricket_client.Connection) -> None:
    sched = cuda.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC
    check(cuda.cuCtxSetFlags(sched))
    assert check(cuda.cuCtxGetFlags()) & 0x7 == int(sched)
    assert cuda.cuCtxSetFlags(0x3)[0] == R.CUDA_ERROR_INVALID_VALUE  # two scheduling modes
    prefer = cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED
    check(cuda.cuCtxSetCacheConfig(prefer))
    assert check(cuda.cuCtxGetCacheConfig()) == prefer


def test_device_flags_through_the_runtime(session: cricket_client.Connection) -> None:
    check(cudart.cudaSetDeviceFlags(cudart.cudaDeviceScheduleYield))
    assert check(cudart.cudaGetDeviceFlags()) & cudart.cudaDeviceScheduleMask == (
        cudart.cudaDeviceScheduleYield
    )
    check(cudart.cudaDeviceSetCacheConfig(cudart.cudaFuncCache.cudaFuncCachePreferL1))
    assert check(cudart.cudaDeviceGetCacheConfig()) == cudart.cudaFuncCache.cudaFuncCachePreferL1


def test_launch_kernel_ex_with_attributes(session: cricket_client.Connection, kernels: Any) -> None:
    func, da, db, dc, a, b = _vector_add(kernels)
    stream = check(cuda.cuStreamCreate(0))
    attrs = [
        _attr(LA.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, clusterDim=(2, 1, 1)),
        _attr(LA.CU_LAUNCH_ATTRIBUTE_PRIORITY, priority=-1),
    ]
    args = ((da, db, dc, N), (None, None, None, ctypes.c_int))
    check(cuda.cuLaunchKernelEx(_config(N // 256, 256, stream, *attrs), func, args, 0))
    check(cuda.cuStreamSynchronize(stream))
    out = np.zeros(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(out, dc, out.nbytes))
    assert np.array_equal(out, a + b)


def test_launch_kernel_ex_errors_arrive_like_a_launch(
    session: cricket_client.Connection, kernels: Any
) -> None:
    func, da, db, dc, a, b = _vector_add(kernels)
    args = ((da, db, dc, N), (None, None, None, ctypes.c_int))
    bad = _attr(LA.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, clusterDim=(3, 1, 1))  # 16 % 3
    assert cuda.cuLaunchKernelEx(_config(16, 256, 0, bad), func, args, 0)[0] == SUCCESS
    err = cuda.cuCtxSynchronize()[0]
    assert err != SUCCESS  # the pipelined launch's error, at the next synchronizing call
    window = _attr(LA.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW)
    assert cuda.cuLaunchKernelEx(_config(16, 256, 0, window), func, args, 0)[0] == (
        R.CUDA_ERROR_NOT_SUPPORTED
    )
    assert "ACCESS_POLICY_WINDOW" in cricket_client.last_error_message()


def test_cooperative_launches(session: cricket_client.Connection, kernels: Any) -> None:
    func, da, db, dc, a, b = _vector_add(kernels)
    args = ((da, db, dc, N), (None, None, None, ctypes.c_int))
    coop = _attr(LA.CU_LAUNCH_ATTRIBUTE_COOPERATIVE, cooperative=1)
    check(cuda.cuLaunchKernelEx(_config(N // 256, 256, 0, coop), func, args, 0))
    check(cuda.cuCtxSynchronize())
    out = np.zeros(N, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(out, dc, out.nbytes))
    assert np.array_equal(out, a + b)
    check(cuda.cuMemsetD8(dc, 0, out.nbytes))
    check(cudart.cudaLaunchCooperativeKernel(func, N // 256, 256, args, 0, 0))
    check(cudart.cudaDeviceSynchronize())
    check(cuda.cuMemcpyDtoH(out, dc, out.nbytes))
    assert np.array_equal(out, a + b)


def test_occupancy_of_dynamic_shared_memory_and_clusters(
    session: cricket_client.Connection, kernels: Any
) -> None:
    func = check(cuda.cuModuleGetFunction(kernels, b"vector_add"))
    one = check(cuda.cuOccupancyAvailableDynamicSMemPerBlock(func, 1, 256))
    four = check(cuda.cuOccupancyAvailableDynamicSMemPerBlock(func, 4, 256))
    assert one >= four > 0
    assert check(cudart.cudaOccupancyAvailableDynamicSMemPerBlock(func, 4, 256)) == four
    cluster = _attr(LA.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, clusterDim=(2, 1, 1))
    clusters = check(cuda.cuOccupancyMaxActiveClusters(func, _config(64, 256, 0, cluster)))
    assert clusters > 0
    size = check(cuda.cuOccupancyMaxPotentialClusterSize(func, _config(64, 256, 0)))
    assert size >= 2
    blocks = check(cuda.cuOccupancyMaxPotentialBlockSizeWithFlags(func, None, 0, 0, 0))
    assert blocks[1] > 0


def test_function_cache_config(session: cricket_client.Connection, kernels: Any) -> None:
    func = check(cuda.cuModuleGetFunction(kernels, b"vector_add"))
    check(cuda.cuFuncSetCacheConfig(func, cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_L1))
    check(cudart.cudaFuncSetCacheConfig(func, cudart.cudaFuncCache.cudaFuncCachePreferShared))
    assert cuda.cuFuncSetCacheConfig(func, 7)[0] == R.CUDA_ERROR_INVALID_VALUE


def test_stream_priority_flags_and_attributes(session: cricket_client.Connection) -> None:
    least, greatest = check(cuda.cuCtxGetStreamPriorityRange())
    flags = cuda.CUstream_flags.CU_STREAM_NON_BLOCKING
    stream = check(cuda.cuStreamCreateWithPriority(flags, greatest))
    assert check(cuda.cuStreamGetPriority(stream)) == greatest
    assert check(cuda.cuStreamGetFlags(stream)) == int(flags)
    assert check(cudart.cudaStreamGetPriority(stream)) == greatest
    assert check(cudart.cudaStreamGetFlags(stream)) == int(flags)
    below = check(cuda.cuStreamCreateWithPriority(0, greatest - 100))  # clamped, as CUDA does
    assert check(cuda.cuStreamGetPriority(below)) == greatest
    assert check(cuda.cuStreamGetPriority(0)) == 0

    policy = cuda.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY
    value = cuda.CUstreamAttrValue()
    value.syncPolicy = cuda.CUsynchronizationPolicy.CU_SYNC_POLICY_YIELD
    check(cuda.cuStreamSetAttribute(stream, policy, value))
    got = check(cuda.cuStreamGetAttribute(stream, policy))
    assert int(got.syncPolicy) == int(cuda.CUsynchronizationPolicy.CU_SYNC_POLICY_YIELD)
    prio = check(cuda.cuStreamGetAttribute(stream, cuda.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_PRIORITY))
    assert prio.priority == greatest
    window = cuda.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
    assert cuda.cuStreamSetAttribute(stream, window, value)[0] == R.CUDA_ERROR_NOT_SUPPORTED
    for s in (stream, below):
        check(cuda.cuStreamDestroy(s))


def test_events_without_timing_refuse_elapsed_time(session: cricket_client.Connection) -> None:
    timed = check(cuda.cuEventCreate(0))
    untimed = check(cudart.cudaEventCreateWithFlags(cudart.cudaEventDisableTiming))
    check(cuda.cuEventRecord(timed, 0))
    check(cuda.cuEventRecord(untimed, 0))
    check(cuda.cuCtxSynchronize())
    assert cuda.cuEventElapsedTime(timed, untimed)[0] == R.CUDA_ERROR_INVALID_HANDLE
    assert cudart.cudaEventElapsedTime(timed, untimed)[0] == (
        cudart.cudaError_t.cudaErrorInvalidResourceHandle
    )


def test_a_device_reset_forgets_the_cache_config(session: cricket_client.Connection) -> None:
    check(cudart.cudaDeviceSetCacheConfig(cudart.cudaFuncCache.cudaFuncCachePreferShared))
    check(cudart.cudaDeviceReset())
    assert check(cudart.cudaDeviceGetCacheConfig()) == cudart.cudaFuncCache.cudaFuncCachePreferNone
