"""Device resources and green contexts of `cuda.bindings.driver`, remote.

Resources are values the server issued (`CUdevResource` carries the id it gave); a split is
one call. A resource descriptor (cuDevResourceGenerateDesc) is kept on the client and its
resources travel with cuGreenCtxCreate, which checks them. A green context is a server
handle; cuCtxFromGreenCtx gives its context, which the context calls take like any other.
"""

from __future__ import annotations

from typing import Any

from ._args import c_int, uint
from ._enums import CUdevResourceType, CUresult
from ._types import CUcontext, CUstream, as_int
from .connection import Connection, get_connection
from .errors import to_result
from .resource_types import (
    CUdevResource,
    CUdevResourceDesc,
    CUgreenCtx,
    descriptor_resources,
    new_descriptor,
)

__all__ = [
    "cuDeviceGetDevResource",
    "cuDevSmResourceSplitByCount",
    "cuDevResourceGenerateDesc",
    "cuGreenCtxCreate",
    "cuGreenCtxDestroy",
    "cuGreenCtxGetDevResource",
    "cuCtxFromGreenCtx",
    "cuCtxGetDevResource",
    "cuGreenCtxRecordEvent",
    "cuGreenCtxWaitEvent",
    "cuGreenCtxStreamCreate",
    "cuStreamGetGreenCtx",
]

_SUCCESS = CUresult.CUDA_SUCCESS
_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE
MAX_RESOURCES = 1024  # resources one call carries (cricket.x MAX_DEV_RESOURCES)


def _out(err: int, *values: Any) -> tuple[Any, ...]:
    if err:
        return (to_result(err),) + (None,) * len(values)
    return (_SUCCESS, *values)


def _fail(conn: Connection, message: str, outputs: int) -> tuple[Any, ...]:
    conn.set_local_error(message)
    return (_INVALID_VALUE,) + (None,) * outputs


def from_wire(w: Any, make: type = CUdevResource, kind: Any = CUdevResourceType) -> Any:
    """A resource struct of the server's answer."""
    r = make(type=kind(w.type), _resource_id=w.id)
    sm = r.sm
    sm.smCount, sm.minSmPartitionSize, sm.smCoscheduledAlignment = (
        w.sm_count, w.min_partition, w.alignment,
    )  # fmt: skip
    sm.flags = w.flags
    return r


def to_wire(r: Any) -> Any:
    from rpc_spec import cricket_rpc as proto

    sm = r.sm
    return proto.dev_resource(
        id=int(getattr(r, "_resource_id", 0)), type=int(r.type), sm_count=int(sm.smCount),
        min_partition=int(sm.minSmPartitionSize), alignment=int(sm.smCoscheduledAlignment),
        flags=int(sm.flags),
    )  # fmt: skip


def resource_call(proc: str, *args: Any, make: type = CUdevResource, kind: Any = CUdevResourceType) -> tuple[int, Any]:
    err, r = get_connection().sync(proc, *args)
    return (err, None) if err else (0, from_wire(r.value, make, kind))


def split(
    nbGroups: int, input_: Any, flags: int, minCount: int, make: type, kind: Any
) -> tuple[int, Any, Any, Any]:
    """(CUresult, groups, count, remainder) of cuDevSmResourceSplitByCount."""
    call = "cuDevSmResourceSplitByCount"
    conn = get_connection()
    if input_ is None:
        conn.set_local_error(f"{call}: input_ is None")
        return int(_INVALID_VALUE), None, None, None
    wanted = uint(nbGroups, f"{call}: nbGroups")
    err, r = conn.sync(
        "CU_DEV_SM_RESOURCE_SPLIT_BY_COUNT", wanted, to_wire(input_),
        uint(flags, f"{call}: flags"), uint(minCount, f"{call}: minCount"),
    )  # fmt: skip
    if err:
        return err, None, None, None
    v = r.value
    return (0, [from_wire(g, make, kind) for g in v.groups], v.count,
            from_wire(v.remainder, make, kind))  # fmt: skip


def cuDeviceGetDevResource(device: Any, typename: Any) -> tuple[Any, Any]:
    return _out(*resource_call("CU_DEVICE_GET_DEV_RESOURCE", as_int(device), int(typename)))


