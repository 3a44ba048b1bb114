"""Virtual memory management and memory pools of `cricket_client.driver` (cuda.bindings.driver
names, arguments and return tuples): cuMemAddressReserve, cuMemCreate, cuMemMap,
cuMemSetAccess, ..., cuMemPoolCreate, cuMemAllocFromPoolAsync, ... Reserved addresses are real
device addresses on the server's GPU, stable across checkpoint/restart (D4); physical
allocations and pools are server-issued handles."""

from __future__ import annotations

from typing import Any

from ._args import c_int, size_t, u64
from ._enums import CUresult
from ._types import CUdeviceptr, as_int
from ._types_vmm import (
    CUmemAccessDesc,
    CUmemAllocationProp,
    CUmemGenericAllocationHandle,
    CUmemLocation,
    CUmemoryPool,
    CUmemPoolProps,
    cuuint64_t,
)
from .connection import get_connection as _conn
from .errors import to_result

_SUCCESS = CUresult.CUDA_SUCCESS
_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE
_U64_POOL_ATTRS = frozenset({4, 5, 6, 7, 8, 13})  # answered as cuuint64_t, as cuda-python does

__all__ = [
    "CUmemAccessDesc",
    "CUmemAllocationProp",
    "CUmemGenericAllocationHandle",
    "CUmemLocation",
    "CUmemPoolProps",
    "CUmemoryPool",
    "cuuint64_t",
    "cuDeviceGetDefaultMemPool",
    "cuDeviceGetMemPool",
    "cuDeviceSetMemPool",
    "cuMemAddressFree",
    "cuMemAddressReserve",
    "cuMemAllocFromPoolAsync",
    "cuMemCreate",
    "cuMemGetAccess",
    "cuMemGetDefaultMemPool",
    "cuMemGetMemPool",
    "cuMemPoolGetAccess",
    "cuMemPoolSetAccess",
    "cuMemSetMemPool",
    "cuMemGetAllocationGranularity",
    "cuMemGetAllocationPropertiesFromHandle",
    "cuMemMap",
    "cuMemPoolCreate",
    "cuMemPoolDestroy",
    "cuMemPoolGetAttribute",
    "cuMemPoolSetAttribute",
    "cuMemPoolTrimTo",
    "cuMemRelease",
    "cuMemRetainAllocationHandle",
    "cuMemSetAccess",
    "cuMemUnmap",
]


def _out(err: int, *values: Any) -> tuple[Any, ...]:
    if err:
        return (to_result(err),) + (None,) * len(values)
    return (_SUCCESS, *values)


def _u64(value: Any, what: str) -> int:
    number = as_int(value)
    return number if 0 <= number < 1 << 64 else u64(number, what)


def _stream(h: Any) -> int:
    from .driver import _stream as wire_stream  # the driver's mapping of the default streams

    return wire_stream(h)


def _local_error(message: str, outputs: int) -> tuple[Any, ...]:
    _conn().set_local_error(message)
    return (_INVALID_VALUE,) + (None,) * outputs


def _struct(call: str, what: str, convert: Any, value: Any) -> Any:
    """`convert(value)`, or None (and the local error named) when `value` is not the struct."""
    try:
        return convert(value)
    except (AttributeError, TypeError, ValueError):
        _conn().set_local_error(f"{call}: {what} ({type(value).__name__}) lacks the struct's fields")
        return None


def _location(loc: Any) -> Any:
    from rpc_spec import cricket_rpc as proto

    return proto.mem_location(type=int(loc.type), id=int(loc.id))


def _wire_prop(prop: Any) -> Any:
    from rpc_spec import cricket_rpc as proto

    flags = getattr(prop, "allocFlags", None)
    return proto.mem_alloc_prop(
        type=int(prop.type),
        location=_location(prop.location),
        requested_handle_types=int(prop.requestedHandleTypes),
        compression_type=int(getattr(flags, "compressionType", 0)),
        gpu_direct_rdma_capable=int(getattr(flags, "gpuDirectRDMACapable", 0)),
        usage=int(getattr(flags, "usage", 0)),
    )


# -- virtual memory management --------------------------------------------------------------


def cuMemGetAllocationGranularity(prop: Any, option: Any) -> tuple[Any, int | None]:
    wire = _struct("cuMemGetAllocationGranularity", "prop", _wire_prop, prop)
    if wire is None:
        return (_INVALID_VALUE, None)
    err, r = _conn().sync("CU_MEM_GET_ALLOCATION_GRANULARITY", wire, int(option))
    return _out(err, r.value if not err else None)


