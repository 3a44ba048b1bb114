"""Memory a remote client cannot share with the GPU, in `cricket_client.driver` (re-exported
there). Managed memory and mapped (zero-copy) host memory need one coherent memory between
the program's host and the GPU; across a network there is none. Those calls answer
CUDA_ERROR_NOT_SUPPORTED, as local CUDA does on a device without the feature, and the
session's error message (`cricket_client.last_error_message()`) says why and what to use
instead; the device attributes that announce them read 0 remotely (the server's
`cricket_server.remote_attributes`), so a well-written program takes its fallback path.

What still works: page-locked host allocations (cuMemAllocHost, cuMemHostAlloc without
CU_MEMHOSTALLOC_DEVICEMAP) live on this machine (`runtime_host.PINNED`), and cuMemHostRegister
without CU_MEMHOSTREGISTER_DEVICEMAP/IOMEMORY records the range; copies from and to either
travel like any host memory. Import it through `cricket_client.driver`.
"""

from __future__ import annotations

import threading
from typing import Any

from ._args import size_t, uint
from ._enums import CUresult
from ._types import as_int
from .driver import _INVALID_VALUE, _NOT_SUPPORTED, _SUCCESS, _conn, _fail
from .runtime_host import PINNED

__all__ = [
    "MANAGED_WHY",
    "MAPPED_WHY",
    "cuMemAdvise",
    "cuMemAllocHost",
    "cuMemAllocManaged",
    "cuMemFreeHost",
    "cuMemHostAlloc",
    "cuMemHostGetDevicePointer",
    "cuMemHostRegister",
    "cuMemHostUnregister",
    "cuMemPrefetchAsync",
    "cuMemRangeGetAttribute",
    "register_host",
    "unregister_host",
]

MANAGED_WHY = (
    "managed (unified) memory is not supported remotely: this program's host and the GPU are "
    "on different machines and no memory is coherent between them across the network "
    "(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY reads 0); allocate device memory (cuMemAlloc / "
    "cudaMalloc) and copy explicitly (cuMemcpyHtoD/DtoH, cudaMemcpy)"
)
MAPPED_WHY = (
    "mapped (zero-copy) host memory is not supported remotely: the GPU cannot reach this "
    "machine's memory across the network (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY reads 0); "
    "allocate device memory and copy explicitly"
)
HOSTALLOC_DEVICEMAP = 0x02
HOSTREGISTER_DEVICEMAP = 0x02
HOSTREGISTER_IOMEMORY = 0x04
HOST_MEMORY_ALREADY_REGISTERED = 712
HOST_MEMORY_NOT_REGISTERED = 713

_registered: dict[int, int] = {}  # address -> size (cuMemHostRegister / cudaHostRegister)
_registered_lock = threading.Lock()


def _refuse(call: str, why: str, outputs: int) -> tuple[Any, ...]:
    try:
        conn = _conn()
    except Exception:  # no server configured: the refusal does not need one
        conn = None
    return _fail(conn, _NOT_SUPPORTED, f"{call}: {why}", outputs)


def register_host(call: str, p: Any, bytesize: int, flags: int, mapped_flag: int) -> int:
    """Record a host range as registered; the CUresult (mapped and I/O memory refused)."""
    address = as_int(p)
    if flags & mapped_flag:
        return int(_refuse(call, MAPPED_WHY, 0)[0])
    if flags & HOSTREGISTER_IOMEMORY:
        why = "I/O memory cannot be registered remotely (the GPU is on another machine)"
        return int(_refuse(call, why, 0)[0])
    if address == 0 or bytesize == 0:
        return int(_fail(None, _INVALID_VALUE, "", 0)[0])
    with _registered_lock:
        if any(a <= address < a + n for a, n in _registered.items()):
            return HOST_MEMORY_ALREADY_REGISTERED
        _registered[address] = bytesize
    return 0


def unregister_host(p: Any) -> int:
    with _registered_lock:
        return 0 if _registered.pop(as_int(p), None) is not None else HOST_MEMORY_NOT_REGISTERED


def cuMemAllocManaged(bytesize: int, flags: int) -> tuple[Any, Any]:
    size_t(bytesize, "cuMemAllocManaged: bytesize")
    uint(flags, "cuMemAllocManaged: flags")
    return _refuse("cuMemAllocManaged", MANAGED_WHY, 1)


def cuMemAllocHost(bytesize: int) -> tuple[Any, int | None]:
    return cuMemHostAlloc(bytesize, 0)


def cuMemHostAlloc(bytesize: int, Flags: int) -> tuple[Any, int | None]:
    size = size_t(bytesize, "cuMemHostAlloc: bytesize")
    if uint(Flags, "cuMemHostAlloc: Flags") & HOSTALLOC_DEVICEMAP:
        return _refuse("cuMemHostAlloc", f"CU_MEMHOSTALLOC_DEVICEMAP: {MAPPED_WHY}", 1)
    if size == 0:
        return (_INVALID_VALUE, None)
    try:
        block = PINNED.alloc(size)
    except (MemoryError, OSError, ValueError):
        return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
    return (_SUCCESS, block.address)


def cuMemFreeHost(p: Any) -> tuple[Any]:
    address = as_int(p)  # free(NULL) semantics: CUDA answers success for a NULL pointer
    return (_SUCCESS,) if address == 0 or PINNED.free(address) else (_INVALID_VALUE,)


def cuMemHostGetDevicePointer(p: Any, Flags: int) -> tuple[Any, Any]:
    uint(Flags, "cuMemHostGetDevicePointer: Flags")
    return _refuse("cuMemHostGetDevicePointer", MAPPED_WHY, 1)


def cuMemHostRegister(p: Any, bytesize: int, Flags: int) -> tuple[Any]:
    call = "cuMemHostRegister"
    size = size_t(bytesize, f"{call}: bytesize")
    err = register_host(call, p, size, uint(Flags, f"{call}: Flags"), HOSTREGISTER_DEVICEMAP)
    return (CUresult(err),)


def cuMemHostUnregister(p: Any) -> tuple[Any]:
    return (CUresult(unregister_host(p)),)


def cuMemPrefetchAsync(
    devPtr: Any, count: int, location: Any, flags: int, hStream: Any
) -> tuple[Any]:
    return _refuse("cuMemPrefetchAsync", MANAGED_WHY, 0)


def cuMemAdvise(devPtr: Any, count: int, advice: Any, location: Any) -> tuple[Any]:
    return _refuse("cuMemAdvise", MANAGED_WHY, 0)


def cuMemRangeGetAttribute(
    dataSize: int, attribute: Any, devPtr: Any, count: int
) -> tuple[Any, Any]:
    return _refuse("cuMemRangeGetAttribute", MANAGED_WHY, 1)
