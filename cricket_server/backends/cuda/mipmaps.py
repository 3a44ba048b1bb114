"""Mipmapped and sparse arrays on the cuda backend (cuda-python 13).

A mipmapped array is the driver's CUmipmappedArray; its levels are the CUarrays
cuMipmappedArrayGetLevel gives, which 3D copies and texture objects take like any array (the
driver frees them with the mipmapped array). Sparse properties and memory requirements are
the driver's answers. What is left at close is destroyed after the texture objects.
"""

from __future__ import annotations

from typing import Any

from ..arrays import ArrayDesc
from ..base import CudaError
from ..mipmaps import SparseProps
from ._driver import call, driver
from .arrays import array3d_descriptor

__all__ = ["CudaMipmaps"]


def _props(p: Any) -> SparseProps:
    return SparseProps(
        int(p.tileExtent.width), int(p.tileExtent.height), int(p.tileExtent.depth),
        int(p.miptailFirstLevel), int(p.miptailSize), int(p.flags),
    )  # fmt: skip


class CudaMipmaps:
    """The mipmapped-array methods of `CudaSession`."""

    _state: Any
    _dev: int

    def _mipmaps(self) -> dict[int, tuple[int, Any]]:
        """int(mipmap) -> (device, CUmipmappedArray) of those left."""
        made = self.__dict__.get("_mipmap_objects")
        if made is None:
            made = self.__dict__["_mipmap_objects"] = {}
        return made

    def mipmap_create(self, desc: ArrayDesc, levels: int) -> tuple[object, list[object]]:
        self._state()
        mipmap = call(driver.cuMipmappedArrayCreate, array3d_descriptor(desc), levels)
        self._mipmaps()[int(mipmap)] = (self._dev, mipmap)
        try:
            arrays = [call(driver.cuMipmappedArrayGetLevel, mipmap, lv) for lv in range(levels)]
        except CudaError:
            self.mipmap_destroy(mipmap)
            raise
        return mipmap, arrays

    def mipmap_destroy(self, mipmap: object) -> None:
        dev, _ = self._mipmaps().get(int(mipmap), (self._dev, mipmap))  # type: ignore[call-overload]
        self._state(dev)
        try:
            call(driver.cuMipmappedArrayDestroy, mipmap)
        finally:
            self._mipmaps().pop(int(mipmap), None)  # type: ignore[call-overload]
            self._state()

    def sparse_properties(self, obj: object, mipmap: bool) -> SparseProps:
        self._state()
        fn = driver.cuMipmappedArrayGetSparseProperties if mipmap else driver.cuArrayGetSparseProperties
        return _props(call(fn, obj))

    def memory_requirements(self, obj: object, mipmap: bool, dev: int) -> tuple[int, int]:
        self._state()
        fn = (
            driver.cuMipmappedArrayGetMemoryRequirements
            if mipmap
            else driver.cuArrayGetMemoryRequirements
        )
        r = call(fn, obj, driver.CUdevice(dev))
        return int(r.size), int(r.alignment)

    def release_mipmaps(self) -> list[CudaError]:
        """Destroy every mipmapped array left (close, after the texture objects)."""
        errors: list[CudaError] = []
        for dev, mipmap in list(self._mipmaps().values()):
            try:
                self._state(dev)
                call(driver.cuMipmappedArrayDestroy, mipmap)
            except CudaError as exc:
                errors.append(exc)
        self._mipmaps().clear()
        return errors