def cuMemAddressReserve(
    size: int, alignment: int, addr: Any, flags: int
) -> tuple[Any, CUdeviceptr | None]:
    size = size_t(size, "cuMemAddressReserve: size")
    alignment = size_t(alignment, "cuMemAddressReserve: alignment")
    err, r = _conn().sync(
        "CU_MEM_ADDRESS_RESERVE",
        size,
        alignment,
        _u64(addr, "cuMemAddressReserve: addr"),
        _u64(flags, "cuMemAddressReserve: flags"),
    )
    return _out(err, CUdeviceptr(r.value) if not err else None)


def cuMemAddressFree(ptr: Any, size: int) -> tuple[Any]:
    size = size_t(size, "cuMemAddressFree: size")
    return _out(_conn().sync("CU_MEM_ADDRESS_FREE", _u64(ptr, "cuMemAddressFree: ptr"), size)[0])


def cuMemCreate(
    size: int, prop: Any, flags: int
) -> tuple[Any, CUmemGenericAllocationHandle | None]:
    size = size_t(size, "cuMemCreate: size")
    wire = _struct("cuMemCreate", "prop", _wire_prop, prop)
    if wire is None:
        return (_INVALID_VALUE, None)
    err, r = _conn().sync("CU_MEM_CREATE", size, wire, _u64(flags, "cuMemCreate: flags"))
    return _out(err, CUmemGenericAllocationHandle(r.value) if not err else None)


def cuMemRelease(handle: Any) -> tuple[Any]:
    return _out(_conn().sync("CU_MEM_RELEASE", _u64(handle, "cuMemRelease: handle"))[0])


def cuMemMap(ptr: Any, size: int, offset: int, handle: Any, flags: int) -> tuple[Any]:
    err, _ = _conn().sync(
        "CU_MEM_MAP",
        _u64(ptr, "cuMemMap: ptr"),
        size_t(size, "cuMemMap: size"),
        size_t(offset, "cuMemMap: offset"),
        _u64(handle, "cuMemMap: handle"),
        _u64(flags, "cuMemMap: flags"),
    )
    return _out(err)


def cuMemUnmap(ptr: Any, size: int) -> tuple[Any]:
    size = size_t(size, "cuMemUnmap: size")
    return _out(_conn().sync("CU_MEM_UNMAP", _u64(ptr, "cuMemUnmap: ptr"), size)[0])


def cuMemSetAccess(ptr: Any, size: int, desc: Any, count: int) -> tuple[Any]:
    from rpc_spec import cricket_rpc as proto

    size = size_t(size, "cuMemSetAccess: size")
    count = size_t(count, "cuMemSetAccess: count")
    descs = list(desc or [])
    if count > len(descs):
        return _local_error(
            f"cuMemSetAccess: count {count} but {len(descs)} descriptors given", 0
        )
    wire = _struct(
        "cuMemSetAccess",
        "desc",
        lambda ds: [
            proto.mem_access_desc(location=_location(d.location), flags=int(d.flags)) for d in ds
        ],
        descs[:count],
    )
    if wire is None:
        return (_INVALID_VALUE,)
    err, _ = _conn().sync("CU_MEM_SET_ACCESS", _u64(ptr, "cuMemSetAccess: ptr"), size, wire)
    return _out(err)


def cuMemGetAccess(location: Any, ptr: Any) -> tuple[Any, int | None]:
    wire = _struct("cuMemGetAccess", "location", _location, location)
    if wire is None:
        return (_INVALID_VALUE, None)
    err, r = _conn().sync("CU_MEM_GET_ACCESS", wire, _u64(ptr, "cuMemGetAccess: ptr"))
    return _out(err, r.value if not err else None)


def cuMemGetAllocationPropertiesFromHandle(handle: Any) -> tuple[Any, CUmemAllocationProp | None]:
    err, r = _conn().sync(
        "CU_MEM_GET_ALLOCATION_PROPERTIES_FROM_HANDLE",
        _u64(handle, "cuMemGetAllocationPropertiesFromHandle: handle"),
    )
    if err:
        return _out(err, None)
    p = r.value
    prop = CUmemAllocationProp(
        type=_enum("CUmemAllocationType", p.type),
        requestedHandleTypes=_enum("CUmemAllocationHandleType", p.requested_handle_types),
        location=CUmemLocation(type=_enum("CUmemLocationType", p.location.type), id=p.location.id),
    )
    prop.allocFlags.compressionType = p.compression_type
    prop.allocFlags.gpuDirectRDMACapable = p.gpu_direct_rdma_capable
    prop.allocFlags.usage = p.usage
    return (_SUCCESS, prop)


