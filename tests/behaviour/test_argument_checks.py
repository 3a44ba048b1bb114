"""Bad arguments fail as cuda-python fails them, never silently (tests/gpu/test_error_parity.py
compares the same calls with local cuda-python on the GPU machine).

cuda-python converts each numeric argument to its C type before the driver sees it: a negative
size or flag raises OverflowError, a value too large for its type OverflowError, a string
TypeError; a float is truncated. What only the driver checks comes back as a CUresult.
"""

from __future__ import annotations

from typing import Any

import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

E = cuda.CUresult


@pytest.fixture
def ptr(session: cricket_client.Connection) -> Any:
    p = check(cuda.cuMemAlloc(64))
    check(cuda.cuMemsetD8(p, 0x11, 64))
    yield p
    cuda.cuMemFree(p)


def _device_bytes(ptr: Any, n: int = 64) -> bytes:
    out = bytearray(n)
    check(cuda.cuMemcpyDtoH(out, ptr, n))
    return bytes(out)


def test_negative_copy_size_raises_overflow_error_and_copies_nothing(ptr: Any) -> None:
    with pytest.raises(OverflowError, match="cuMemcpyHtoD: ByteCount"):
        cuda.cuMemcpyHtoD(ptr, b"x" * 8, -1)
    with pytest.raises(OverflowError):
        cuda.cuMemcpyHtoDAsync(ptr, b"x" * 8, -1, 0)
    with pytest.raises(OverflowError):
        cuda.cuMemcpyDtoH(bytearray(8), ptr, -1)
    with pytest.raises(OverflowError):
        cuda.cuMemcpyDtoD(ptr, ptr, -1)
    check(cuda.cuCtxSynchronize())
    assert _device_bytes(ptr) == b"\x11" * 64


def test_sizes_and_flags_out_of_their_c_range_raise_overflow_error(session: Any) -> None:
    with pytest.raises(OverflowError):
        cuda.cuMemAlloc(-1)
    with pytest.raises(OverflowError):
        cuda.cuMemAlloc(1 << 64)
    with pytest.raises(OverflowError):
        cuda.cuInit(-1)
    with pytest.raises(OverflowError):
        cuda.cuStreamCreate(1 << 32)
    with pytest.raises(OverflowError):
        cuda.cuCtxSetLimit(cuda.CUlimit.CU_LIMIT_STACK_SIZE, -1)
    with pytest.raises(OverflowError):
        cuda.cuDeviceGet(1 << 31)


def test_memset_value_too_large_for_its_width_raises_instead_of_wrapping(ptr: Any) -> None:
    with pytest.raises(OverflowError, match="cuMemsetD8: value"):
        cuda.cuMemsetD8(ptr, 256, 1)
    with pytest.raises(OverflowError):
        cuda.cuMemsetD8(ptr, -1, 1)
    with pytest.raises(OverflowError):
        cuda.cuMemsetD16(ptr, 1 << 16, 1)
    with pytest.raises(OverflowError):
        cuda.cuMemsetD32Async(ptr, 1 << 32, 1, 0)
    check(cuda.cuCtxSynchronize())
    assert _device_bytes(ptr) == b"\x11" * 64


def test_strings_are_not_sizes(session: Any) -> None:
    with pytest.raises(TypeError):
        cuda.cuMemAlloc("8")
    with pytest.raises(TypeError):
        cudart.cudaMalloc("8")


def test_floats_are_truncated_as_cuda_python_does(session: Any) -> None:
    p = check(cuda.cuMemAlloc(1.9))  # cuda-python converts 1.9 to 1 (Cython's __int__)
    try:
        base, size = check(cuda.cuMemGetAddressRange(p))
        assert int(base) == int(p) and size >= 1
    finally:
        check(cuda.cuMemFree(p))


def test_runtime_sizes_are_checked_too(session: Any) -> None:
    with pytest.raises(OverflowError):
        cudart.cudaMalloc(-1)
    with pytest.raises(OverflowError):
        cudart.cudaMemset(0, 0, -1)


def test_a_name_that_is_not_utf8_is_not_found(kernels: Any) -> None:
    assert cuda.cuModuleGetFunction(kernels, b"\xff")[0] == E.CUDA_ERROR_NOT_FOUND
    assert cuda.cuModuleGetGlobal(kernels, b"\xff\xfe")[0] == E.CUDA_ERROR_NOT_FOUND


def test_negative_device_ordinal_is_an_invalid_device(session: Any) -> None:
    assert cuda.cuDeviceGet(-1)[0] == E.CUDA_ERROR_INVALID_DEVICE
    assert cuda.cuDeviceGetAttribute(cuda.CUdevice_attribute(1), -1)[0] == (
        E.CUDA_ERROR_INVALID_DEVICE
    )
    assert cuda.cuDeviceTotalMem(-1)[0] == E.CUDA_ERROR_INVALID_DEVICE


def test_negative_handles_and_pointers_raise_overflow_error(session: Any) -> None:
    with pytest.raises(OverflowError, match="dptr"):
        cuda.cuMemFree(-1)
    with pytest.raises(OverflowError):
        cuda.cuMemcpyHtoD(-8, b"x" * 8, 8)
    with pytest.raises(OverflowError):
        cuda.cuStreamSynchronize(-1)
    with pytest.raises(OverflowError):
        cuda.cuEventQuery(-1)
