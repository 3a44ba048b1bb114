"""Types of cuda.bindings.driver/runtime for virtual memory management and memory pools:
handles (CUmemGenericAllocationHandle, CUmemoryPool, cudaMemPool_t, cuuint64_t) and the
structs a program fills (CUmemAllocationProp, CUmemAccessDesc, CUmemPoolProps, ...), with
cuda-python's field names and zero defaults. Only the fields that travel are used; the
Windows-only ones exist so that programs setting them run."""

from __future__ import annotations

from typing import Any

from ._types import Handle

__all__ = [
    "CUmemAccessDesc",
    "CUmemAllocationProp",
    "CUmemGenericAllocationHandle",
    "CUmemLocation",
    "CUmemPoolProps",
    "CUmemoryPool",
    "cudaMemAccessDesc",
    "cudaMemLocation",
    "cudaMemPoolProps",
    "cudaMemPool_t",
    "cuuint64_t",
]


class CUmemGenericAllocationHandle(Handle):
    """A physical allocation (cuMemCreate): a server-issued handle."""

    __slots__ = ()


class CUmemoryPool(Handle):
    """A memory pool: a server-issued handle."""

    __slots__ = ()


class cudaMemPool_t(CUmemoryPool):
    __slots__ = ()


class cuuint64_t(Handle):
    """An unsigned 64-bit value (pool attributes)."""

    _hex = False
    __slots__ = ()


class _Struct:
    """Fields with defaults; repr lists them as cuda-python's structs do."""

    _fields: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:  # typing: the fields are set in __init__
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def __init__(self, **values: Any) -> None:
        for name in self._fields:
            setattr(self, name, values.pop(name, self._default(name)))
        if values:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(values)}")

    def _default(self, name: str) -> Any:
        return 0

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"

    def getPtr(self) -> int:
        raise NotImplementedError(
            f"{type(self).__name__}.getPtr: the struct lives on the server; pass the object"
        )


class CUmemLocation(_Struct):
    _fields = ("type", "id")


class cudaMemLocation(CUmemLocation):
    pass


class CUmemAllocationFlags(_Struct):
    _fields = ("compressionType", "gpuDirectRDMACapable", "usage")


class CUmemAllocationProp(_Struct):
    _fields = ("type", "requestedHandleTypes", "location", "win32HandleMetaData", "allocFlags")

    def _default(self, name: str) -> Any:
        if name == "location":
            return CUmemLocation()
        if name == "allocFlags":
            return CUmemAllocationFlags()
        return 0


class CUmemAccessDesc(_Struct):
    _fields = ("location", "flags")

    def _default(self, name: str) -> Any:
        return CUmemLocation() if name == "location" else 0


class cudaMemAccessDesc(CUmemAccessDesc):
    pass


class CUmemPoolProps(_Struct):
    _fields = (
        "allocType",
        "handleTypes",
        "location",
        "win32SecurityAttributes",
        "maxSize",
        "usage",
        "gpuDirectRDMACapable",
    )

    def _default(self, name: str) -> Any:
        return CUmemLocation() if name == "location" else 0


class cudaMemPoolProps(CUmemPoolProps):
    pass