def _enum(name: str, value: int) -> Any:
    from . import _enums

    try:
        return getattr(_enums, name)(value)
    except ValueError:
        return value


def cuMemRetainAllocationHandle(addr: Any) -> tuple[Any, CUmemGenericAllocationHandle | None]:
    err, r = _conn().sync(
        "CU_MEM_RETAIN_ALLOCATION_HANDLE", _u64(addr, "cuMemRetainAllocationHandle: addr")
    )
    return _out(err, CUmemGenericAllocationHandle(r.value) if not err else None)


# -- memory pools ---------------------------------------------------------------------------


def cuDeviceGetDefaultMemPool(dev: Any) -> tuple[Any, CUmemoryPool | None]:
    err, r = _conn().sync("CU_DEVICE_GET_DEFAULT_MEM_POOL", c_int(as_int(dev), "dev"))
    return _out(err, CUmemoryPool(r.value) if not err else None)


def cuDeviceGetMemPool(dev: Any) -> tuple[Any, CUmemoryPool | None]:
    err, r = _conn().sync("CU_DEVICE_GET_MEM_POOL", c_int(as_int(dev), "dev"))
    return _out(err, CUmemoryPool(r.value) if not err else None)


def cuDeviceSetMemPool(dev: Any, pool: Any) -> tuple[Any]:
    err, _ = _conn().sync(
        "CU_DEVICE_SET_MEM_POOL", c_int(as_int(dev), "dev"), _u64(pool, "cuDeviceSetMemPool: pool")
    )
    return _out(err)


def cuMemPoolCreate(poolProps: Any) -> tuple[Any, CUmemoryPool | None]:
    from rpc_spec import cricket_rpc as proto

    def convert(p: Any) -> Any:
        return proto.mem_pool_props(
            alloc_type=int(p.allocType),
            handle_types=int(p.handleTypes),
            location=_location(p.location),
            max_size=size_t(int(p.maxSize), "cuMemPoolCreate: maxSize"),
            usage=int(getattr(p, "usage", 0)),
        )

    wire = _struct("cuMemPoolCreate", "poolProps", convert, poolProps)
    if wire is None:
        return (_INVALID_VALUE, None)
    err, r = _conn().sync("CU_MEM_POOL_CREATE", wire)
    return _out(err, CUmemoryPool(r.value) if not err else None)


def cuMemPoolDestroy(pool: Any) -> tuple[Any]:
    return _out(_conn().sync("CU_MEM_POOL_DESTROY", _u64(pool, "cuMemPoolDestroy: pool"))[0])


def cuMemPoolSetAttribute(pool: Any, attr: Any, value: Any) -> tuple[Any]:
    err, _ = _conn().sync(
        "CU_MEM_POOL_SET_ATTRIBUTE",
        _u64(pool, "cuMemPoolSetAttribute: pool"),
        int(attr),
        _u64(value, "cuMemPoolSetAttribute: value"),
    )
    return _out(err)


def cuMemPoolGetAttribute(pool: Any, attr: Any) -> tuple[Any, Any]:
    err, r = _conn().sync(
        "CU_MEM_POOL_GET_ATTRIBUTE", _u64(pool, "cuMemPoolGetAttribute: pool"), int(attr)
    )
    if err:
        return _out(err, None)
    return (_SUCCESS, cuuint64_t(r.value) if int(attr) in _U64_POOL_ATTRS else int(r.value))


def cuMemPoolTrimTo(pool: Any, minBytesToKeep: int) -> tuple[Any]:
    keep = size_t(minBytesToKeep, "cuMemPoolTrimTo: minBytesToKeep")
    return _out(_conn().sync("CU_MEM_POOL_TRIM_TO", _u64(pool, "cuMemPoolTrimTo: pool"), keep)[0])


def cuMemAllocFromPoolAsync(
    bytesize: int, pool: Any, hStream: Any
) -> tuple[Any, CUdeviceptr | None]:
    bytesize = size_t(bytesize, "cuMemAllocFromPoolAsync: bytesize")
    err, r = _conn().sync(
        "CU_MEM_ALLOC_FROM_POOL_ASYNC",
        bytesize,
        _u64(pool, "cuMemAllocFromPoolAsync: pool"),
        _stream(hStream),
    )
    return _out(err, CUdeviceptr(r.value) if not err else None)



