"""Mipmapped and sparse arrays of `cuda.bindings.driver`, remote.

A mipmapped array is a server handle; its levels are array handles the server issued with it,
so every array call and copy takes them. Sparse properties and memory requirements are the
server's answers (its driver's on the cuda backend).
"""

from __future__ import annotations

from typing import Any

from ._args import uint
from ._enums import CUresult
from ._types import as_int
from .array_types import CUarray
from .connection import Connection, get_connection
from .driver_arrays import ArrayInfo
from .errors import to_result
from .resource_types import (
    CUDA_ARRAY_MEMORY_REQUIREMENTS,
    CUDA_ARRAY_SPARSE_PROPERTIES,
    CUmipmappedArray,
)

__all__ = [
    "cuMipmappedArrayCreate",
    "cuMipmappedArrayDestroy",
    "cuMipmappedArrayGetLevel",
    "cuMipmappedArrayGetSparseProperties",
    "cuArrayGetSparseProperties",
    "cuMipmappedArrayGetMemoryRequirements",
    "cuArrayGetMemoryRequirements",
]

_SUCCESS = CUresult.CUDA_SUCCESS
_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE


def _out(err: int, *values: Any) -> tuple[Any, ...]:
    if err:
        return (to_result(err),) + (None,) * len(values)
    return (_SUCCESS, *values)


def mipmap_create(
    conn: Connection, w: int, h: int, d: int, fmt: int, ch: int, flags: int, levels: int
) -> tuple[int, int]:
    from rpc_spec import cricket_rpc as proto

    desc = proto.array_desc(width=w, height=h, depth=d, format=fmt, channels=ch, flags=flags)
    err, r = conn.sync("MIPMAP_CREATE", desc, levels)
    return (err, 0) if err else (0, r.value)


def mipmap_info(conn: Connection, handle: int) -> tuple[int, ArrayInfo | None, int]:
    """(CUresult, level 0's descriptor, levels) of a mipmapped array."""
    err, r = conn.sync("MIPMAP_GET_DESCRIPTOR", handle)
    if err:
        return err, None, 0
    v = r.value
    return 0, ArrayInfo(v.width, v.height, 0, v.format, v.channels, v.flags), v.depth


def sparse(conn: Connection, handle: int, mipmap: bool, make: type) -> tuple[int, Any]:
    proc = "MIPMAP_GET_SPARSE_PROPERTIES" if mipmap else "ARRAY_GET_SPARSE_PROPERTIES"
    err, r = conn.sync(proc, handle)
    if err:
        return err, None
    p = r.value
    out = make(miptailFirstLevel=p.miptail_first_level, miptailSize=p.miptail_size, flags=p.flags)
    out.tileExtent.width, out.tileExtent.height = p.tile_width, p.tile_height
    out.tileExtent.depth = p.tile_depth
    return 0, out


def requirements(
    conn: Connection, handle: int, mipmap: bool, dev: int, make: type
) -> tuple[int, Any]:
    proc = "MIPMAP_GET_MEMORY_REQUIREMENTS" if mipmap else "ARRAY_GET_MEMORY_REQUIREMENTS"
    err, r = conn.sync(proc, handle, dev)
    return (err, None) if err else (0, make(size=r.value.size, alignment=r.value.alignment))


def cuMipmappedArrayCreate(
    pMipmappedArrayDesc: Any, numMipmapLevels: int
) -> tuple[Any, CUmipmappedArray | None]:
    call = "cuMipmappedArrayCreate"
    conn = get_connection()
    d = pMipmappedArrayDesc
    if d is None:
        conn.set_local_error(f"{call}: pMipmappedArrayDesc is None")
        return _out(_INVALID_VALUE, None)
    err, h = mipmap_create(
        conn, int(d.Width), int(d.Height), int(d.Depth), int(d.Format),
        uint(d.NumChannels, f"{call}: NumChannels"), uint(d.Flags, f"{call}: Flags"),
        uint(numMipmapLevels, f"{call}: numMipmapLevels"),
    )  # fmt: skip
    return _out(err, CUmipmappedArray(h))


def cuMipmappedArrayDestroy(hMipmappedArray: Any) -> tuple[Any]:
    err, _ = get_connection().sync("MIPMAP_DESTROY", as_int(hMipmappedArray))
    return _out(err)


def cuMipmappedArrayGetLevel(hMipmappedArray: Any, level: int) -> tuple[Any, CUarray | None]:
    err, r = get_connection().sync(
        "MIPMAP_GET_LEVEL", as_int(hMipmappedArray), uint(level, "cuMipmappedArrayGetLevel: level")
    )
    return _out(err, None if err else CUarray(r.value))


def cuMipmappedArrayGetSparseProperties(mipmap: Any) -> tuple[Any, Any]:
    return _out(*sparse(get_connection(), as_int(mipmap), True, CUDA_ARRAY_SPARSE_PROPERTIES))


def cuArrayGetSparseProperties(array: Any) -> tuple[Any, Any]:
    return _out(*sparse(get_connection(), as_int(array), False, CUDA_ARRAY_SPARSE_PROPERTIES))


def cuMipmappedArrayGetMemoryRequirements(mipmap: Any, device: Any) -> tuple[Any, Any]:
    return _out(*requirements(
        get_connection(), as_int(mipmap), True, as_int(device), CUDA_ARRAY_MEMORY_REQUIREMENTS
    ))  # fmt: skip


def cuArrayGetMemoryRequirements(array: Any, device: Any) -> tuple[Any, Any]:
    return _out(*requirements(
        get_connection(), as_int(array), False, as_int(device), CUDA_ARRAY_MEMORY_REQUIREMENTS
    ))  # fmt: skip
