"""Wide im2col tensor maps (cuTensorMapEncodeIm2colWide) and allocation classes
(cuTensorMapSetAllocationClass): encoded by the server's driver (compute capability 10.0 for
wide maps; CUDA 13.5 for allocation classes: a server whose CUDA lacks the call answers
CUDA_ERROR_NOT_SUPPORTED naming it and the test skips), refused naming the call on sim, and a
tensor outside the session's memory refused on both."""

from __future__ import annotations

from typing import Any

import pytest
from behaviour_helpers import BACKEND, check

import cricket_client
from cricket_client import driver as cuda

N, H, W, C = 1, 8, 64, 16  # an NHWC tensor of 16-bit elements
DT = cuda.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
NONE_INTERLEAVE = cuda.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
MODE_W = cuda.CUtensorMapIm2ColWideMode.CU_TENSOR_MAP_IM2COL_WIDE_MODE_W
SWIZZLE = cuda.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE
L2 = cuda.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE
OOB = cuda.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
SMALL = cuda.CUtensorMapAllocClass.CU_TENSOR_MAP_ALLOC_CLASS_SMALL
LARGE = cuda.CUtensorMapAllocClass.CU_TENSOR_MAP_ALLOC_CLASS_LARGE
BYTES = N * H * W * C * 2


def _wide(ptr: Any, height: int = H) -> tuple[Any, Any]:
    dims = [C, W, height, N]
    strides = [C * 2, W * C * 2, height * W * C * 2]
    return cuda.cuTensorMapEncodeIm2colWide(
        DT, 4, ptr, dims, strides, 0, 0, C, 32, [1, 1, 1, 1], NONE_INTERLEAVE, MODE_W, SWIZZLE,
        L2, OOB,
    )  # fmt: skip


def _compute_major() -> int:
    attr = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    return int(check(cuda.cuDeviceGetAttribute(attr, check(cuda.cuDeviceGet(0)))))


def test_a_wide_map_is_encoded_by_a_gpu_that_has_them(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(BYTES))
    err, made = _wide(ptr)
    if BACKEND == "sim":
        assert (err, made) == (cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED, None)
        assert "cuTensorMapEncodeIm2colWide" in cricket_client.last_error_message()
    elif _compute_major() >= 9:  # the H200 (9.0, driver 580) encodes them
        assert err == cuda.CUresult.CUDA_SUCCESS, cricket_client.last_error_message()
        assert isinstance(made, cuda.CUtensorMap) and any(bytes(made))
    else:  # tensor maps need compute capability 9.0; never a made-up map
        assert err != cuda.CUresult.CUDA_SUCCESS and made is None
    check(cuda.cuMemFree(ptr))


def test_a_wide_tensor_outside_the_sessions_memory_is_refused(
    session: cricket_client.Connection,
) -> None:
    ptr = check(cuda.cuMemAlloc(BYTES))
    assert _wide(ptr, 2 * H) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    assert "cuTensorMapEncodeIm2colWide" in cricket_client.last_error_message()
    check(cuda.cuMemFree(ptr))


def test_allocation_class_of_a_map(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(64 * 64 * 4))
    tail = (NONE_INTERLEAVE, SWIZZLE, L2, OOB)
    f32 = cuda.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    err, made = cuda.cuTensorMapEncodeTiled(f32, 2, ptr, [64, 64], [256], [32, 32], [1, 1], *tail)
    if BACKEND == "sim":
        made = cuda.CUtensorMap()
    else:
        assert err == cuda.CUresult.CUDA_SUCCESS, cricket_client.last_error_message()
    before = bytes(made)
    err, effect = cuda.cuTensorMapSetAllocationClass(made, SMALL)
    if err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED:
        assert "cuTensorMapSetAllocationClass" in cricket_client.last_error_message()
        assert bytes(made) == before  # unchanged on failure
        check(cuda.cuMemFree(ptr))
        if BACKEND == "sim":
            return
        pytest.skip(
            f"the server's CUDA has no allocation classes: {cricket_client.last_error_message()}"
        )
    assert err == cuda.CUresult.CUDA_SUCCESS and effect in (SMALL, LARGE)
    err, _ = cuda.cuTensorMapSetAllocationClass(made, 7)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuMemFree(ptr))


def test_allocation_class_needs_a_tensor_map(session: cricket_client.Connection) -> None:
    assert cuda.cuTensorMapSetAllocationClass(b"\0" * 128, SMALL) == (
        cuda.CUresult.CUDA_ERROR_INVALID_VALUE,
        None,
    )
    assert "not a CUtensorMap" in cricket_client.last_error_message()
