"""Hopper tensor maps (cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
cuTensorMapReplaceAddress): what a request holds, and the checks made before the server's
driver encodes it.

A tensor map is a 128-byte value the client keeps (kernels take it by value); it names a
device address of the session. The session checks that the whole tensor (the last byte its
dimensions and strides reach) lies in memory it owns, so a map cannot reach another session's
memory; the driver checks the rest (alignment, ranks, box sizes, swizzles). Sim has no tensor
memory accelerator for a map to describe: its backend refuses to encode one (the base default).
"""

from __future__ import annotations

from dataclasses import dataclass

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError

__all__ = ["TENSOR_MAP_BYTES", "TensorMapRequest", "element_bytes", "tensor_extent"]

TENSOR_MAP_BYTES = 128
TILED, IM2COL, IM2COL_WIDE = 0, 1, 2
# CUtensorMapDataType -> bytes of an element (the packed 4 and 6-bit types: 1 byte per element,
# as their ALIGN8B/16B layouts store them)
_ELEMENT_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4, 13: 1, 14: 1, 15: 1}


@dataclass(frozen=True)
class TensorMapRequest:
    """One cuTensorMapEncode* call's arguments (tensor_map_args of cricket.x)."""

    kind: int
    data_type: int
    rank: int
    address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dim: tuple[int, ...]
    lower_corner: tuple[int, ...]
    upper_corner: tuple[int, ...]
    channels_per_pixel: int
    pixels_per_column: int
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int
    mode: int = 0  # im2col wide: CUtensorMapIm2ColWideMode

    @property
    def call(self) -> str:
        if self.kind == IM2COL_WIDE:
            return "cuTensorMapEncodeIm2colWide"
        return "cuTensorMapEncodeIm2col" if self.kind == IM2COL else "cuTensorMapEncodeTiled"


def element_bytes(call: str, data_type: int) -> int:
    size = _ELEMENT_BYTES.get(data_type)
    if size is None:
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {data_type} is not a CUtensorMapDataType")
    return size


def tensor_extent(r: TensorMapRequest) -> int:
    """Bytes from the global address to the end of the tensor's last element; checks the
    lengths of the lists against the rank."""
    call = r.call
    if r.kind not in (TILED, IM2COL, IM2COL_WIDE):
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: unknown tensor map kind {r.kind}")
    if not 1 <= r.rank <= 5 or len(r.global_dim) != r.rank or len(r.global_strides) != r.rank - 1:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: tensorRank {r.rank} with {len(r.global_dim)} globalDim and "
            f"{len(r.global_strides)} globalStrides (rank 1 to 5, rank - 1 strides)",
        )
    if any(d == 0 for d in r.global_dim):
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: a globalDim is 0")
    extent = r.global_dim[0] * element_bytes(call, r.data_type)
    for dim, stride in zip(r.global_dim[1:], r.global_strides, strict=True):
        extent += (dim - 1) * stride
    return extent
