"""The stream-ordered linear array copies: cuMemcpyHtoAAsync/AtoHAsync and
cudaMemcpyToArrayAsync/FromArrayAsync, ordered after earlier work of their stream."""

from __future__ import annotations

import numpy as np
from behaviour_helpers import check, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
D2D = cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice


def _float_array(n: int) -> cuda.CUarray:
    desc = cuda.CUDA_ARRAY_DESCRIPTOR()
    desc.Width, desc.Height = n, 0
    desc.Format = cuda.CUarray_format.CU_AD_FORMAT_FLOAT
    desc.NumChannels = 1
    return check(cuda.cuArrayCreate(desc))


def test_driver_async_array_copies(session: cricket_client.Connection) -> None:
    n = 1000
    array = _float_array(n)
    stream = check(cuda.cuStreamCreate(0))
    data = np.random.default_rng(2).random(n, dtype=np.float32)
    check(cuda.cuMemcpyHtoAAsync(array, 0, data, data.nbytes, stream))
    check(cuda.cuMemcpyHtoAAsync(array, 40, np.full(10, 3, np.float32), 40, stream))
    out = np.zeros(n, np.float32)
    check(cuda.cuMemcpyAtoHAsync(out, array, 0, out.nbytes, stream))
    check(cuda.cuStreamSynchronize(stream))
    expect = data.copy()
    expect[10:20] = 3
    assert np.array_equal(out, expect)
    # leaving the array is refused
    assert cuda.cuMemcpyAtoHAsync(out, array, 4, out.nbytes, stream)[0] == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuArrayDestroy(array))


def test_runtime_async_array_copies(rt: cricket_client.Connection) -> None:
    n = 256
    desc = ok(cudart.cudaCreateChannelDesc(32, 0, 0, 0, cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat))
    array = ok(cudart.cudaMallocArray(desc, n, 0, 0))
    stream = ok(cudart.cudaStreamCreate())
    data = np.arange(n, dtype=np.float32)
    ok(cudart.cudaMemcpyToArrayAsync(array, 0, 0, data, data.nbytes, H2D, stream))
    dev = ok(cudart.cudaMalloc(data.nbytes))
    ok(cudart.cudaMemcpyFromArrayAsync(dev, array, 0, 0, data.nbytes, D2D, stream))
    out = np.zeros(n, np.float32)
    ok(cudart.cudaMemcpyFromArrayAsync(out, array, 0, 0, out.nbytes, D2H, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    assert np.array_equal(out, data)
    back = np.zeros(n, np.float32)
    ok(cudart.cudaMemcpy(back, dev, back.nbytes, D2H))
    assert np.array_equal(back, data)
    ok(cudart.cudaFree(dev))
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFreeArray(array))


def test_3d_peer_copy_between_contexts_of_one_device(session: cricket_client.Connection) -> None:
    primary = check(cuda.cuCtxGetCurrent())
    dev = check(cuda.cuDeviceGet(0))
    assert int(check(cuda.cuCtxGetDevice_v2(primary))) == int(check(cuda.cuCtxGetDevice_v2(None))) == 0
    other = check(cuda.cuCtxCreate(None, 0, dev))  # current now
    check(cuda.cuCtxSetCurrent(primary))
    n = 4096
    data = np.random.default_rng(3).integers(0, 255, n, dtype=np.uint8)
    src = check(cuda.cuMemAlloc(n))
    dst = check(cuda.cuMemAlloc(n))
    check(cuda.cuMemcpyHtoD(src, data, n))
    for asynchronous in (False, True):
        check(cuda.cuMemsetD8(dst, 0, n))
        p = cuda.CUDA_MEMCPY3D_PEER()
        p.srcMemoryType = p.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
        p.srcDevice, p.dstDevice = src, dst
        p.srcPitch = p.dstPitch = 1024
        p.srcHeight = p.dstHeight = 4
        p.WidthInBytes, p.Height, p.Depth = 1024, 4, 1
        p.srcContext, p.dstContext = primary, other
        if asynchronous:
            check(cuda.cuMemcpy3DPeerAsync(p, 0))
            check(cuda.cuCtxSynchronize())
        else:
            check(cuda.cuMemcpy3DPeer(p))
        out = np.zeros(n, np.uint8)
        check(cuda.cuMemcpyDtoH(out, dst, n))
        assert np.array_equal(out, data)
    assert cuda.cuMemcpy3DPeer(None) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    check(cuda.cuMemFree(src))
    check(cuda.cuMemFree(dst))
    check(cuda.cuCtxDestroy(other))
