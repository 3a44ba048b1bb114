"""Types of mipmapped and sparse arrays, device resources and green contexts, as
cuda.bindings has them.

Driver: CUmipmappedArray, CUDA_ARRAY_SPARSE_PROPERTIES, CUDA_ARRAY_MEMORY_REQUIREMENTS,
CUdevResource (with its `sm` CUdevSmResource), CUdevResourceDesc, CUgreenCtx. Runtime:
cudaMipmappedArray_t, cudaArraySparseProperties, cudaArrayMemoryRequirements, cudaDevResource,
cudaDevResourceDesc_t. A resource carries, besides the fields a program reads, the id the
server gave it (`_resource_id`; 0 for one the program built itself, which the server refuses).
A resource descriptor (cuDevResourceGenerateDesc) lives on the client: the resources it was
made of travel with cuGreenCtxCreate.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

from ._enums import CUdevResourceType
from ._runtime_enums import cudaDevResourceType
from ._types import Handle
from .plain_types import ValueStruct, copy_value

__all__ = [
    "CUmipmappedArray",
    "cudaMipmappedArray_t",
    "CUgreenCtx",
    "CUdevResourceDesc",
    "cudaDevResourceDesc_t",
    "CUDA_ARRAY_SPARSE_PROPERTIES",
    "cudaArraySparseProperties",
    "CUDA_ARRAY_MEMORY_REQUIREMENTS",
    "cudaArrayMemoryRequirements",
    "CUdevSmResource",
    "cudaDevSmResource",
    "CUdevResource",
    "cudaDevResource",
    "descriptor_resources",
    "new_descriptor",
]


class CUmipmappedArray(Handle):
    __slots__ = ()


class cudaMipmappedArray_t(Handle):
    __slots__ = ()


class CUgreenCtx(Handle):
    __slots__ = ()


class CUdevResourceDesc(Handle):
    __slots__ = ()


class cudaDevResourceDesc_t(Handle):
    __slots__ = ()


class _TileExtent(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"width": 0, "height": 0, "depth": 0}


class CUDA_ARRAY_SPARSE_PROPERTIES(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "tileExtent": _TileExtent, "miptailFirstLevel": 0, "miptailSize": 0, "flags": 0,
    }  # fmt: skip


class cudaArraySparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES):
    pass


class CUDA_ARRAY_MEMORY_REQUIREMENTS(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"size": 0, "alignment": 0}


class cudaArrayMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS):
    pass


class CUdevSmResource(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "smCount": 0, "minSmPartitionSize": 0, "smCoscheduledAlignment": 0, "flags": 0,
        "localityDomainId": 0,
    }  # fmt: skip


class cudaDevSmResource(CUdevSmResource):
    pass


class CUdevResource(ValueStruct):
    """A device resource; `_resource_id` names the server's (copied with the struct)."""

    FIELDS: ClassVar[dict[str, Any]] = {
        "type": CUdevResourceType.CU_DEV_RESOURCE_TYPE_INVALID,
        "sm": CUdevSmResource,
        "_resource_id": 0,
    }

    def __repr__(self) -> str:
        return "\n".join(line for line in super().__repr__().splitlines() if "_resource_id" not in line)

    __str__ = __repr__


class cudaDevResource(CUdevResource):
    FIELDS: ClassVar[dict[str, Any]] = {
        "type": cudaDevResourceType.cudaDevResourceTypeInvalid,
        "sm": cudaDevSmResource,
        "_resource_id": 0,
    }


_descriptors: dict[int, list[Any]] = {}
_ids = itertools.count(1)


def new_descriptor(resources: list[Any]) -> int:
    """A descriptor value standing for copies of these resources (kept for the process)."""
    value = next(_ids)
    _descriptors[value] = [copy_value(r) for r in resources]
    return value


def descriptor_resources(value: int) -> list[Any] | None:
    return _descriptors.get(value)
