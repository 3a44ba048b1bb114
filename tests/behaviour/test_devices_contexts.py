"""Device queries and contexts, with cuda-python's argument and result shapes."""

from __future__ import annotations

import re

import pytest
from behaviour_helpers import SUCCESS, check, open_session

import cricket_client
from cricket_client import driver as cuda


def test_device_queries(session: cricket_client.Connection) -> None:
    assert check(cuda.cuDriverGetVersion()) >= 12000
    count = check(cuda.cuDeviceGetCount())
    assert count >= 1
    dev = check(cuda.cuDeviceGet(0))
    assert isinstance(dev, cuda.CUdevice) and int(dev) == 0
    name = check(cuda.cuDeviceGetName(256, dev))
    assert len(name) == 256 and name[0] != 0 and name.rstrip(b"\0").isascii()
    assert check(cuda.cuDeviceTotalMem(dev)) > 0
    uuid = check(cuda.cuDeviceGetUuid(dev))
    assert len(uuid.bytes) == 16
    bus_id = check(cuda.cuDeviceGetPCIBusId(32, dev)).rstrip(b"\0").decode()
    assert re.fullmatch(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]", bus_id)
    attr = cuda.CUdevice_attribute
    assert check(cuda.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) > 0
    assert check(cuda.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) >= 9
    assert check(cuda.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev)) == 32
    assert check(cuda.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev)) == 1
    assert cuda.cuDeviceGet(count) == (cuda.CUresult.CUDA_ERROR_INVALID_DEVICE, None)


def test_primary_context(session: cricket_client.Connection) -> None:
    dev = check(cuda.cuDeviceGet(0))
    flags, active = check(cuda.cuDevicePrimaryCtxGetState(dev))
    assert active == 1
    assert check(cuda.cuCtxGetDevice()) == dev
    check(cuda.cuCtxSynchronize())


def test_created_context_stack(session: cricket_client.Connection) -> None:
    dev = check(cuda.cuDeviceGet(0))
    primary = check(cuda.cuCtxGetCurrent())
    ctx = check(cuda.cuCtxCreate(None, 0, dev))
    assert check(cuda.cuCtxGetCurrent()) == ctx != primary
    assert check(cuda.cuCtxPopCurrent()) == ctx
    assert check(cuda.cuCtxGetCurrent()) == primary
    check(cuda.cuCtxPushCurrent(ctx))
    ptr = check(cuda.cuMemAlloc(256))
    check(cuda.cuMemsetD8(ptr, 1, 256))
    assert check(cuda.cuCtxPopCurrent()) == ctx
    check(cuda.cuCtxDestroy(ctx))
    assert check(cuda.cuCtxGetCurrent()) == primary


def test_limits(session: cricket_client.Connection) -> None:
    limit = cuda.CUlimit.CU_LIMIT_STACK_SIZE
    check(cuda.cuCtxSetLimit(limit, 4096))
    assert check(cuda.cuCtxGetLimit(limit)) >= 4096


def test_without_cuinit(server_address: str) -> None:
    conn = cricket_client.connect(server_address, make_default=False)
    try:
        with conn.active():
            assert cuda.cuDeviceGetCount() == (cuda.CUresult.CUDA_ERROR_NOT_INITIALIZED, None)
    finally:
        conn.close()


def test_memory_needs_a_context(server_address: str) -> None:
    conn = cricket_client.connect(server_address, make_default=False)
    try:
        with conn.active():
            check(cuda.cuInit(0))
            assert cuda.cuMemAlloc(16) == (cuda.CUresult.CUDA_ERROR_INVALID_CONTEXT, None)
    finally:
        conn.close()


@pytest.mark.parametrize("flags", [0, int(cuda.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC)])
def test_primary_context_flags(server_address: str, flags: int) -> None:
    conn = open_session(server_address, make_default=False)
    try:
        with conn.active():
            dev = check(cuda.cuDeviceGet(0))
            assert cuda.cuDevicePrimaryCtxSetFlags(dev, flags) == (SUCCESS,)
            got, _active = check(cuda.cuDevicePrimaryCtxGetState(dev))
            assert got & 0x7 == flags
    finally:
        conn.close()
