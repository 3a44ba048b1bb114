"""Atomic capabilities between two devices of one server (`--sim-devices 2` on sim; on the
cuda backend the machine's GPUs, skipped with fewer than two): the link's capabilities in
both directions, driver and runtime forms, and CUDA's errors for a device and itself."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import running_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")
OPS = [cuda.CUatomicOperation.CU_ATOMIC_OPERATION_INTEGER_ADD,
       cuda.CUatomicOperation.CU_ATOMIC_OPERATION_FLOAT_ADD]  # fmt: skip


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[cricket_client.Connection]:
    options = ("--sim-devices", "2") if BACKEND == "sim" else ()
    with running_server(tmp_path, *options) as server:
        connection = cricket_client.connect(server.address, make_default=True)
        try:
            assert cuda.cuInit(0) == (cuda.CUresult.CUDA_SUCCESS,)
            if cuda.cuDeviceGetCount()[1] < 2:
                pytest.skip("the server has fewer than two devices")
            yield connection
        finally:
            connection.close()


def test_atomics_between_two_devices(conn: cricket_client.Connection) -> None:
    zero, one = cuda.CUdevice(0), cuda.CUdevice(1)
    err, there = cuda.cuDeviceGetP2PAtomicCapabilities(OPS, 2, zero, one)
    message = cricket_client.last_error_message() or ""
    if err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED and " has no " in message:
        pytest.skip(message)  # the server's cuda-python or driver is older than the call
    assert err == cuda.CUresult.CUDA_SUCCESS and len(there) == 2
    native = cuda.cuDeviceGetP2PAttribute(
        cuda.CUdevice_P2PAttribute.CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, zero, one
    )[1]
    if BACKEND == "sim":
        assert native == 1 and there == [31, 28]
    err, back = cuda.cuDeviceGetP2PAtomicCapabilities(OPS, 2, one, zero)
    assert err == cuda.CUresult.CUDA_SUCCESS and len(back) == 2
    ops = [cudart.cudaAtomicOperation.cudaAtomicOperationIntegerAdd]
    assert cudart.cudaDeviceGetP2PAtomicCapabilities(ops, 1, 0, 1) == (
        cudart.cudaError_t.cudaSuccess, there[:1]
    )
    assert cuda.cuDeviceGetP2PAtomicCapabilities(OPS, 2, one, one)[0] == (
        cuda.CUresult.CUDA_ERROR_INVALID_DEVICE
    )
