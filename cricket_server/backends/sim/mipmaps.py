"""Mipmapped and sparse arrays on the sim backend.

A mipmapped array is its levels, each a `SimArray` (host memory in the array layout), which
every copy takes like any array. Sparse arrays hold all their bytes (sim has no tiles to map);
their sparse properties and memory requirements follow the model of
`cricket_server.backends.mipmaps`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cricket_server.backends.arrays import ArrayDesc
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)
from cricket_server.backends.mipmaps import (
    ARRAY3D_DEFERRED_MAPPING,
    ARRAY3D_SPARSE,
    SparseProps,
    level_descs,
    memory_requirements,
    sparse_properties,
)

from .arrays import SimArray

__all__ = ["SimMipmap", "SimMipmaps"]


@dataclass
class SimMipmap:
    desc: ArrayDesc
    levels: list[SimArray]
    live: bool = True


def _shape(obj: object, mipmap: bool, call: str) -> tuple[ArrayDesc, int]:
    if mipmap and isinstance(obj, SimMipmap) and obj.live:
        return obj.desc, len(obj.levels)
    if not mipmap and isinstance(obj, SimArray) and obj.live:
        return obj.desc, 1
    raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {obj!r} is not live")


class SimMipmaps:
    """The mipmapped-array methods of `SimSession`."""

    def mipmap_create(self, desc: ArrayDesc, levels: int) -> tuple[object, list[object]]:
        arrays = [SimArray(d, bytearray(d.nbytes)) for d in level_descs(desc, levels)]
        return SimMipmap(desc, arrays), list(arrays)

    def mipmap_destroy(self, mipmap: object) -> None:
        if not isinstance(mipmap, SimMipmap) or not mipmap.live:
            raise CudaError(
                CUDA_ERROR_INVALID_HANDLE, f"cuMipmappedArrayDestroy: {mipmap!r} is not live"
            )
        mipmap.live = False
        for level in mipmap.levels:
            level.live = False

    def sparse_properties(self, obj: object, mipmap: bool) -> SparseProps:
        call = "cuMipmappedArrayGetSparseProperties" if mipmap else "cuArrayGetSparseProperties"
        desc, levels = _shape(obj, mipmap, call)
        if not desc.flags & ARRAY3D_SPARSE:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: not a sparse array")
        return sparse_properties(desc, levels)

    def memory_requirements(self, obj: object, mipmap: bool, dev: int) -> tuple[int, int]:
        call = (
            "cuMipmappedArrayGetMemoryRequirements" if mipmap else "cuArrayGetMemoryRequirements"
        )
        desc, levels = _shape(obj, mipmap, call)
        if not desc.flags & ARRAY3D_DEFERRED_MAPPING:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: only arrays made with CUDA_ARRAY3D_DEFERRED_MAPPING have requirements",
            )
        return memory_requirements(desc, levels)
