"""The peer calls with one device, answered as CUDA answers them (a device is never its own
peer), and cuMemcpyPeer within one device; the calls of several devices run against a
two-device server in tests/integration/test_several_devices.py."""

from __future__ import annotations

from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

R = cuda.CUresult


def test_a_device_is_not_its_own_peer(session: cricket_client.Connection) -> None:
    d0 = cuda.CUdevice(0)
    assert check(cuda.cuDeviceCanAccessPeer(d0, d0)) == 0
    assert check(cudart.cudaDeviceCanAccessPeer(0, 0)) == 0
    access = cuda.CUdevice_P2PAttribute.CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED
    assert cuda.cuDeviceGetP2PAttribute(access, d0, d0)[0] == R.CUDA_ERROR_INVALID_DEVICE
    ctx = check(cuda.cuCtxGetCurrent())
    assert cuda.cuCtxEnablePeerAccess(ctx, 0)[0] == R.CUDA_ERROR_INVALID_DEVICE
    assert cuda.cuCtxDisablePeerAccess(ctx)[0] == R.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    assert cudart.cudaDeviceEnablePeerAccess(0, 0)[0] == cudart.cudaError_t.cudaErrorInvalidDevice
    count = check(cuda.cuDeviceGetCount())
    assert cuda.cuDeviceCanAccessPeer(d0, cuda.CUdevice(count))[0] == R.CUDA_ERROR_INVALID_DEVICE


def test_memcpy_peer_within_one_device(session: cricket_client.Connection) -> None:
    n = 8192
    ctx = check(cuda.cuCtxGetCurrent())
    src, dst = check(cuda.cuMemAlloc(n)), check(cuda.cuMemAlloc(n))
    data = bytes(range(256)) * (n // 256)
    check(cuda.cuMemcpyHtoD(src, data, n))
    check(cuda.cuMemcpyPeer(dst, ctx, src, ctx, n))
    out = bytearray(n)
    check(cuda.cuMemcpyDtoH(out, dst, n))
    assert bytes(out) == data
    check(cuda.cuMemsetD8(dst, 0, n))
    check(cudart.cudaMemcpyPeer(dst, 0, src, 0, n))
    check(cuda.cuMemcpyDtoH(out, dst, n))
    assert bytes(out) == data