def cuDevSmResourceSplitByCount(
    nbGroups: int, input_: Any, flags: int, minCount: int
) -> tuple[Any, Any, Any, Any]:
    err, groups, count, remainder = split(
        nbGroups, input_, flags, minCount, CUdevResource, CUdevResourceType
    )
    return _out(err, groups, count, remainder)


def generate_desc(call: str, resources: Any, nbResources: int) -> tuple[int, int]:
    conn = get_connection()
    items = list(resources or [])
    n = uint(nbResources, f"{call}: nbResources")
    if not 0 < n <= min(len(items), MAX_RESOURCES):
        conn.set_local_error(
            f"{call}: nbResources {n} for {len(items)} resources (1 to {MAX_RESOURCES})"
        )
        return int(_INVALID_VALUE), 0
    return 0, new_descriptor(items[:n])


def cuDevResourceGenerateDesc(resources: Any, nbResources: int) -> tuple[Any, Any]:
    err, value = generate_desc("cuDevResourceGenerateDesc", resources, nbResources)
    return _out(err, CUdevResourceDesc(value))


def cuGreenCtxCreate(desc: Any, dev: Any, flags: int) -> tuple[Any, CUgreenCtx | None]:
    call = "cuGreenCtxCreate"
    conn = get_connection()
    resources = descriptor_resources(as_int(desc))
    if resources is None:
        return _fail(conn, f"{call}: {desc!r} is not a descriptor of cuDevResourceGenerateDesc", 1)
    err, r = conn.sync(
        "CU_GREEN_CTX_CREATE", [to_wire(x) for x in resources], as_int(dev),
        uint(flags, f"{call}: flags"),
    )  # fmt: skip
    return _out(err, None if err else CUgreenCtx(r.value))


def cuGreenCtxDestroy(hCtx: Any) -> tuple[Any]:
    err, _ = get_connection().sync("CU_GREEN_CTX_DESTROY", as_int(hCtx))
    return _out(err)


def cuGreenCtxGetDevResource(hCtx: Any, typename: Any) -> tuple[Any, Any]:
    return _out(*resource_call("CU_GREEN_CTX_GET_DEV_RESOURCE", as_int(hCtx), int(typename)))


def cuCtxFromGreenCtx(hCtx: Any) -> tuple[Any, CUcontext | None]:
    err, r = get_connection().sync("CU_CTX_FROM_GREEN_CTX", as_int(hCtx))
    return _out(err, None if err else CUcontext(r.value))


def cuCtxGetDevResource(hCtx: Any, typename: Any) -> tuple[Any, Any]:
    return _out(*resource_call("CU_CTX_GET_DEV_RESOURCE", as_int(hCtx), int(typename)))


def cuGreenCtxRecordEvent(hCtx: Any, hEvent: Any) -> tuple[Any]:
    err, _ = get_connection().sync("CU_GREEN_CTX_EVENT", as_int(hCtx), as_int(hEvent), False)
    return _out(err)


def cuGreenCtxWaitEvent(hCtx: Any, hEvent: Any) -> tuple[Any]:
    err, _ = get_connection().sync("CU_GREEN_CTX_EVENT", as_int(hCtx), as_int(hEvent), True)
    return _out(err)


def cuGreenCtxStreamCreate(greenCtx: Any, flags: int, priority: int) -> tuple[Any, CUstream | None]:
    call = "cuGreenCtxStreamCreate"
    err, r = get_connection().sync(
        "CU_GREEN_CTX_STREAM_CREATE", as_int(greenCtx), uint(flags, f"{call}: flags"),
        c_int(priority, f"{call}: priority"),
    )  # fmt: skip
    return _out(err, None if err else CUstream(r.value))


def cuStreamGetGreenCtx(hStream: Any) -> tuple[Any, CUgreenCtx | None]:
    from .driver_arrays import wire_stream

    err, r = get_connection().sync("CU_STREAM_GET_GREEN_CTX", wire_stream(hStream))
    return _out(err, None if err else CUgreenCtx(r.value))
