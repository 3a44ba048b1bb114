"""Packing of kernel arguments in every form cuda-python's cuLaunchKernel accepts (D5)."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from cricket_client import driver as cuda
from cricket_client.kernel_args import LaunchArgumentError, pack_kernel_params

# saxpy(float a, const float *x, float *y, int n)
LAYOUT = ((0, 4), (8, 8), (16, 8), (24, 4))
X, Y = 0x7F00_0000_1000, 0x7F00_0000_2000
EXPECTED = struct.pack("<f4xQQi", 2.5, X, Y, 1000)
F = "cuLaunchKernel: function 0x10"


def test_values_and_ctypes_types() -> None:
    args = ((2.5, X, Y, 1000), (ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))
    assert pack_kernel_params(F, LAYOUT, args) == EXPECTED


def test_none_type_takes_handles_and_ints() -> None:
    args = ((ctypes.c_float(2.5), cuda.CUdeviceptr(X), Y, 1000), (ctypes.c_float, None, None, ctypes.c_int))
    assert pack_kernel_params(F, LAYOUT, args) == EXPECTED


def test_none_type_takes_numpy_integers() -> None:
    args = ((2.5, np.uint64(X), np.uint64(Y), 1000), (ctypes.c_float, None, None, ctypes.c_int))
    assert pack_kernel_params(F, LAYOUT, args) == EXPECTED
    with pytest.raises(TypeError, match="float"):
        pack_kernel_params(F, LAYOUT, ((2.5, 1.5, Y, 1), (ctypes.c_float, None, None, ctypes.c_int)))


def test_address_of_pointer_array() -> None:
    cells = [ctypes.c_float(2.5), ctypes.c_uint64(X), ctypes.c_uint64(Y), ctypes.c_int(1000)]
    array = (ctypes.c_void_p * 4)(*[ctypes.addressof(c) for c in cells])
    assert pack_kernel_params(F, LAYOUT, ctypes.addressof(array)) == EXPECTED


def test_numpy_array_of_addresses() -> None:
    a, x, y, n = np.array([2.5], np.float32), np.array([X], np.uint64), np.array([Y], np.uint64), np.array([1000], np.int32)
    ptrs = np.array([v.ctypes.data for v in (a, x, y, n)], dtype=np.uint64)
    assert pack_kernel_params(F, LAYOUT, ptrs) == EXPECTED


def test_handle_getptr_in_pointer_array() -> None:
    x, y = cuda.CUdeviceptr(X), cuda.CUdeviceptr(Y)
    a, n = ctypes.c_float(2.5), ctypes.c_int(1000)
    ptrs = np.array([ctypes.addressof(a), x.getPtr(), y.getPtr(), ctypes.addressof(n)], dtype=np.uint64)
    assert pack_kernel_params(F, LAYOUT, ptrs) == EXPECTED


def test_extra_buffer_pointer_and_size() -> None:
    buf = ctypes.create_string_buffer(EXPECTED, len(EXPECTED))
    size = ctypes.c_size_t(len(EXPECTED))
    extra = (ctypes.c_void_p * 5)(
        cuda.CU_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(buf),
        cuda.CU_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size), cuda.CU_LAUNCH_PARAM_END,
    )
    assert pack_kernel_params(F, LAYOUT, None, ctypes.addressof(extra)) == EXPECTED
    assert pack_kernel_params(F, LAYOUT, 0, np.array([v or 0 for v in extra], dtype=np.uint64)) == EXPECTED


def test_no_parameters() -> None:
    assert pack_kernel_params(F, (), None) == b""
    assert pack_kernel_params(F, (), 0) == b""


def test_wrong_count_names_the_function() -> None:
    with pytest.raises(LaunchArgumentError, match=r"function 0x10 takes 4 parameters, got 2"):
        pack_kernel_params(F, LAYOUT, ((2.5, X), (ctypes.c_float, None)))
    with pytest.raises(LaunchArgumentError, match="takes 4 parameters, got none"):
        pack_kernel_params(F, LAYOUT, None)
    with pytest.raises(LaunchArgumentError, match="takes 4 parameters, got 3"):
        pack_kernel_params(F, LAYOUT, np.zeros(3, np.uint64))


def test_wrong_size_names_the_parameter() -> None:
    args = ((2.5, X, Y, 1000), (ctypes.c_double, None, None, ctypes.c_int))
    with pytest.raises(LaunchArgumentError, match=r"parameter 0 is 4 bytes, got c_double \(8 bytes\)"):
        pack_kernel_params(F, LAYOUT, args)


def test_both_params_and_extra_is_an_error() -> None:
    with pytest.raises(LaunchArgumentError, match="both"):
        pack_kernel_params(F, LAYOUT, ((2.5, X, Y, 1), (None,) * 4), 1234)


def test_malformed_forms_raise_type_error_like_cuda_python() -> None:
    with pytest.raises(TypeError, match="different length"):
        pack_kernel_params(F, LAYOUT, ((1, 2), (None,)))
    with pytest.raises(TypeError):
        pack_kernel_params(F, LAYOUT, [(1,), (None,)])
    with pytest.raises(TypeError):
        pack_kernel_params(F, LAYOUT, ((2.5, "x", Y, 1), (ctypes.c_float, None, None, ctypes.c_int)))
