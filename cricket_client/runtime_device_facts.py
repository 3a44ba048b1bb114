"""Device facts and array planes of `cuda.bindings.runtime`, through the driver's
(`cricket_client.driver_device_facts`; re-exported by `cricket_client.runtime`).

cudaMemGetLocationInfo is for managed and pageable memory (not shared remotely, as its
driver form says). cudaGetKernel takes the address of a kernel's host stub, an entry the
CUDA runtime registered from the program's own executable image: a remote program has no
such registration (it loads kernels as modules or libraries, which cudaLibraryGetKernel
serves), so it answers cudaErrorNotSupported saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import driver
from ._args import c_int, size_t
from ._enums import CUatomicOperation
from ._runtime_enums import cudaAtomicOperation, cudaError_t
from ._types import CUdevice, as_int
from .array_types import CUarray, cudaArray_t
from .driver_device_facts import LOCATION_WHY, atomic_operations
from .runtime import _fail, _ready, _ret, get_connection
from .runtime_state import initialize
from .standins import stand_in

__all__ = [
    "cudaArrayGetPlane",
    "cudaDeviceGetHostAtomicCapabilities",
    "cudaDeviceGetP2PAtomicCapabilities",
    "cudaGetKernel",
    "cudaMemGetLocationInfo",
]

_NOT_SUPPORTED = cudaError_t.cudaErrorNotSupported
GET_KERNEL_WHY = (
    "cudaGetKernel: entryFuncAddr is a kernel's host stub that the CUDA runtime registered "
    "from this program's own image; a remote program has no such registration: load the "
    "kernel's image with cudaLibraryLoadData and use cudaLibraryGetKernel"
)


def _driver_ops(call: str, operations: Any, count: int) -> list[CUatomicOperation]:
    return [CUatomicOperation(op) for op in atomic_operations(call, operations, count, cudaAtomicOperation)]


def cudaDeviceGetHostAtomicCapabilities(
    operations: Sequence[Any] | None, count: int, device: int
) -> tuple[Any, list[int] | None]:
    call = "cudaDeviceGetHostAtomicCapabilities"
    ops = _driver_ops(call, operations, count)
    device = c_int(device, f"{call}: device")
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    return _ret(*driver.cuDeviceGetHostAtomicCapabilities(ops, len(ops), CUdevice(device)))


def cudaDeviceGetP2PAtomicCapabilities(
    operations: Sequence[Any] | None, count: int, srcDevice: int, dstDevice: int
) -> tuple[Any, list[int] | None]:
    call = "cudaDeviceGetP2PAtomicCapabilities"
    ops = _driver_ops(call, operations, count)
    srcDevice = c_int(srcDevice, f"{call}: srcDevice")
    dstDevice = c_int(dstDevice, f"{call}: dstDevice")
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    return _ret(*driver.cuDeviceGetP2PAtomicCapabilities(
        ops, len(ops), CUdevice(srcDevice), CUdevice(dstDevice)
    ))  # fmt: skip


def cudaArrayGetPlane(hArray: Any, planeIdx: int) -> tuple[Any, cudaArray_t | None]:
    err = _ready()[0]
    if err:
        return _ret(err, None)
    err, plane = driver.cuArrayGetPlane(CUarray(as_int(hArray)), planeIdx)
    return _ret(err, None if err else cudaArray_t(as_int(plane)))


@stand_in("unshareable")
def cudaMemGetLocationInfo(
    devPtr: Any, size: int, summaryGranularity: int, samplingGranularity: int, location_out: Any
) -> tuple[Any]:
    call = "cudaMemGetLocationInfo"
    for v, what in ((size, "size"), (summaryGranularity, "summaryGranularity"),
                    (samplingGranularity, "samplingGranularity")):  # fmt: skip
        size_t(v, f"{call}: {what}")
    return _fail(get_connection(), _NOT_SUPPORTED, "cuda" + LOCATION_WHY[2:], 0)  # type: ignore[return-value]


@stand_in("process")
def cudaGetKernel(entryFuncAddr: Any) -> tuple[Any, Any]:
    return _fail(get_connection(), _NOT_SUPPORTED, GET_KERNEL_WHY, 1)  # type: ignore[return-value]
