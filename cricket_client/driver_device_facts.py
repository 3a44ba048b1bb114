"""Device facts, array planes, pointer attributes and library modules of
`cuda.bindings.driver`, remote (re-exported by `cricket_client.driver`).

The server's driver answers (LUIDs: CUDA_ERROR_NOT_SUPPORTED on Linux, as locally), except
where a remote client could not use what it promises: atomics with the client's host have no
capabilities, and contexts limited to some SMs read as unsupported (cuCtxCreate's
execAffinityParams are refused here). cuPointerSetAttribute sets
CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on memory of this session; a copy into memory with it set
is never returned early (`early_copies`). cuMemGetLocationInfo is for managed and pageable
memory, which a remote client cannot share: CUDA_ERROR_NOT_SUPPORTED, as locally on devices
without concurrent managed access (the attribute reads 0 remotely).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ._args import size_t, uint
from ._driver_base import _conn, _fail, _handle, _out
from ._enums import (
    CUatomicOperation,
    CUcliqueType,
    CUexecAffinityType,
    CUpointer_attribute,
    CUresult,
)
from ._types import as_int
from .array_types import CUarray
from .plain_types import CUexecAffinityParam, ValueStruct
from .standins import stand_in

__all__ = [
    "CUcliqueInfo",
    "CUcliqueInfo_st",
    "cuArrayGetPlane",
    "cuCtxGetExecAffinity",
    "cuDeviceGetCliqueInfo",
    "cuDeviceGetHostAtomicCapabilities",
    "cuDeviceGetLuid",
    "cuDeviceGetP2PAtomicCapabilities",
    "cuMemGetLocationInfo",
    "cuPointerSetAttribute",
]

_NOT_SUPPORTED = CUresult.CUDA_ERROR_NOT_SUPPORTED
MAX_OPERATIONS = 64  # operations one call carries (cricket.x MAX_ATTRS)
_SYNC_MEMOPS = int(CUpointer_attribute.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
LOCATION_WHY = (
    "cuMemGetLocationInfo: the residency of managed or pageable memory is not available "
    "remotely: no memory is shared between this program's host and the GPU across the network "
    "(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS reads 0); device memory is always on its device"
)


class CUcliqueInfo_st(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"type": CUcliqueType.CU_CLIQUE_TYPE_UNICAST_POINTER, "id": 0}


CUcliqueInfo = CUcliqueInfo_st


def atomic_operations(call: str, operations: Any, count: Any, kind: type) -> list[int]:
    """The first `count` operations as integers, checked as cuda-python checks them
    (TypeError for another type, RuntimeError for a list shorter than `count`)."""
    if operations is None:
        operations = []
    if not isinstance(operations, (list, tuple)) or not all(
        isinstance(op, kind) for op in operations
    ):
        raise TypeError(
            f"Argument 'operations' is not instance of type (expected tuple[{kind.__name__}] "
            f"or list[{kind.__name__}]"
        )
    n = uint(count, f"{call}: count")
    if n > len(operations):
        raise RuntimeError(f"List is too small: {len(operations)} < {n}")
    return [int(op) for op in operations[:n]]


def _caps(proc: str, ops: list[int], *devices: int) -> tuple[int, list[int] | None]:
    """The capabilities of each operation, asked MAX_OPERATIONS at a time."""
    caps: list[int] = []
    for i in range(0, max(len(ops), 1), MAX_OPERATIONS):
        err, r = _conn().sync(proc, ops[i : i + MAX_OPERATIONS], *devices)
        if err:
            return err, None
        caps += [int(c) for c in r.value]
    return 0, caps


def cuDeviceGetLuid(dev: Any) -> tuple[Any, bytes | None, int | None]:
    err, r = _conn().sync("CU_DEVICE_GET_LUID", as_int(dev))
    if err:
        return _out(err, None, None)
    return _out(0, bytes(r.value.luid), int(r.value.node_mask))


def cuDeviceGetHostAtomicCapabilities(
    operations: Sequence[Any] | None, count: int, dev: Any
) -> tuple[Any, list[int] | None]:
    call = "cuDeviceGetHostAtomicCapabilities"
    ops = atomic_operations(call, operations, count, CUatomicOperation)
    return _out(*_caps("CU_DEVICE_GET_HOST_ATOMIC_CAPABILITIES", ops, as_int(dev)))


def cuDeviceGetP2PAtomicCapabilities(
    operations: Sequence[Any] | None, count: int, srcDevice: Any, dstDevice: Any
) -> tuple[Any, list[int] | None]:
    call = "cuDeviceGetP2PAtomicCapabilities"
    ops = atomic_operations(call, operations, count, CUatomicOperation)
    return _out(*_caps(
        "CU_DEVICE_GET_P2P_ATOMIC_CAPABILITIES", ops, as_int(srcDevice), as_int(dstDevice)
    ))  # fmt: skip


def cuCtxGetExecAffinity(typename: Any) -> tuple[Any, Any]:
    err, sm_count = _conn().call("CU_CTX_GET_EXEC_AFFINITY", int(typename))
    if err:
        return _out(err, None)
    param: Any = CUexecAffinityParam()
    param.type = CUexecAffinityType(int(typename))
    param.param.smCount.val = sm_count
    return _out(0, param)


def cuDeviceGetCliqueInfo(count: int, dev: Any) -> tuple[Any, list[Any] | None, int | None]:
    n = size_t(count, "cuDeviceGetCliqueInfo: count")
    err, r = _conn().sync("CU_DEVICE_GET_CLIQUE_INFO", min(n, 0xFFFFFFFF), as_int(dev))
    if err:
        return _out(err, None, None)
    cliques = []
    for c in r.value:
        info = CUcliqueInfo()
        info.type, info.id = CUcliqueType(c.type), c.id
        cliques.append(info)
    return _out(0, cliques, len(cliques))


def cuArrayGetPlane(hArray: Any, planeIdx: int) -> tuple[Any, CUarray | None]:
    plane = uint(planeIdx, "cuArrayGetPlane: planeIdx")
    err, h = _conn().call("CU_ARRAY_GET_PLANE", _handle(hArray, "hArray"), plane)
    return _out(err, None if err else CUarray(h))


def cuPointerSetAttribute(value: Any, attribute: Any, ptr: Any) -> tuple[Any]:
    """`value`: the attribute's value (SYNC_MEMOPS: 0 or 1, a bool, or a ctypes integer)."""
    conn = _conn()
    number = int(getattr(value, "value", value))
    err = conn.call(
        "CU_POINTER_SET_ATTRIBUTE", int(attribute), _handle(ptr, "ptr"), number & 0xFFFFFFFF
    )[0]
    if not err and int(attribute) == _SYNC_MEMOPS and number:
        conn.known.allocations.forget_containing(as_int(ptr))  # copies into it wait
    return _out(err)


@stand_in("unshareable")
def cuMemGetLocationInfo(
    ptr: Any, size: int, summaryGranularity: int, samplingGranularity: int, location_out: Any
) -> tuple[Any]:
    call = "cuMemGetLocationInfo"
    for v, what in ((size, "size"), (summaryGranularity, "summaryGranularity"),
                    (samplingGranularity, "samplingGranularity")):  # fmt: skip
        size_t(v, f"{call}: {what}")
    _handle(ptr, "ptr")
    return _fail(_conn(), _NOT_SUPPORTED, LOCATION_WHY, 0)  # type: ignore[return-value]
