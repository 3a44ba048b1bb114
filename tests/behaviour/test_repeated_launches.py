"""Repeated launches packed by their template (cricket_client.launch_templates) compute what
the general path computes and fail as it fails. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
N = 256


def _floats(ptr: Any, n: int) -> list[float]:
    out = bytearray(4 * n)
    check(cuda.cuMemcpyDtoH(out, ptr, 4 * n))
    return list(struct.unpack(f"<{n}f", out))


def test_repeated_saxpy_launches_with_changing_values_compute_each_value(
    session: cricket_client.Connection, kernels: Any
) -> None:
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    x, y = check(cuda.cuMemAlloc(4 * N)), check(cuda.cuMemAlloc(4 * N))
    stream = check(cuda.cuStreamCreate(0))
    try:
        check(cuda.cuMemcpyHtoD(x, struct.pack(f"<{N}f", *([1.0] * N)), 4 * N))
        check(cuda.cuMemsetD32(y, 0, N))
        types = (ctypes.c_float, None, None, ctypes.c_int)
        expected = 0.0
        for i in range(300):
            a = float(i % 7)
            n = N if i % 2 else N // 2  # y[0] always, y[N-1] every other launch
            on = stream if i % 3 else 0
            params = ((a, x, int(y), n), types) if i % 5 else ((a, x, y, n), types)
            assert cuda.cuLaunchKernel(saxpy, 1, 1, 1, N, 1, 1, 0, on, params, 0) == (
                E.CUDA_SUCCESS,
            )
            if on:
                check(cuda.cuStreamSynchronize(stream))  # the next launch may be on stream 0
            expected += a
        check(cuda.cuCtxSynchronize())
        got = _floats(y, N)
        assert got[0] == pytest.approx(expected)
        assert got[N - 1] == pytest.approx(sum(float(i % 7) for i in range(300) if i % 2))
        assert 1 <= len(session.launch_templates) <= 4  # the launches went by templates
    finally:
        check(cuda.cuStreamDestroy(stream))
        check(cuda.cuMemFree(x))
        check(cuda.cuMemFree(y))


def test_a_value_the_parameter_cannot_take_is_refused_after_good_launches_too(
    session: cricket_client.Connection, kernels: Any
) -> None:
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    types = (ctypes.c_float, None, None, ctypes.c_int)
    good = ((1.0, 0, 0, 0), types)
    bad = ((1.0, 0, 0, 2.5), types)  # a float for `int n`
    assert cuda.cuLaunchKernel(saxpy, 1, 1, 1, 1, 1, 1, 0, 0, good, 0) == (E.CUDA_SUCCESS,)
    with pytest.raises(TypeError):
        cuda.cuLaunchKernel(saxpy, 1, 1, 1, 1, 1, 1, 0, 0, bad, 0)
    assert cuda.cuLaunchKernel(saxpy, 1, 1, 1, 1, 1, 1, 0, 0, good, 0) == (E.CUDA_SUCCESS,)
    too_big = ((1.0, 0, 0, 2**31), types)  # wrapped as ctypes.c_int wraps it, as before
    assert cuda.cuLaunchKernel(saxpy, 1, 1, 1, 1, 1, 1, 0, 0, too_big, 0) == (E.CUDA_SUCCESS,)
    assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)


def test_a_launch_of_an_unloaded_function_fails_as_the_first_one_would(
    session: cricket_client.Connection,
) -> None:
    from behaviour_helpers import KERNELS

    image = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
    module = check(cuda.cuModuleLoadData(image))
    add = check(cuda.cuModuleGetFunction(module, b"add_to_counter"))
    one = ((1,), (ctypes.c_int,))
    for _ in range(3):
        assert cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, one, 0) == (E.CUDA_SUCCESS,)
    check(cuda.cuCtxSynchronize())
    check(cuda.cuModuleUnload(module))
    cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, one, 0)
    templated = cuda.cuCtxSynchronize()
    session.launch_templates.clear()
    cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, one, 0)
    general = cuda.cuCtxSynchronize()
    assert templated == general
    assert templated[0] != E.CUDA_SUCCESS
    # a module loaded again has new function handles: their launches run
    module = check(cuda.cuModuleLoadData(image))
    add2 = check(cuda.cuModuleGetFunction(module, b"add_to_counter"))
    assert int(add2) != int(add)
    for _ in range(3):
        assert cuda.cuLaunchKernel(add2, 1, 1, 1, 1, 1, 1, 0, 0, one, 0) == (E.CUDA_SUCCESS,)
    assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)
    check(cuda.cuModuleUnload(module))


def test_launches_without_parameters_run_and_are_refused_for_a_kernel_that_takes_some(
    session: cricket_client.Connection, kernels: Any
) -> None:
    empty = check(cuda.cuModuleGetFunction(kernels, b"empty"))
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    for i in range(200):
        none = None if i % 2 else 0
        stream = cuda.CUstream(0) if i % 3 else 0
        assert cuda.cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, none, 0) == (
            E.CUDA_SUCCESS,
        )
    for _ in range(3):  # `add_to_counter(int)` given no parameters: refused every time
        assert cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0) == (
            E.CUDA_ERROR_INVALID_VALUE,
        )
    assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)
    assert len(session.launch_templates) == 1  # `empty`'s; none for `add` without parameters
