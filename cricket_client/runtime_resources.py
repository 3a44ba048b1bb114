"""Mipmapped and sparse arrays, device resources of `cuda.bindings.runtime`, remote: the
runtime forms of `driver_mipmaps` and `driver_green_ctx` (the runtime's green and execution
contexts: `runtime_exec_ctx`)."""

from __future__ import annotations

from typing import Any

from . import driver_green_ctx as dg
from . import driver_mipmaps as dm
from ._args import size_t, uint
from ._runtime_enums import cudaDevResourceType, cudaError_t
from ._types import as_int
from .array_types import cudaArray_t
from .resource_types import (
    cudaArrayMemoryRequirements,
    cudaArraySparseProperties,
    cudaDevResource,
    cudaDevResourceDesc_t,
    cudaDevSmResource,
    cudaMipmappedArray_t,
)
from .runtime_arrays import _SUCCESS, _malloc_array, _ready, _ret

__all__ = [
    "cudaMallocMipmappedArray",
    "cudaFreeMipmappedArray",
    "cudaGetMipmappedArrayLevel",
    "cudaMipmappedArrayGetSparseProperties",
    "cudaArrayGetSparseProperties",
    "cudaMipmappedArrayGetMemoryRequirements",
    "cudaArrayGetMemoryRequirements",
    "cudaDeviceGetDevResource",
    "cudaDevSmResourceSplitByCount",
    "cudaDevResourceGenerateDesc",
    "cudaMipmappedArray_t",
    "cudaArraySparseProperties",
    "cudaArrayMemoryRequirements",
    "cudaDevResource",
    "cudaDevSmResource",
    "cudaDevResourceDesc_t",
]


def cudaMallocMipmappedArray(
    desc: Any, extent: Any, numLevels: int, flags: int
) -> tuple[Any, cudaMipmappedArray_t | None]:
    call = "cudaMallocMipmappedArray"
    levels = uint(numLevels, f"{call}: numLevels")
    if not levels:
        return (cudaError_t.cudaErrorInvalidValue, None)
    return _malloc_array(  # type: ignore[return-value]
        call, desc, size_t(extent.width, f"{call}: width"), size_t(extent.height, f"{call}: height"),
        size_t(extent.depth, f"{call}: depth"), uint(flags, f"{call}: flags"), levels,
    )  # fmt: skip


def cudaFreeMipmappedArray(mipmappedArray: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    if as_int(mipmappedArray) == 0:
        return (_SUCCESS,)
    err, _ = conn.sync("MIPMAP_DESTROY", as_int(mipmappedArray))
    return _ret(err, conn=conn)


def cudaGetMipmappedArrayLevel(mipmappedArray: Any, level: int) -> tuple[Any, cudaArray_t | None]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, r = conn.sync(
        "MIPMAP_GET_LEVEL", as_int(mipmappedArray), uint(level, "cudaGetMipmappedArrayLevel: level")
    )
    return _ret(err, None if err else cudaArray_t(r.value), conn=conn)


def _sparse(handle: Any, mipmap: bool) -> tuple[Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, props = dm.sparse(conn, as_int(handle), mipmap, cudaArraySparseProperties)
    return _ret(err, props, conn=conn)


def cudaMipmappedArrayGetSparseProperties(mipmap: Any) -> tuple[Any, Any]:
    return _sparse(mipmap, True)


def cudaArrayGetSparseProperties(array: Any) -> tuple[Any, Any]:
    return _sparse(array, False)


def _requirements(handle: Any, mipmap: bool, device: int) -> tuple[Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, req = dm.requirements(conn, as_int(handle), mipmap, int(device), cudaArrayMemoryRequirements)
    return _ret(err, req, conn=conn)


def cudaMipmappedArrayGetMemoryRequirements(mipmap: Any, device: int) -> tuple[Any, Any]:
    return _requirements(mipmap, True, device)


def cudaArrayGetMemoryRequirements(array: Any, device: int) -> tuple[Any, Any]:
    return _requirements(array, False, device)


def cudaDeviceGetDevResource(device: int, typename: Any) -> tuple[Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, res = dg.resource_call(
        "CU_DEVICE_GET_DEV_RESOURCE", int(device), int(typename),
        make=cudaDevResource, kind=cudaDevResourceType,
    )  # fmt: skip
    return _ret(err, res, conn=conn)


def cudaDevSmResourceSplitByCount(
    nbGroups: int, input_: Any, flags: int, minCount: int
) -> tuple[Any, Any, Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None, None, None)
    err, groups, count, remainder = dg.split(
        nbGroups, input_, flags, minCount, cudaDevResource, cudaDevResourceType
    )
    return _ret(err, groups, count, remainder, conn=conn)


def cudaDevResourceGenerateDesc(resources: Any, nbResources: int) -> tuple[Any, Any]:
    err, value = dg.generate_desc("cudaDevResourceGenerateDesc", resources, nbResources)
    if err:
        return (cudaError_t.cudaErrorInvalidValue, None)
    return (_SUCCESS, cudaDevResourceDesc_t(value))
