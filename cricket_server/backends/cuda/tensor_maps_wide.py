"""Wide im2col tensor maps and tensor-map allocation classes on the cuda backend
(cuTensorMapEncodeIm2colWide, CUDA 12.8; cuTensorMapSetAllocationClass, CUDA 13.5): a server
whose cuda-python or driver lacks one answers CUDA_ERROR_NOT_SUPPORTED naming it."""

from __future__ import annotations

import struct
from typing import Any

from ._driver import call, driver, enum_value
from .sm_groups import missing

__all__ = ["CudaTensorMapsWide"]


def _map_bytes(made: Any) -> bytes:
    return struct.pack("<16Q", *(int(v) for v in made.opaque))


def _driver_fn(name: str) -> Any:
    fn = getattr(driver, name, None)
    if fn is None:
        raise missing(name)
    return fn


def _called(fn: Any, name: str, *args: Any) -> Any:
    try:
        return call(fn, *args)
    except RuntimeError as exc:  # the bindings have it, the driver does not
        raise missing(name) from exc


class CudaTensorMapsWide:
    """The wide-im2col and allocation-class methods of `CudaSession`."""

    _state: Any

    def tensor_map_encode_wide(self, request: Any) -> bytes:
        name = "cuTensorMapEncodeIm2colWide"
        fn = _driver_fn(name)
        self._state()
        r = request
        made = _called(
            fn, name,
            enum_value(driver.CUtensorMapDataType, r.data_type, name), r.rank, r.address,
            [driver.cuuint64_t(d) for d in r.global_dim],
            [driver.cuuint64_t(s) for s in r.global_strides],
            int(r.lower_corner[0]), int(r.upper_corner[0]), r.channels_per_pixel,
            r.pixels_per_column, [driver.cuuint32_t(e) for e in r.element_strides],
            enum_value(driver.CUtensorMapInterleave, r.interleave, name),
            enum_value(driver.CUtensorMapIm2ColWideMode, r.mode, name),
            enum_value(driver.CUtensorMapSwizzle, r.swizzle, name),
            enum_value(driver.CUtensorMapL2promotion, r.l2_promotion, name),
            enum_value(driver.CUtensorMapFloatOOBfill, r.oob_fill, name),
        )  # fmt: skip
        return _map_bytes(made)

    def tensor_map_set_alloc_class(self, tensor_map: bytes, alloc_class: int) -> tuple[bytes, int]:
        name = "cuTensorMapSetAllocationClass"
        fn = _driver_fn(name)
        kind = getattr(driver, "CUtensorMapAllocClass", None)
        if kind is None:
            raise missing(name)
        self._state()
        made = driver.CUtensorMap()
        made.opaque = [driver.cuuint64_t(v) for v in struct.unpack("<16Q", tensor_map)]
        effect = _called(fn, name, made, enum_value(kind, alloc_class, name))
        return _map_bytes(made), int(effect)