# -- pools by location (CUDA 13) and pool access: over the procedures above -----------------

_DEVICE_LOCATION = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_NOT_SUPPORTED = CUresult.CUDA_ERROR_NOT_SUPPORTED
_PROT_NONE, _PROT_READWRITE = 0, 3


def _device_of(call: str, location: Any, typename: Any) -> int | None:
    """The device a (location, allocation type) names; None (local error set) for pools a
    remote client cannot have: host memory of the server is not the client's."""
    try:
        loc_type, dev, kind = int(location.type), int(location.id), int(typename)
    except (AttributeError, TypeError, ValueError):
        _conn().set_local_error(f"{call}: location ({type(location).__name__}) is not a location")
        return None
    if loc_type != _DEVICE_LOCATION or kind != _PINNED:
        _conn().set_local_error(
            f"{call}: only device pools of pinned memory (location type 1, allocation type 1) "
            f"serve a remote client, not location type {loc_type}, allocation type {kind}: "
            "host memory of the server cannot be the client's"
        )
        return -1
    return dev


def cuMemGetDefaultMemPool(location: Any, typename: Any) -> tuple[Any, CUmemoryPool | None]:
    dev = _device_of("cuMemGetDefaultMemPool", location, typename)
    if dev is None or dev < 0:
        return (_INVALID_VALUE if dev is None else _NOT_SUPPORTED, None)
    return cuDeviceGetDefaultMemPool(dev)


def cuMemGetMemPool(location: Any, typename: Any) -> tuple[Any, CUmemoryPool | None]:
    dev = _device_of("cuMemGetMemPool", location, typename)
    if dev is None or dev < 0:
        return (_INVALID_VALUE if dev is None else _NOT_SUPPORTED, None)
    return cuDeviceGetMemPool(dev)


def cuMemSetMemPool(location: Any, typename: Any, pool: Any) -> tuple[Any]:
    dev = _device_of("cuMemSetMemPool", location, typename)
    if dev is None or dev < 0:
        return (_INVALID_VALUE if dev is None else _NOT_SUPPORTED,)
    return cuDeviceSetMemPool(dev, pool)


def _pool_device(pool: Any) -> tuple[Any, int | None]:
    err, dev = cuMemPoolGetAttribute(pool, 11)  # CU_MEMPOOL_ATTR_LOCATION_ID
    return err, (int(dev) if dev is not None else None)


def cuMemPoolGetAccess(memPool: Any, location: Any) -> tuple[Any, Any]:
    """The pool's own device has read/write access; no other location has any (peer access
    to pools is not remoted)."""
    from ._enums import CUmemAccess_flags

    err, dev = _pool_device(memPool)
    if err != _SUCCESS:
        return (err, None)
    try:
        mine = int(location.type) == _DEVICE_LOCATION and int(location.id) == dev
    except (AttributeError, TypeError, ValueError):
        return _local_error("cuMemPoolGetAccess: location is not a location", 1)
    return (_SUCCESS, CUmemAccess_flags(_PROT_READWRITE if mine else _PROT_NONE))


def cuMemPoolSetAccess(pool: Any, map: Any, count: int) -> tuple[Any]:
    """Read/write access of the pool's own device (what it has) succeeds; access for any
    other location is peer access, which pools of a remote client do not have."""
    count = size_t(count, "cuMemPoolSetAccess: count")
    err, dev = _pool_device(pool)
    if err != _SUCCESS:
        return (err,)
    for desc in list(map or [])[:count]:
        try:
            loc_type, loc_id, flags = int(desc.location.type), int(desc.location.id), int(desc.flags)
        except (AttributeError, TypeError, ValueError):
            return _local_error("cuMemPoolSetAccess: a descriptor is not a CUmemAccessDesc", 0)
        if loc_type != _DEVICE_LOCATION or loc_id != dev or flags != _PROT_READWRITE:
            _conn().set_local_error(
                f"cuMemPoolSetAccess: access {flags} for location type {loc_type} id {loc_id}: "
                f"only device {dev}'s read/write access to its own pool is available remotely "
                "(peer access to pools is not remoted)"
            )
            return (_NOT_SUPPORTED,)
    return (_SUCCESS,)
