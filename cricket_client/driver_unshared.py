"""Memory a remote client cannot share with the GPU, in `cricket_client.driver` (re-exported
there). Managed memory needs one coherent memory between the program's host and the GPU;
across a network there is none. Those calls answer CUDA_ERROR_NOT_SUPPORTED, as local CUDA
does on a device without the feature, and the session's error message
(`cricket_client.last_error_message()`) says why and what to use instead; the device
attributes that announce them read 0 remotely (the server's
`cricket_server.remote_attributes`), so a well-written program takes its fallback path.

Mapped host memory (CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTREGISTER_DEVICEMAP) of a small size
is served as a host copy and a device copy kept coherent at launches and synchronizations
(`cricket_client.mapped_host`, which says what a program can and cannot expect); larger
ranges are refused naming the limit.

What else works: page-locked host allocations (cuMemAllocHost, cuMemHostAlloc without
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
from .connection import Connection
from .driver import (
    _INVALID_VALUE,
    _NOT_SUPPORTED,
    _SUCCESS,
    _conn,
    _fail,
    _out,
    cuMemAlloc,
    cuMemFree,
)
from .mapped_host import LIMIT_ENV, MappedHost, MappedRange, host_memory_at
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
    "cuMemHostGetFlags",
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
    "mapped (zero-copy) host memory is served remotely only for small ranges, kept coherent "
    "at launches and synchronizations (the GPU cannot reach this machine's memory across the "
    "network; CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY reads 0); allocate device memory and "
    "copy explicitly"
)
HOSTALLOC_DEVICEMAP = 0x02
HOSTREGISTER_DEVICEMAP = 0x02
HOSTREGISTER_IOMEMORY = 0x04
HOST_MEMORY_ALREADY_REGISTERED = 712
HOST_MEMORY_NOT_REGISTERED = 713

_registered: dict[int, int] = {}  # address -> size (cuMemHostRegister / cudaHostRegister)
_host_flags: dict[int, int] = {}  # cuMemHostAlloc's allocations -> their flags
_registered_lock = threading.Lock()


def _refuse(call: str, why: str, outputs: int) -> tuple[Any, ...]:
    return _fail(_current(), _NOT_SUPPORTED, f"{call}: {why}", outputs)


def register_host(call: str, p: Any, bytesize: int, flags: int, mapped_flag: int) -> int:
    """Record a host range as registered, mapped when `flags` has `mapped_flag`; the
    CUresult (I/O memory refused)."""
    address = as_int(p)
    if flags & HOSTREGISTER_IOMEMORY:
        why = "I/O memory cannot be registered remotely (the GPU is on another machine)"
        return int(_refuse(call, why, 0)[0])
    if address == 0 or bytesize == 0:
        return int(_fail(None, _INVALID_VALUE, "", 0)[0])
    with _registered_lock:
        if any(a <= address < a + n for a, n in _registered.items()):
            return HOST_MEMORY_ALREADY_REGISTERED
        _registered[address] = bytesize
    if flags & mapped_flag:
        err, _ = _map(_conn(), call, bytesize, flags, address, registered=True)
        if err:
            with _registered_lock:
                _registered.pop(address, None)
            return err
    return 0


def unregister_host(p: Any) -> int:
    address = as_int(p)
    with _registered_lock:
        if _registered.pop(address, None) is None:
            return HOST_MEMORY_NOT_REGISTERED
    mapped = _mapped_at(address)
    if mapped is not None and mapped.host == address:
        return _unmap(_mapped_of(_current()), address)
    return 0


def _current() -> Connection | None:
    try:
        return _conn()
    except Exception:  # no server configured: nothing of this process is mapped
        return None


def _map(
    conn: Connection, call: str, size: int, flags: int, host: int, *, registered: bool
) -> tuple[int, int]:
    """A mapped range of `size` bytes: the session's device copy, and host memory (the
    program's at `host` when `registered`, else made at the device copy's address where
    free); (CUresult, its host address)."""
    mapped = conn.mapped or MappedHost()
    if not mapped.room_for(size):
        why = (
            f"{size} bytes of mapped host memory would pass the {mapped.limit} bytes a "
            f"connection may map ({LIMIT_ENV}); {MAPPED_WHY}"
        )
        return int(_refuse(call, why, 0)[0]), 0
    err, handle = cuMemAlloc(size)
    if err:
        return int(err), 0
    device = as_int(handle)
    release = None
    if not registered:
        try:
            host, release = host_memory_at(device, size)
        except (MemoryError, OSError, ValueError):
            cuMemFree(device)
            return int(CUresult.CUDA_ERROR_OUT_OF_MEMORY), 0
    conn.mapped = mapped
    mapped.add(MappedRange(host, size, device, flags, registered, release))
    err = mapped.push(conn)  # the device copy starts as the host memory is
    if err:
        _unmap(mapped, host)
    return err, host


def _mapped_of(conn: Connection | None) -> MappedHost:
    """The connection's mapped ranges (none without a connection)."""
    return conn.mapped if conn is not None and conn.mapped is not None else MappedHost(0)


