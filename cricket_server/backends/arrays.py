"""What backends take for arrays, 3D copies, texture and surface objects.

The session layer checks every place a copy touches (its pointers are the session's own, its
arrays live) and turns handles into backend objects before a backend sees these; a backend
only does the work (`BackendSession.array_create`, `.memcpy_3d`, `.tex_object_create`, ...).

Formats are CUarray_format values; only the plain integer and float formats are taken:

    | format               | value | bytes |   | format               | value | bytes |
    | UNSIGNED_INT8        | 0x01  | 1     |   | SIGNED_INT8          | 0x08  | 1     |
    | UNSIGNED_INT16       | 0x02  | 2     |   | SIGNED_INT16         | 0x09  | 2     |
    | UNSIGNED_INT32       | 0x03  | 4     |   | SIGNED_INT32         | 0x0a  | 4     |
    | HALF                 | 0x10  | 2     |   | FLOAT                | 0x20  | 4     |
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "FORMAT_BYTES",
    "PLACE_HOST",
    "PLACE_DEVICE",
    "PLACE_ARRAY",
    "ARRAY3D_LAYERED",
    "ARRAY3D_SURFACE_LDST",
    "ARRAY3D_CUBEMAP",
    "ArrayDesc",
    "Place",
    "Copy3D",
    "ResourceDesc",
    "TextureDesc",
    "ViewDesc",
]

FORMAT_BYTES = {0x01: 1, 0x02: 2, 0x03: 4, 0x08: 1, 0x09: 2, 0x0A: 4, 0x10: 2, 0x20: 4}

PLACE_HOST, PLACE_DEVICE, PLACE_ARRAY = 1, 2, 3  # CUmemorytype
ARRAY3D_LAYERED = 0x01
ARRAY3D_SURFACE_LDST = 0x02
ARRAY3D_CUBEMAP = 0x04

RESOURCE_ARRAY, RESOURCE_MIPMAPPED_ARRAY, RESOURCE_LINEAR, RESOURCE_PITCH2D = 0, 1, 2, 3


@dataclass(frozen=True)
class ArrayDesc:
    """cuArray3DCreate's descriptor: sizes in elements, 0 for a missing dimension."""

    width: int
    height: int
    depth: int
    format: int
    channels: int
    flags: int

    @property
    def element_size(self) -> int:
        return FORMAT_BYTES[self.format] * self.channels

    @property
    def row_bytes(self) -> int:
        return self.width * self.element_size

    @property
    def rows(self) -> int:
        return max(self.height, 1)

    @property
    def slices(self) -> int:
        return max(self.depth, 1)

    @property
    def nbytes(self) -> int:
        return self.row_bytes * self.rows * self.slices


@dataclass
class Place:
    """One side of a 3D copy (CUDA_MEMCPY3D): host bytes packed row after row (`host`),
    device memory at `ptr` with `pitch` bytes a row and `height` rows a slice, or an array.
    x is in bytes, y in rows, z in slices."""

    kind: int
    ptr: int = 0
    array: object = None
    desc: ArrayDesc | None = None  # the array's
    pitch: int = 0
    height: int = 0
    x: int = 0
    y: int = 0
    z: int = 0
    host: memoryview | None = None  # the source's bytes (host to device or array)


@dataclass
class Copy3D:
    src: Place
    dst: Place
    width: int  # bytes
    height: int
    depth: int


@dataclass(frozen=True)
class ResourceDesc:
    """CUDA_RESOURCE_DESC: an array, linear memory or pitched 2D memory."""

    res_type: int
    array: object = None
    ptr: int = 0
    format: int = 0
    channels: int = 0
    size: int = 0
    width: int = 0
    height: int = 0
    pitch: int = 0
    flags: int = 0


@dataclass(frozen=True)
class TextureDesc:
    """CUDA_TEXTURE_DESC (flags: CU_TRSF_*)."""

    address_mode: tuple[int, int, int] = (0, 0, 0)
    filter_mode: int = 0
    flags: int = 0
    max_anisotropy: int = 0
    mipmap_filter_mode: int = 0
    mipmap_level_bias: float = 0.0
    min_mipmap_level_clamp: float = 0.0
    max_mipmap_level_clamp: float = 0.0
    border_color: tuple[float, float, float, float] = field(default=(0.0, 0.0, 0.0, 0.0))


@dataclass(frozen=True)
class ViewDesc:
    """CUDA_RESOURCE_VIEW_DESC."""

    format: int = 0
    width: int = 0
    height: int = 0
    depth: int = 0
    first_mipmap_level: int = 0
    last_mipmap_level: int = 0
    first_layer: int = 0
    last_layer: int = 0
