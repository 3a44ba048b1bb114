"""Hopper tensor maps: encoded by the server's driver for a device address of the session and
returned as the caller's CUtensorMap (cuda); refused naming the call where no GPU encodes them
(sim). A tensor that leaves the session's memory is refused on both."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from behaviour_helpers import BACKEND, check

import cricket_client
from cricket_client import driver as cuda

ROWS, COLS = 64, 64  # float32, a 64x64 tile
DT = cuda.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
TAIL = (
    cuda.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
    cuda.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
    cuda.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
    cuda.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
)


def _tiled(ptr: Any) -> tuple[Any, Any]:
    return cuda.cuTensorMapEncodeTiled(DT, 2, ptr, [COLS, ROWS], [COLS * 4], [32, 32], [1, 1], *TAIL)


def _local_encoding(ptr: int) -> bytes | None:
    """The same map encoded by a driver of this process, where one answers."""
    try:
        from cuda.bindings import driver as local
    except ImportError:
        return None
    if local.cuInit(0)[0] != local.CUresult.CUDA_SUCCESS:
        return None
    err, made = local.cuTensorMapEncodeTiled(
        local.CUtensorMapDataType(int(DT)), 2, ptr,
        [local.cuuint64_t(COLS), local.cuuint64_t(ROWS)], [local.cuuint64_t(COLS * 4)],
        [local.cuuint32_t(32), local.cuuint32_t(32)], [local.cuuint32_t(1), local.cuuint32_t(1)],
        *(type_(int(v)) for type_, v in zip(
            (local.CUtensorMapInterleave, local.CUtensorMapSwizzle, local.CUtensorMapL2promotion,
             local.CUtensorMapFloatOOBfill), TAIL, strict=True)),
    )  # fmt: skip
    if err != local.CUresult.CUDA_SUCCESS:
        return None
    return struct.pack("<16Q", *(int(v) for v in made.opaque))


@pytest.mark.skipif(BACKEND != "sim", reason="sim's answer")
def test_sim_refuses_tensor_maps_naming_the_call(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(ROWS * COLS * 4))
    assert _tiled(ptr) == (cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED, None)
    assert "cuTensorMapEncodeTiled" in cricket_client.last_error_message()
    check(cuda.cuMemFree(ptr))


@pytest.mark.skipif(BACKEND == "sim", reason="a GPU's driver encodes tensor maps")
def test_tensor_map_is_the_drivers_encoding(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(2 * ROWS * COLS * 4))
    made = check(_tiled(ptr))
    assert isinstance(made, cuda.CUtensorMap) and len(bytes(made)) == 128
    local = _local_encoding(int(ptr))
    if local is not None:
        assert bytes(made) == local
    before = bytes(made)
    check(cuda.cuTensorMapReplaceAddress(made, int(ptr) + ROWS * COLS * 4))
    assert bytes(made) != before
    check(cuda.cuTensorMapReplaceAddress(made, ptr))
    assert bytes(made) == before
    check(cuda.cuMemFree(ptr))


def test_a_tensor_outside_the_sessions_memory_is_refused(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(ROWS * COLS * 4))
    # twice the rows the allocation holds
    err, made = cuda.cuTensorMapEncodeTiled(DT, 2, ptr, [COLS, 2 * ROWS], [COLS * 4], [32, 32], [1, 1], *TAIL)
    assert (err, made) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    # a rank without its strides
    err, made = cuda.cuTensorMapEncodeTiled(DT, 2, ptr, [COLS, ROWS], [], [32, 32], [1, 1], *TAIL)
    assert (err, made) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    check(cuda.cuMemFree(ptr))
