"""Memory pools of `cricket_client.runtime` (cuda.bindings.runtime names, arguments and return
tuples): cudaDeviceGetDefaultMemPool, cudaMemPoolCreate, cudaMemPoolSetAttribute,
cudaMallocFromPoolAsync, ... over the driver forms (`cricket_client.driver_vmm`), with the
runtime's lazy context (cudaMallocAsync and cudaFreeAsync are in `runtime`)."""

from __future__ import annotations

from typing import Any

from . import driver_vmm as dv
from ._args import size_t
from ._types import CUdeviceptr, as_int
from ._types_vmm import cudaMemAccessDesc, cudaMemLocation, cudaMemPool_t, cudaMemPoolProps
from .runtime import _stream, _with_context

__all__ = [
    "cudaDeviceGetDefaultMemPool",
    "cudaDeviceGetMemPool",
    "cudaDeviceSetMemPool",
    "cudaMallocFromPoolAsync",
    "cudaMemAccessDesc",
    "cudaMemLocation",
    "cudaMemGetDefaultMemPool",
    "cudaMemGetMemPool",
    "cudaMemPoolCreate",
    "cudaMemPoolGetAccess",
    "cudaMemPoolSetAccess",
    "cudaMemSetMemPool",
    "cudaMemPoolDestroy",
    "cudaMemPoolGetAttribute",
    "cudaMemPoolProps",
    "cudaMemPoolSetAttribute",
    "cudaMemPoolTrimTo",
    "cudaMemPool_t",
]


def _pool(result: tuple[Any, ...]) -> tuple[Any, ...]:
    err, pool = result
    return (err, cudaMemPool_t(pool) if pool is not None else None)


def cudaDeviceGetDefaultMemPool(device: int) -> tuple[Any, cudaMemPool_t | None]:
    return _with_context(lambda: _pool(dv.cuDeviceGetDefaultMemPool(device)), 1)


def cudaDeviceGetMemPool(device: int) -> tuple[Any, cudaMemPool_t | None]:
    return _with_context(lambda: _pool(dv.cuDeviceGetMemPool(device)), 1)


def cudaDeviceSetMemPool(device: int, memPool: Any) -> tuple[Any]:
    return _with_context(lambda: dv.cuDeviceSetMemPool(device, memPool), 0)


def cudaMemPoolCreate(poolProps: Any) -> tuple[Any, cudaMemPool_t | None]:
    return _with_context(lambda: _pool(dv.cuMemPoolCreate(poolProps)), 1)


def cudaMemPoolDestroy(memPool: Any) -> tuple[Any]:
    return _with_context(lambda: dv.cuMemPoolDestroy(memPool), 0)


def cudaMemPoolSetAttribute(memPool: Any, attr: Any, value: Any) -> tuple[Any]:
    return _with_context(lambda: dv.cuMemPoolSetAttribute(memPool, attr, value), 0)


def cudaMemPoolGetAttribute(memPool: Any, attr: Any) -> tuple[Any, Any]:
    return _with_context(lambda: dv.cuMemPoolGetAttribute(memPool, attr), 1)


def cudaMemPoolTrimTo(memPool: Any, minBytesToKeep: int) -> tuple[Any]:
    return _with_context(lambda: dv.cuMemPoolTrimTo(memPool, minBytesToKeep), 0)


def cudaMallocFromPoolAsync(size: int, memPool: Any, stream: Any) -> tuple[Any, int | None]:
    size = size_t(size, "cudaMallocFromPoolAsync: size")

    def alloc() -> tuple[Any, ...]:
        err, ptr = dv.cuMemAllocFromPoolAsync(size, as_int(memPool), _stream(stream))
        return (err, int(ptr) if isinstance(ptr, CUdeviceptr) else ptr)

    return _with_context(alloc, 1)


def cudaMemGetDefaultMemPool(location: Any, typename: Any) -> tuple[Any, cudaMemPool_t | None]:
    return _with_context(lambda: _pool(dv.cuMemGetDefaultMemPool(location, typename)), 1)


def cudaMemGetMemPool(location: Any, typename: Any) -> tuple[Any, cudaMemPool_t | None]:
    return _with_context(lambda: _pool(dv.cuMemGetMemPool(location, typename)), 1)


def cudaMemSetMemPool(location: Any, typename: Any, memPool: Any) -> tuple[Any]:
    return _with_context(lambda: dv.cuMemSetMemPool(location, typename, memPool), 0)


def cudaMemPoolGetAccess(memPool: Any, location: Any) -> tuple[Any, Any]:
    def get() -> tuple[Any, ...]:
        from ._runtime_enums import cudaMemAccessFlags

        err, flags = dv.cuMemPoolGetAccess(memPool, location)
        return (err, cudaMemAccessFlags(int(flags)) if flags is not None else None)

    return _with_context(get, 1)


def cudaMemPoolSetAccess(memPool: Any, descList: Any, count: int) -> tuple[Any]:
    return _with_context(lambda: dv.cuMemPoolSetAccess(memPool, descList, count), 0)
