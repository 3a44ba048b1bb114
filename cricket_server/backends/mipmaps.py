"""What backends take and give for mipmapped and sparse arrays, and the model `sim` answers
sparse queries with.

A mipmapped array has `levels` levels; level l of a W x H x D array is max(1, W >> l) x
max(1, H >> l) x max(1, D >> l), a dimension that is 0 staying 0 and the layers of a layered
array staying as they are (cuMipmappedArrayCreate). Each level is an array of its own.

Sparse arrays (CUDA_ARRAY3D_SPARSE) are made of 64 KiB tiles. CUDA does not document the tile
shapes; NVIDIA hardware uses the standard sparse block shapes of 64 KiB that Vulkan's
specification tabulates ("Standard Sparse Image Block Shapes", the same shapes as Direct3D 12's
standard tiled resources), by element size:

    | element bytes | 2D (and layered) tile | 3D tile    |
    | 1             | 256 x 256             | 64 x 32 x 32 |
    | 2             | 256 x 128             | 32 x 32 x 32 |
    | 4             | 128 x 128             | 32 x 32 x 16 |
    | 8             | 128 x 64              | 32 x 16 x 16 |
    | 16            | 64 x 64               | 16 x 16 x 16 |

The mip tail starts at the first level that does not hold a whole tile in some dimension (its
width, height or, in 3D, depth is smaller than the tile's), and its size is the bytes of the
levels from there on, rounded up to whole tiles (per layer; flags 0). On the H200 a float4
sparse 1000 x 500 array of 10 levels answers tile 64 x 64 x 1, mip tail from level 3 of
196608 bytes, which this rule gives (tests/unit/test_mipmap_rules.py).

Sparse and deferred-mapping arrays have no memory of their own until tiles or memory are
mapped to them (cuMemMapArrayAsync, cuArrayMapping... are not remoted), so a checkpoint keeps
no contents for them (`unbacked`).

Memory requirements (cuArrayGetMemoryRequirements) under the same model: every level's bytes
rounded up to whole tiles, aligned to a tile.
"""

from __future__ import annotations

from dataclasses import dataclass

from .arrays import ARRAY3D_LAYERED, ArrayDesc

__all__ = [
    "ARRAY3D_SPARSE",
    "ARRAY3D_DEFERRED_MAPPING",
    "TILE_BYTES",
    "SparseProps",
    "level_descs",
    "max_levels",
    "sparse_properties",
    "memory_requirements",
    "unbacked",
]

ARRAY3D_SPARSE = 0x40
ARRAY3D_DEFERRED_MAPPING = 0x80
TILE_BYTES = 64 << 10
_TILES_2D = {1: (256, 256), 2: (256, 128), 4: (128, 128), 8: (128, 64), 16: (64, 64)}
_TILES_3D = {1: (64, 32, 32), 2: (32, 32, 32), 4: (32, 32, 16), 8: (32, 16, 16), 16: (16, 16, 16)}


@dataclass(frozen=True)
class SparseProps:
    """CUDA_ARRAY_SPARSE_PROPERTIES."""

    tile_width: int
    tile_height: int
    tile_depth: int
    miptail_first_level: int
    miptail_size: int
    flags: int = 0


def _is_3d(desc: ArrayDesc) -> bool:
    return bool(desc.depth) and not desc.flags & ARRAY3D_LAYERED


def max_levels(desc: ArrayDesc) -> int:
    """The most levels an array of this extent can have: 1 + floor(log2(largest dimension))."""
    dims = [desc.width, desc.height] + ([desc.depth] if _is_3d(desc) else [])
    return max(dims).bit_length()


def level_descs(desc: ArrayDesc, levels: int) -> list[ArrayDesc]:
    """The descriptor of every level (level 0 is `desc`)."""
    three_d = _is_3d(desc)
    out = []
    for lv in range(levels):
        out.append(ArrayDesc(
            max(1, desc.width >> lv),
            max(1, desc.height >> lv) if desc.height else 0,
            (max(1, desc.depth >> lv) if three_d else desc.depth) if desc.depth else 0,
            desc.format, desc.channels, desc.flags,
        ))  # fmt: skip
    return out


def _tile(desc: ArrayDesc) -> tuple[int, int, int]:
    size = desc.element_size
    if _is_3d(desc):
        return _TILES_3D[size]
    w, h = _TILES_2D[size]
    return w, h, 1


def _round_tiles(n: int) -> int:
    return -(-n // TILE_BYTES) * TILE_BYTES


def sparse_properties(desc: ArrayDesc, levels: int) -> SparseProps:
    """The sparse properties of a sparse array (levels 1) or mipmapped array (the model above)."""
    tw, th, td = _tile(desc)
    descs = level_descs(desc, levels)
    first = levels
    for lv, d in enumerate(descs):
        if d.width < tw or d.rows < th or (_is_3d(desc) and d.slices < td):
            first = lv
            break
    per_layer = [d.row_bytes * d.rows * (d.slices if _is_3d(desc) else 1) for d in descs]
    tail = sum(per_layer[first:])
    return SparseProps(tw, th, td, first, _round_tiles(tail) if tail else 0)


def memory_requirements(desc: ArrayDesc, levels: int) -> tuple[int, int]:
    """(size, alignment) of the memory an array of these levels needs (the model above)."""
    return sum(_round_tiles(d.nbytes) for d in level_descs(desc, levels)), TILE_BYTES


def unbacked(flags: int) -> bool:
    """Whether an array of these CUDA_ARRAY3D_* flags has no memory of its own (sparse or
    deferred mapping): a checkpoint keeps no contents for it."""
    return bool(flags & (ARRAY3D_SPARSE | ARRAY3D_DEFERRED_MAPPING))
