"""Flags, attributes, launch variants, several devices and the refused shared memory in
`cricket_client.runtime` (re-exported there), built on the driver calls of
`driver_flags`, `driver_peers` and `driver_unshared`. Import it through
`cricket_client.runtime`.

cudaGetDeviceFlags answers the flags set (cudaSetDeviceFlags, cuDevicePrimaryCtxSetFlags):
it does not add the implicit cudaDeviceMapHost a local runtime reports, since no host memory
can be mapped remotely. cudaLaunchCooperativeKernel(func, gridDim, blockDim, args, sharedMem,
stream), which cuda-python does not offer, launches as cudaLaunchKernel does.
"""

from __future__ import annotations

from typing import Any

from . import driver
from ._args import c_int, size_t, uint
from ._runtime_enums import cudaError_t, cudaFuncCache
from ._types import CUcontext, CUdevice, CUfunction, as_int
from .driver_unshared import MANAGED_WHY, register_host, unregister_host
from .launch_types import cudaStreamAttrValue
from .runtime import (
    _SUCCESS,
    _fail,
    _function,
    _launch_kernel,
    _ready,
    _ret,
    _stream,
    _with_context,
    get_connection,
)
from .runtime_state import connection_state, initialize
from .runtime_state import thread_state as _thread_state

__all__ = [
    "cudaDeviceCanAccessPeer",
    "cudaDeviceDisablePeerAccess",
    "cudaDeviceEnablePeerAccess",
    "cudaDeviceGetCacheConfig",
    "cudaDeviceGetP2PAttribute",
    "cudaDeviceSetCacheConfig",
    "cudaFuncSetCacheConfig",
    "cudaGetDeviceFlags",
    "cudaHostGetDevicePointer",
    "cudaHostGetFlags",
    "cudaHostRegister",
    "cudaHostUnregister",
    "cudaLaunchCooperativeKernel",
    "cudaMallocManaged",
    "cudaMemAdvise",
    "cudaMemPrefetchAsync",
    "cudaMemcpyPeer",
    "cudaMemcpyPeerAsync",
    "cudaOccupancyAvailableDynamicSMemPerBlock",
    "cudaSetDeviceFlags",
    "cudaStreamAttrValue",
    "cudaStreamGetAttribute",
    "cudaStreamGetFlags",
    "cudaStreamGetPriority",
    "cudaStreamSetAttribute",
]

_NOT_SUPPORTED = cudaError_t.cudaErrorNotSupported
_HOST_REGISTER_MAPPED = 0x02  # cudaHostRegisterMapped


# -- device flags and cache configuration ---------------------------------------------------


def cudaSetDeviceFlags(flags: int) -> tuple[Any]:
    flags = uint(flags, "cudaSetDeviceFlags: flags")
    conn = get_connection()
    err = initialize(conn)
    if err:
        return _ret(err)
    return _ret(driver.cuDevicePrimaryCtxSetFlags(CUdevice(_thread_state().device), flags)[0])


def cudaGetDeviceFlags() -> tuple[Any, int | None]:
    return _with_context(driver.cuCtxGetFlags, 1)


def cudaDeviceSetCacheConfig(cacheConfig: Any) -> tuple[Any]:
    return _with_context(lambda: driver.cuCtxSetCacheConfig(int(cacheConfig)), 0)


