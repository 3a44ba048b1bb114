"""The cuda backend's reusable kernel parameter buffer: cuLaunchKernel's void*[] points at
each parameter's bytes of the launch being made (checked through the raw pointers)."""

from __future__ import annotations

import ctypes

import pytest

pytest.importorskip("cuda.bindings")

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError, ParamInfo  # noqa: E402
from cricket_server.backends.cuda.launch import ParamBuffer  # noqa: E402

LAYOUT = (ParamInfo(0, 4), ParamInfo(8, 8), ParamInfo(16, 8), ParamInfo(24, 4))


def _params_seen_by_the_driver(address: int) -> list[bytes]:
    pointers = (ctypes.c_void_p * len(LAYOUT)).from_address(address)
    return [ctypes.string_at(pointers[i], p.size) for i, p in enumerate(LAYOUT)]


def test_each_launch_sees_its_own_parameters() -> None:
    buffer = ParamBuffer(LAYOUT, 0x12)
    first = bytes(range(28))
    address = buffer.fill(memoryview(first))
    assert _params_seen_by_the_driver(address) == [first[p.offset : p.offset + p.size] for p in LAYOUT]
    second = bytes(range(100, 128)) + b"\xff" * 4  # longer than needed: the rest is ignored
    assert buffer.fill(memoryview(second)) == address  # the same memory, reused
    assert _params_seen_by_the_driver(address) == [
        second[p.offset : p.offset + p.size] for p in LAYOUT
    ]


def test_too_few_parameter_bytes_are_refused() -> None:
    buffer = ParamBuffer(LAYOUT, 0x12)
    with pytest.raises(CudaError) as caught:
        buffer.fill(memoryview(bytes(27)))
    assert caught.value.code == CUDA_ERROR_INVALID_VALUE
    assert "function 0x12 has 4 parameters in 28 bytes, got 27" in caught.value.message


def test_a_kernel_without_parameters_passes_null() -> None:
    assert ParamBuffer((), 0x13).fill(memoryview(b"")) == 0
