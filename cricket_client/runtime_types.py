"""Handle and struct types of cuda.bindings.runtime: cudaStream_t, dim3, cudaDeviceProp, ...

As in cuda-python, `cudaStream_t` is a `CUstream` and `cudaEvent_t` a `CUevent`, so either
module's functions take them. Structs are plain objects with cuda-python's field names, filled
field by field from what the server answered (never a raw C struct, D1); printing one lists
its fields as cuda-python's do.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._runtime_enums import cudaMemoryType, cudaSharedMemoryMode
from ._types import CUevent, CUstream, Handle, as_int

__all__ = [
    "cudaStream_t",
    "cudaEvent_t",
    "cudaLibrary_t",
    "cudaKernel_t",
    "cudaUUID_t",
    "dim3",
    "Struct",
    "cudaFuncAttributes",
    "cudaPointerAttributes",
    "as_dim3",
]


class cudaStream_t(CUstream):
    __slots__ = ()


class cudaEvent_t(CUevent):
    __slots__ = ()


class cudaLibrary_t(Handle):
    __slots__ = ()


class cudaKernel_t(Handle):
    __slots__ = ()


class cudaUUID_t:
    """A device UUID: 16 bytes in `.bytes`."""

    __slots__ = ("bytes",)

    def __init__(self, data: bytes = bytes(16)) -> None:
        if len(data) != 16:
            raise ValueError(f"cudaUUID_t: expected 16 bytes, got {len(data)}")
        self.bytes = bytes(data)

    def __repr__(self) -> str:
        return f"bytes : {self.bytes.hex()}"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, cudaUUID_t) and other.bytes == self.bytes

    def __hash__(self) -> int:
        return hash(self.bytes)


class Struct:
    """A struct of named fields, each with its default in FIELDS; printed field by field."""

    FIELDS: ClassVar[dict[str, Any]] = {}

    def __init__(self, **values: Any) -> None:
        for name, default in self.FIELDS.items():
            value = values.pop(name, default)
            setattr(self, name, list(value) if isinstance(value, list) else value)
        if values:
            raise TypeError(f"{type(self).__name__}: no fields {sorted(values)}")

    def __repr__(self) -> str:
        return "\n".join(f"{name} : {getattr(self, name)!r}" for name in self.FIELDS)

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]


class dim3(Struct):
    x: int
    y: int
    z: int
    FIELDS: ClassVar[dict[str, Any]] = {"x": 1, "y": 1, "z": 1}


def as_dim3(value: Any, what: str) -> tuple[int, int, int]:
    """A dim3, a sequence of up to three ints or one int, as (x, y, z)."""
    if isinstance(value, dim3):
        return int(value.x), int(value.y), int(value.z)
    if isinstance(value, int):
        return int(value), 1, 1
    try:
        items = [int(v) for v in value]
    except TypeError:
        raise TypeError(
            f"{what}: expected dim3, an int or up to three ints, got {type(value).__name__}"
        ) from None
    if not 1 <= len(items) <= 3:
        raise TypeError(f"{what}: expected one to three dimensions, got {len(items)}")
    return (items + [1, 1])[0], (items + [1, 1])[1], (items + [1, 1])[2]


class cudaFuncAttributes(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "sharedSizeBytes": 0,
        "constSizeBytes": 0,
        "localSizeBytes": 0,
        "maxThreadsPerBlock": 0,
        "numRegs": 0,
        "ptxVersion": 0,
        "binaryVersion": 0,
        "cacheModeCA": 0,
        "maxDynamicSharedSizeBytes": 0,
        "preferredShmemCarveout": 0,
        "clusterDimMustBeSet": 0,
        "requiredClusterWidth": 0,
        "requiredClusterHeight": 0,
        "requiredClusterDepth": 0,
        "clusterSchedulingPolicyPreference": 0,
        "nonPortableClusterSizeAllowed": 0,
        "deviceNodeUpdateStatus": 0,
        "sharedMemoryMode": cudaSharedMemoryMode.cudaSharedMemoryModeDefault,
    }


class cudaPointerAttributes(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "type": cudaMemoryType.cudaMemoryTypeUnregistered,
        "device": 0,
        "devicePointer": 0,
        "hostPointer": 0,
        "localityDomainOrdinal": 0,
    }


def handle_value(h: Any) -> int:
    """The integer value of any handle argument (runtime or driver type, int, None)."""
    return as_int(h)
