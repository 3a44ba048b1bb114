"""The rules sim answers with: mipmap level extents, sparse tiles and mip tails of 64 KiB
tiles (the H200's answer for cuda-python's float4 1000 x 500 array), and the SM split of
compute capability 9.0 (groups of 8)."""

from __future__ import annotations

import pytest

from cricket_server.backends.arrays import ARRAY3D_LAYERED, ArrayDesc
from cricket_server.backends.base import CudaError
from cricket_server.backends.dev_resources import (
    SPLIT_IGNORE_SM_COSCHEDULING,
    partition_rule,
    split_by_count,
)
from cricket_server.backends.mipmaps import (
    ARRAY3D_SPARSE,
    level_descs,
    max_levels,
    memory_requirements,
    sparse_properties,
)

FLOAT = 0x20


def test_the_h200_answer_for_a_sparse_float4_mipmap() -> None:
    desc = ArrayDesc(1000, 500, 0, FLOAT, 4, ARRAY3D_SPARSE)
    assert max_levels(desc) == 10
    p = sparse_properties(desc, 10)
    assert (p.tile_width, p.tile_height, p.tile_depth) == (64, 64, 1)
    assert (p.miptail_first_level, p.miptail_size, p.flags) == (3, 196608, 0)


@pytest.mark.parametrize(
    ("fmt", "channels", "tile"),
    [(0x01, 1, (256, 256, 1)), (0x02, 1, (256, 128, 1)), (FLOAT, 1, (128, 128, 1)),
     (FLOAT, 2, (128, 64, 1)), (FLOAT, 4, (64, 64, 1))],
)  # fmt: skip
def test_2d_tiles_hold_64_kib(fmt: int, channels: int, tile: tuple[int, int, int]) -> None:
    desc = ArrayDesc(4096, 4096, 0, fmt, channels, ARRAY3D_SPARSE)
    p = sparse_properties(desc, 1)
    assert (p.tile_width, p.tile_height, p.tile_depth) == tile
    assert tile[0] * tile[1] * desc.element_size == 64 << 10
    assert (p.miptail_first_level, p.miptail_size) == (1, 0)  # no level smaller than a tile


def test_3d_tiles_and_a_small_array_is_all_mip_tail() -> None:
    p = sparse_properties(ArrayDesc(64, 64, 64, FLOAT, 1, ARRAY3D_SPARSE), 1)
    assert (p.tile_width, p.tile_height, p.tile_depth) == (32, 32, 16)
    small = sparse_properties(ArrayDesc(100, 20, 0, FLOAT, 1, ARRAY3D_SPARSE), 1)
    assert (small.miptail_first_level, small.miptail_size) == (0, 64 << 10)


def test_levels_halve_each_dimension_but_layers() -> None:
    descs = level_descs(ArrayDesc(10, 3, 4, FLOAT, 1, ARRAY3D_LAYERED), 4)
    assert [(d.width, d.height, d.depth) for d in descs] == [(10, 3, 4), (5, 1, 4), (2, 1, 4), (1, 1, 4)]
    assert [(d.width, d.height) for d in level_descs(ArrayDesc(8, 0, 0, FLOAT, 1, 0), 4)] == [
        (8, 0), (4, 0), (2, 0), (1, 0),
    ]  # fmt: skip
    size, alignment = memory_requirements(ArrayDesc(256, 256, 0, FLOAT, 1, 0), 2)
    assert (size, alignment) == ((256 << 10) + (64 << 10), 64 << 10)


def test_sm_split_of_compute_capability_9() -> None:
    minimum, alignment = partition_rule(9)
    assert (minimum, alignment) == (8, 8)
    assert split_by_count(132, minimum, alignment, 0, 0, 2) == (16, 8, 4)
    assert split_by_count(132, minimum, alignment, 3, 0, 2) == (3, 8, 108)
    assert split_by_count(132, minimum, alignment, 2, 0, 20) == (2, 24, 84)
    assert split_by_count(132, minimum, alignment, 0, SPLIT_IGNORE_SM_COSCHEDULING, 1) == (66, 2, 0)
    with pytest.raises(CudaError):
        split_by_count(132, minimum, alignment, 1, 0, 133)