def _unmap(mapped: MappedHost, host: int) -> int:
    """Free the mapped range at `host` (its device copy, and its host memory if made here)."""
    found = mapped.remove(host)
    if found is None:
        return int(_INVALID_VALUE)
    err = int(cuMemFree(found.device)[0])
    if found.release is not None:
        found.release()
    return err


def cuMemAllocManaged(bytesize: int, flags: int) -> tuple[Any, Any]:
    size_t(bytesize, "cuMemAllocManaged: bytesize")
    uint(flags, "cuMemAllocManaged: flags")
    return _refuse("cuMemAllocManaged", MANAGED_WHY, 1)


def cuMemAllocHost(bytesize: int) -> tuple[Any, int | None]:
    return cuMemHostAlloc(bytesize, 0)


def cuMemHostAlloc(bytesize: int, Flags: int) -> tuple[Any, int | None]:
    size = size_t(bytesize, "cuMemHostAlloc: bytesize")
    flags = uint(Flags, "cuMemHostAlloc: Flags")
    if size == 0:
        return (_INVALID_VALUE, None)
    if flags & HOSTALLOC_DEVICEMAP:
        err, address = _map(_conn(), "cuMemHostAlloc", size, flags, 0, registered=False)
        if err:
            return _out(err, None)
    else:
        try:
            address = PINNED.alloc(size).address
        except (MemoryError, OSError, ValueError):
            return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
    _host_flags[address] = flags
    return (_SUCCESS, address)


def cuMemFreeHost(p: Any) -> tuple[Any]:
    address = as_int(p)  # free(NULL) semantics: CUDA answers success for a NULL pointer
    if address == 0:
        return (_SUCCESS,)
    _host_flags.pop(address, None)
    if PINNED.free(address):
        return (_SUCCESS,)
    mapped = _mapped_at(address)
    if mapped is None or mapped.registered or mapped.host != address:
        return (_INVALID_VALUE,)
    return _out(_unmap(_mapped_of(_current()), address))


def cuMemHostGetDevicePointer(p: Any, Flags: int) -> tuple[Any, Any]:
    """The device address of mapped host memory at `p` (its device copy's, at the same
    offset); CUDA_ERROR_INVALID_VALUE for host memory that is not mapped."""
    call = "cuMemHostGetDevicePointer"
    if uint(Flags, f"{call}: Flags"):
        return _fail(_current(), _INVALID_VALUE, f"{call}: Flags must be 0", 1)
    address = as_int(p)
    mapped = _mapped_at(address)
    if mapped is None:
        why = f"{call}: {address:#x} is no mapped host memory of this session"
        return _fail(_current(), _INVALID_VALUE, why, 1)
    return (_SUCCESS, mapped.device + address - mapped.host)


def cuMemHostGetFlags(p: Any) -> tuple[Any, int | None]:
    """The flags cuMemHostAlloc was given for the allocation holding `p`."""
    address = as_int(p)
    block = PINNED.find(address)
    if block is not None and block.address in _host_flags:
        return (_SUCCESS, _host_flags[block.address])
    mapped = _mapped_at(address)
    if mapped is not None and not mapped.registered:
        return (_SUCCESS, mapped.flags)
    why = f"cuMemHostGetFlags: {address:#x} is no memory of cuMemHostAlloc"
    return _fail(_current(), _INVALID_VALUE, why, 1)


def _mapped_at(address: int) -> MappedRange | None:
    return _mapped_of(_current()).find(address)


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
