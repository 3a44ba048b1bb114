"""Known answers with two devices (a sim server with `--sim-devices 2`; on the cuda backend
the machine's GPUs, skipped with fewer than two): the current device the client answers
follows cuCtxSetCurrent and cudaSetDevice, and each device's attributes are its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_harness import running_server
from test_several_devices import BACKEND, _options, check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

A = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[cricket_client.Connection]:
    with running_server(tmp_path, *_options()) as srv:
        connection = cricket_client.connect(srv.address, make_default=True)
        try:
            check(cuda.cuInit(0))
            if check(cuda.cuDeviceGetCount()) < 2:
                pytest.skip(f"the {BACKEND} server has fewer than two devices")
            yield connection
            cudart.cudaSetDevice(0)  # the runtime's device is the thread's: leave it as found
        finally:
            connection.close()


def _calls(conn: cricket_client.Connection) -> int:
    return int(conn._stub.SESSION_CALLS().value)


def test_the_current_device_follows_cuCtxSetCurrent(conn: cricket_client.Connection) -> None:
    ctxs: list[Any] = [check(cuda.cuDevicePrimaryCtxRetain(cuda.CUdevice(d))) for d in (0, 1)]
    for _ in range(3):
        for dev, ctx in enumerate(ctxs):
            check(cuda.cuCtxSetCurrent(ctx))
            assert int(check(cuda.cuCtxGetDevice())) == dev
            assert int(check(cuda.cuCtxGetDevice())) == dev
            assert int(check(cuda.cuCtxGetCurrent())) == int(ctx)
    check(cuda.cuCtxPushCurrent(ctxs[0]))
    assert int(check(cuda.cuCtxGetDevice())) == 0
    check(cuda.cuCtxPopCurrent())
    assert int(check(cuda.cuCtxGetDevice())) == 1


def test_the_current_device_follows_cudaSetDevice(conn: cricket_client.Connection) -> None:
    for dev in (0, 1, 0, 1):
        check(cudart.cudaSetDevice(dev))
        assert check(cudart.cudaGetDevice()) == dev
        assert int(check(cuda.cuCtxGetDevice())) == dev


def test_each_device_answers_its_own_attributes_once(conn: cricket_client.Connection) -> None:
    names = [check(cuda.cuDeviceGetName(64, cuda.CUdevice(d))) for d in (0, 1)]
    uuids = [check(cuda.cuDeviceGetUuid(cuda.CUdevice(d))).bytes for d in (0, 1)]
    assert uuids[0] != uuids[1]
    calls = _calls(conn)
    for _ in range(3):
        assert [check(cuda.cuDeviceGetName(64, cuda.CUdevice(d))) for d in (0, 1)] == names
        assert [check(cuda.cuDeviceGetUuid(cuda.CUdevice(d))).bytes for d in (0, 1)] == uuids
    assert _calls(conn) == calls
