"""Several GPUs behind one server: a sim server modelling two devices (`--sim-devices 2`; on
the cuda backend the machine's GPUs, skipped with fewer than two). Device enumeration,
per-device primary contexts, cudaSetDevice switching, peer access and peer copies (driver and
runtime forms, with CUDA's errors), and a checkpoint that brings allocations back on their own
device with peer access, cache configurations and stream attributes as they were set."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_harness import Server, running_server, start_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart
from cricket_client.runtime_state import thread_state

BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")
SUCCESS = cuda.CUresult.CUDA_SUCCESS
R = cuda.CUresult
ORDINAL = cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL


def check(result: tuple[Any, ...]) -> Any:
    err, *values = result
    assert err in (SUCCESS, cudart.cudaError_t.cudaSuccess), (
        f"{err!r}: {cricket_client.last_error_message()}"
    )
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _options() -> tuple[str, ...]:
    return ("--sim-devices", "2") if BACKEND == "sim" else ()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_server(tmp_path, *_options(), "--checkpoint-root", str(tmp_path)) as srv:
        yield srv


@pytest.fixture
def conn(server: Server) -> Iterator[cricket_client.Connection]:
    connection = cricket_client.connect(server.address, make_default=True)
    check(cuda.cuInit(0))
    if check(cuda.cuDeviceGetCount()) < 2:
        connection.close()
        pytest.skip("the server has fewer than two devices")
    yield connection
    thread_state().device = 0  # the runtime's device is the thread's: leave it as others expect
    connection.close()


def _primary(dev: int) -> Any:
    return check(cuda.cuDevicePrimaryCtxRetain(cuda.CUdevice(dev)))


def test_devices_are_enumerated_each_with_its_primary_context(
    conn: cricket_client.Connection,
) -> None:
    assert check(cuda.cuDeviceGetCount()) == 2
    assert check(cudart.cudaGetDeviceCount()) == 2
    uuids = {check(cuda.cuDeviceGetUuid(cuda.CUdevice(d))).bytes for d in range(2)}
    buses = {check(cuda.cuDeviceGetPCIBusId(32, cuda.CUdevice(d))) for d in range(2)}
    assert len(uuids) == 2 and len(buses) == 2
    ctx0, ctx1 = _primary(0), _primary(1)
    assert int(ctx0) != int(ctx1)
    ptrs = []
    for dev, ctx in ((0, ctx0), (1, ctx1)):
        check(cuda.cuCtxSetCurrent(ctx))
        assert int(check(cuda.cuCtxGetDevice())) == dev
        ptr = check(cuda.cuMemAlloc(4096))
        assert check(cuda.cuPointerGetAttribute(ORDINAL, ptr)) == dev
        ptrs.append(ptr)
    check(cudart.cudaSetDevice(1))
    assert check(cudart.cudaGetDevice()) == 1
    on1 = check(cudart.cudaMalloc(256))
    assert check(cuda.cuPointerGetAttribute(ORDINAL, on1)) == 1
    check(cudart.cudaSetDevice(0))
    on0 = check(cudart.cudaMalloc(256))
    assert check(cuda.cuPointerGetAttribute(ORDINAL, on0)) == 0
    assert cudart.cudaSetDevice(2)[0] == cudart.cudaError_t.cudaErrorInvalidDevice


def test_peer_queries_and_access(conn: cricket_client.Connection) -> None:
    d0, d1 = cuda.CUdevice(0), cuda.CUdevice(1)
    assert check(cuda.cuDeviceCanAccessPeer(d0, d1)) == 1
    assert check(cuda.cuDeviceCanAccessPeer(d0, d0)) == 0
    access = cuda.CUdevice_P2PAttribute.CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED
    assert check(cuda.cuDeviceGetP2PAttribute(access, d0, d1)) == 1
    assert cuda.cuDeviceGetP2PAttribute(access, d0, d0)[0] == R.CUDA_ERROR_INVALID_DEVICE
    ctx0, ctx1 = _primary(0), _primary(1)
    check(cuda.cuCtxSetCurrent(ctx0))
    assert cuda.cuCtxEnablePeerAccess(ctx0, 0)[0] == R.CUDA_ERROR_INVALID_DEVICE
    assert cuda.cuCtxEnablePeerAccess(ctx1, 1)[0] == R.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuCtxEnablePeerAccess(ctx1, 0))
    assert cuda.cuCtxEnablePeerAccess(ctx1, 0)[0] == R.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
    check(cuda.cuCtxDisablePeerAccess(ctx1))
    assert cuda.cuCtxDisablePeerAccess(ctx1)[0] == R.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    # the runtime forms, on the primary contexts
    assert check(cudart.cudaDeviceCanAccessPeer(0, 1)) == 1
    check(cudart.cudaSetDevice(1))
    check(cudart.cudaDeviceEnablePeerAccess(0, 0))
    assert cudart.cudaDeviceEnablePeerAccess(0, 0)[0] == (
        cudart.cudaError_t.cudaErrorPeerAccessAlreadyEnabled
    )
    check(cudart.cudaDeviceDisablePeerAccess(0))
    assert cudart.cudaDeviceEnablePeerAccess(1, 0)[0] == cudart.cudaError_t.cudaErrorInvalidDevice


def test_peer_copies(conn: cricket_client.Connection) -> None:
    n = 1 << 16
    data = bytes(range(256)) * (n // 256)
    ctx0, ctx1 = _primary(0), _primary(1)
    check(cuda.cuCtxSetCurrent(ctx0))
    src = check(cuda.cuMemAlloc(n))
    check(cuda.cuMemcpyHtoD(src, data, n))
    check(cuda.cuCtxSetCurrent(ctx1))
    dst = check(cuda.cuMemAlloc(n))
    check(cuda.cuMemcpyPeer(dst, ctx1, src, ctx0, n))
    out = bytearray(n)
    check(cuda.cuMemcpyDtoH(out, dst, n))
    assert bytes(out) == data
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuCtxSetCurrent(ctx0))
    check(cuda.cuMemsetD8(src, 7, n))
    check(cuda.cuCtxSynchronize())
    check(cuda.cuCtxSetCurrent(ctx1))
    check(cuda.cuMemcpyPeerAsync(dst, ctx1, src, ctx0, n, stream))
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(out, dst, n))
    assert bytes(out) == b"\x07" * n
    # a pointer named with another device's context is refused
    assert cuda.cuMemcpyPeer(dst, ctx0, src, ctx0, n)[0] == R.CUDA_ERROR_INVALID_VALUE
    assert "device 1" in cricket_client.last_error_message()
    # the runtime forms
    check(cudart.cudaMemcpy(src, data, n, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice))
    check(cudart.cudaMemcpyPeer(dst, 1, src, 0, n))
    check(cuda.cuMemcpyDtoH(out, dst, n))
    assert bytes(out) == data
    check(cuda.cuMemsetD8(dst, 0, n))
    check(cudart.cudaMemcpyPeerAsync(dst, 1, src, 0, n, stream))
    check(cudart.cudaStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(out, dst, n))
    assert bytes(out) == data


def test_checkpoint_restores_each_allocation_on_its_device_and_the_settings(
    conn: cricket_client.Connection, server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx0, ctx1 = _primary(0), _primary(1)
    check(cuda.cuCtxSetCurrent(ctx1))
    on1 = check(cuda.cuMemAlloc(1 << 20))
    check(cuda.cuMemcpyHtoD(on1, b"one" * 1000, 3000))
    check(cuda.cuCtxSetCacheConfig(cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_L1))
    check(cuda.cuCtxEnablePeerAccess(ctx0, 0))
    stream = check(cuda.cuStreamCreate(0))
    policy = cuda.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY
    value = cuda.CUstreamAttrValue()
    value.syncPolicy = cuda.CUsynchronizationPolicy.CU_SYNC_POLICY_BLOCKING_SYNC
    check(cuda.cuStreamSetAttribute(stream, policy, value))
    check(cuda.cuCtxSetCurrent(ctx0))
    on0 = check(cuda.cuMemAlloc(4096))
    check(cuda.cuMemcpyHtoD(on0, b"zero" * 1024, 4096))

    cricket_client.checkpoint(tmp_path / "ckpt")
    server.kill()
    restarted = start_server(
        tmp_path / "restart", *_options(), "--checkpoint-root", str(tmp_path),
        program=("cricket_server", "restart", str(tmp_path / "ckpt")), name="restart",
    )  # fmt: skip
    try:
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        assert check(cuda.cuPointerGetAttribute(ORDINAL, on1)) == 1
        assert check(cuda.cuPointerGetAttribute(ORDINAL, on0)) == 0
        out = bytearray(3000)
        check(cuda.cuMemcpyDtoH(out, on1, 3000))
        assert bytes(out) == b"one" * 1000
        check(cuda.cuCtxSetCurrent(ctx1))
        assert check(cuda.cuCtxGetCacheConfig()) == cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_L1
        assert cuda.cuCtxEnablePeerAccess(ctx0, 0)[0] == R.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
        got = check(cuda.cuStreamGetAttribute(stream, policy))
        assert int(got.syncPolicy) == int(cuda.CUsynchronizationPolicy.CU_SYNC_POLICY_BLOCKING_SYNC)
    finally:
        restarted.close()


def test_a_device_reset_ends_its_peer_access(conn: cricket_client.Connection) -> None:
    check(cudart.cudaSetDevice(1))
    check(cudart.cudaDeviceEnablePeerAccess(0, 0))
    check(cudart.cudaDeviceReset())
    check(cudart.cudaDeviceEnablePeerAccess(0, 0))  # not "already enabled": the reset ended it


def test_workers_model_the_same_devices(tmp_path: Path) -> None:
    """Under process isolation every worker builds its backend with --sim-devices too."""
    if BACKEND != "sim":
        pytest.skip("--sim-devices is an option of the sim backend")
    with running_server(tmp_path, *_options(), isolation="process") as srv:
        connection = cricket_client.connect(srv.address, make_default=True)
        try:
            check(cuda.cuInit(0))
            assert check(cuda.cuDeviceGetCount()) == 2
            assert check(cuda.cuDeviceCanAccessPeer(cuda.CUdevice(1), cuda.CUdevice(0))) == 1
        finally:
            connection.close()