def cudaDeviceGetCacheConfig() -> tuple[Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, config = driver.cuCtxGetCacheConfig()
    return _ret(err, cudaFuncCache(int(config)) if not err else None)


def cudaFuncSetCacheConfig(func: Any, cacheConfig: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    err, fn = _function(conn, func)
    if err:
        return _ret(err)
    return _ret(driver.cuFuncSetCacheConfig(CUfunction(fn), int(cacheConfig))[0])


def cudaOccupancyAvailableDynamicSMemPerBlock(
    func: Any, numBlocks: int, blockSize: int
) -> tuple[Any, int | None]:
    call = "cudaOccupancyAvailableDynamicSMemPerBlock"
    numBlocks = c_int(numBlocks, f"{call}: numBlocks")
    blockSize = c_int(blockSize, f"{call}: blockSize")
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, fn = _function(conn, func)
    if err:
        return _ret(err, None)
    return _ret(
        *driver.cuOccupancyAvailableDynamicSMemPerBlock(CUfunction(fn), numBlocks, blockSize)
    )


def cudaLaunchCooperativeKernel(
    func: Any, gridDim: Any, blockDim: Any, args: Any, sharedMem: int, stream: Any
) -> tuple[Any]:
    return _launch_kernel(
        "cudaLaunchCooperativeKernel", driver.cuLaunchCooperativeKernel, (),
        func, gridDim, blockDim, args, sharedMem, stream,
    )  # fmt: skip


# -- streams --------------------------------------------------------------------------------


def cudaStreamGetPriority(hStream: Any) -> tuple[Any, int | None]:
    return _with_context(lambda: driver.cuStreamGetPriority(_stream(hStream)), 1)


def cudaStreamGetFlags(hStream: Any) -> tuple[Any, int | None]:
    return _with_context(lambda: driver.cuStreamGetFlags(_stream(hStream)), 1)


def cudaStreamGetAttribute(hStream: Any, attr: Any) -> tuple[Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, value = driver.cuStreamGetAttribute(_stream(hStream), int(attr))
    if err:
        return _ret(err, None)
    out = cudaStreamAttrValue()
    out.__dict__.update(value.__dict__)
    return (_SUCCESS, out)


def cudaStreamSetAttribute(hStream: Any, attr: Any, value: Any) -> tuple[Any]:
    return _with_context(lambda: driver.cuStreamSetAttribute(_stream(hStream), int(attr), value), 0)


# -- several devices ------------------------------------------------------------------------


def cudaDeviceCanAccessPeer(device: int, peerDevice: int) -> tuple[Any, int | None]:
    device = c_int(device, "cudaDeviceCanAccessPeer: device")
    peerDevice = c_int(peerDevice, "cudaDeviceCanAccessPeer: peerDevice")
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    return _ret(*driver.cuDeviceCanAccessPeer(CUdevice(device), CUdevice(peerDevice)))


def cudaDeviceGetP2PAttribute(attr: Any, srcDevice: int, dstDevice: int) -> tuple[Any, int | None]:
    srcDevice = c_int(srcDevice, "cudaDeviceGetP2PAttribute: srcDevice")
    dstDevice = c_int(dstDevice, "cudaDeviceGetP2PAttribute: dstDevice")
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    return _ret(
        *driver.cuDeviceGetP2PAttribute(int(attr), CUdevice(srcDevice), CUdevice(dstDevice))
    )


def _primary(conn: Any, dev: int) -> tuple[int, CUcontext | None]:
    """(CUresult, the runtime's primary context of `dev`), retained once per connection."""
    state = connection_state(conn)
    ctx = state.primary.get(dev)
    if ctx is not None:
        return 0, ctx
    err, count = driver.cuDeviceGetCount()
    if err:
        return int(err), None
    if not 0 <= dev < (count or 0):
        return int(cudaError_t.cudaErrorInvalidDevice), None
    err, ctx = driver.cuDevicePrimaryCtxRetain(CUdevice(dev))
    if err or ctx is None:
        return int(err), None
    state.primary[dev] = ctx
    return 0, ctx


def cudaDeviceEnablePeerAccess(peerDevice: int, flags: int) -> tuple[Any]:
    peerDevice = c_int(peerDevice, "cudaDeviceEnablePeerAccess: peerDevice")
    flags = uint(flags, "cudaDeviceEnablePeerAccess: flags")
    err, conn = _ready()
    if err:
        return _ret(err)
    err, peer = _primary(conn, peerDevice)
    if err:
        return _ret(err)
    return _ret(driver.cuCtxEnablePeerAccess(peer, flags)[0])


def cudaDeviceDisablePeerAccess(peerDevice: int) -> tuple[Any]:
    peerDevice = c_int(peerDevice, "cudaDeviceDisablePeerAccess: peerDevice")
    err, conn = _ready()
    if err:
        return _ret(err)
    err, peer = _primary(conn, peerDevice)
    if err:
        return _ret(err)
    return _ret(driver.cuCtxDisablePeerAccess(peer)[0])


def _memcpy_peer(
    call: str, dst: Any, dstDevice: int, src: Any, srcDevice: int, count: int, stream: Any
) -> tuple[Any]:
    dstDevice = c_int(dstDevice, f"{call}: dstDevice")
    srcDevice = c_int(srcDevice, f"{call}: srcDevice")
    count = size_t(count, f"{call}: count")
    err, conn = _ready()
    if err:
        return _ret(err)
    err, dst_ctx = _primary(conn, dstDevice)
    if not err:
        err, src_ctx = _primary(conn, srcDevice)
    if err:
        return _ret(err)
    if stream is None:
        return _ret(driver.cuMemcpyPeer(as_int(dst), dst_ctx, as_int(src), src_ctx, count)[0])
    result = driver.cuMemcpyPeerAsync(as_int(dst), dst_ctx, as_int(src), src_ctx, count, stream)
    return _ret(result[0])


def cudaMemcpyPeer(dst: Any, dstDevice: int, src: Any, srcDevice: int, count: int) -> tuple[Any]:
    return _memcpy_peer("cudaMemcpyPeer", dst, dstDevice, src, srcDevice, count, None)


def cudaMemcpyPeerAsync(
    dst: Any, dstDevice: int, src: Any, srcDevice: int, count: int, stream: Any
) -> tuple[Any]:
    return _memcpy_peer(
        "cudaMemcpyPeerAsync", dst, dstDevice, src, srcDevice, count, _stream(stream)
    )


# -- memory a remote client cannot share ----------------------------------------------------


def _refuse(call: str, why: str, outputs: int) -> tuple[Any, ...]:
    return _fail(get_connection(), _NOT_SUPPORTED, f"{call}: {why}", outputs)


def cudaMallocManaged(size: int, flags: int) -> tuple[Any, int | None]:
    size_t(size, "cudaMallocManaged: size")
    uint(flags, "cudaMallocManaged: flags")
    return _refuse("cudaMallocManaged", MANAGED_WHY, 1)


def cudaHostGetDevicePointer(pHost: Any, flags: int) -> tuple[Any, int | None]:
    flags = uint(flags, "cudaHostGetDevicePointer: flags")
    return _ret(*driver.cuMemHostGetDevicePointer(pHost, flags))


def cudaHostGetFlags(pHost: Any) -> tuple[Any, int | None]:
    """The flags cudaHostAlloc was given for the allocation holding `pHost`."""
    return _ret(*driver.cuMemHostGetFlags(pHost))


def cudaHostRegister(ptr: Any, size: int, flags: int) -> tuple[Any]:
    call = "cudaHostRegister"
    size = size_t(size, f"{call}: size")
    flags = uint(flags, f"{call}: flags")
    if flags & _HOST_REGISTER_MAPPED:  # its device copy needs the device's context
        return _with_context(lambda: (register_host(call, ptr, size, flags, _HOST_REGISTER_MAPPED),), 0)
    return _ret(register_host(call, ptr, size, flags, _HOST_REGISTER_MAPPED))


def cudaHostUnregister(ptr: Any) -> tuple[Any]:
    return _ret(unregister_host(ptr))


def cudaMemPrefetchAsync(
    devPtr: Any, count: int, location: Any, flags: int, stream: Any
) -> tuple[Any]:
    return _refuse("cudaMemPrefetchAsync", MANAGED_WHY, 0)


def cudaMemAdvise(devPtr: Any, count: int, advice: Any, location: Any) -> tuple[Any]:
    return _refuse("cudaMemAdvise", MANAGED_WHY, 0)


