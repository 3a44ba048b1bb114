"""Bulk data paths (D8) end to end: every path moves bytes exactly, keeps stream order, and
falls back to the RPC when it cannot be used. Runs against servers of its own in both
isolation modes (thread and process), on the backend under test."""

from __future__ import annotations

import ctypes
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from behaviour_helpers import BACKEND, KERNELS, SUCCESS, check, open_session
from server_harness import running_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client.datapath import DataPaths, Limits, Mode
from cricket_client.datapath import Path as DataPath
from cricket_client.datapath import shm as client_shm

SIZES = [0, 1, 3, 4097, 64 << 20]
MODES = [Mode.RPC, Mode.SHM, Mode.TCP, Mode.AUTO]


@pytest.fixture(scope="module", params=["thread", "process"])
def datapath_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp(f"datapath-{request.param}")
    with running_server(folder, backend=BACKEND, isolation=request.param) as server:
        yield server.address


def _session(address: str, mode: Mode) -> cricket_client.Connection:
    conn = open_session(address, make_default=True)
    conn.datapaths = DataPaths(conn, mode=mode)
    return conn


@pytest.fixture(params=MODES, ids=lambda m: m.value)
def conn(
    request: pytest.FixtureRequest, datapath_server: str
) -> Iterator[cricket_client.Connection]:
    c = _session(datapath_server, request.param)
    yield c
    c.close()


def _expected_path(mode: Mode, size: int) -> DataPath:
    """The path of a DtoH of `size` bytes (the copy whose path is checked)."""
    if mode is Mode.AUTO:
        return DataPath.SHM if size >= Limits().dtoh_small else DataPath.RPC
    return DataPath(mode.value)


@pytest.mark.parametrize("size", SIZES)
def test_copies_are_bit_exact_both_ways(conn: cricket_client.Connection, size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    ptr = check(cuda.cuMemAlloc(max(size, 1)))
    out = np.zeros(size, dtype=np.uint8)
    assert cuda.cuMemcpyHtoD(ptr, data, size) == (SUCCESS,)
    assert cuda.cuMemcpyDtoH(out, ptr, size) == (SUCCESS,)
    assert np.array_equal(out, data)
    if size:
        assert conn.datapaths is not None
        assert conn.datapaths.last_path is _expected_path(conn.datapaths.mode, size)
    check(cuda.cuMemFree(ptr))


@pytest.mark.parametrize("size", [3, 4097, 64 << 20])
def test_async_copies_keep_stream_order(conn: cricket_client.Connection, size: int) -> None:
    module = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
    fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
    stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    words = (size + 3) // 4
    ptr = check(cuda.cuMemAlloc(words * 4))
    first = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
    second = np.random.default_rng(2).integers(0, 256, size, dtype=np.uint8)
    after_fill = np.zeros(size, dtype=np.uint8)
    after_second = np.zeros(size, dtype=np.uint8)
    check(cuda.cuMemcpyHtoDAsync(ptr, first, size, stream))
    args = ((ptr, 0xA5A5A5A5, words), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuLaunchKernel(fill, (words + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
    check(cuda.cuMemcpyDtoHAsync(after_fill, ptr, size, stream))
    check(cuda.cuMemcpyHtoDAsync(ptr, second, size, stream))
    check(cuda.cuMemcpyDtoHAsync(after_second, ptr, size, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(after_fill == 0xA5)
    assert np.array_equal(after_second, second)
    check(cuda.cuMemFree(ptr))
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuModuleUnload(module))


@pytest.mark.parametrize("mode", [Mode.SHM, Mode.TCP])
def test_a_bad_device_address_is_the_cuda_error(datapath_server: str, mode: Mode) -> None:
    conn = _session(datapath_server, mode)
    try:
        ptr = check(cuda.cuMemAlloc(1 << 20))
        data = bytes(2 << 20)
        (err,) = cuda.cuMemcpyHtoD(ptr, data, len(data))  # past the end of the allocation
        assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
        out = bytearray(2 << 20)
        (err,) = cuda.cuMemcpyDtoH(out, ptr, len(out))
        assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
        # the path still works afterwards
        check(cuda.cuMemcpyHtoD(ptr, b"\x07" * 4097, 4097))
        back = bytearray(4097)
        check(cuda.cuMemcpyDtoH(back, ptr, 4097))
        assert back == b"\x07" * 4097
        check(cuda.cuMemFree(ptr))
    finally:
        conn.close()


def test_a_client_that_cannot_open_the_segment_falls_back(
    datapath_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a client on another host: the server's /dev/shm file is not there to open."""
    monkeypatch.setattr(client_shm, "SHM_DIR", tmp_path)
    conn = _session(datapath_server, Mode.AUTO)
    try:
        size = 32 << 20
        data = np.random.default_rng(5).integers(0, 256, size, dtype=np.uint8)
        ptr = check(cuda.cuMemAlloc(size))
        check(cuda.cuMemcpyHtoD(ptr, data, size))
        out = np.zeros_like(data)
        check(cuda.cuMemcpyDtoH(out, ptr, size))
        assert np.array_equal(out, data)
        assert conn.datapaths is not None
        assert conn.datapaths.last_path is DataPath.TCP  # large and not on the same host
        assert not conn.datapaths.capabilities().shm
        check(cuda.cuMemFree(ptr))
    finally:
        conn.close()


def test_broken_data_channels_fall_back_to_the_rpc(datapath_server: str) -> None:
    conn = _session(datapath_server, Mode.TCP)
    try:
        ptr = check(cuda.cuMemAlloc(1 << 20))
        check(cuda.cuMemcpyHtoD(ptr, b"\x01" * (1 << 20), 1 << 20))
        paths = conn.datapaths
        assert paths is not None and paths.last_path is DataPath.TCP
        for sock in paths._channels.socks:  # the network drops the data connections
            sock.close()
        data = np.random.default_rng(9).integers(0, 256, 1 << 20, dtype=np.uint8)
        check(cuda.cuMemcpyHtoD(ptr, data, data.size))
        assert paths.last_path is DataPath.RPC
        out = np.zeros_like(data)
        check(cuda.cuMemcpyDtoH(out, ptr, out.size))
        assert np.array_equal(out, data)
        check(cuda.cuMemFree(ptr))
    finally:
        conn.close()


def test_the_segment_file_is_unlinked_once_mapped(datapath_server: str) -> None:
    """Nothing is left in /dev/shm however the processes end: both ends keep their mapping."""
    conn = _session(datapath_server, Mode.SHM)
    try:
        ptr = check(cuda.cuMemAlloc(4097))
        check(cuda.cuMemcpyHtoD(ptr, b"x" * 4097, 4097))
        segment = conn.datapaths._segment if conn.datapaths is not None else None
        assert segment is not None
        assert not (client_shm.SHM_DIR / segment.name).exists()
        out = bytearray(4097)
        check(cuda.cuMemcpyDtoH(out, ptr, 4097))
        assert out == b"x" * 4097
    finally:
        conn.close()


def test_a_data_channel_without_the_sessions_secret_is_refused(datapath_server: str) -> None:
    from cricket_client.datapath.channels import ClientChannels
    from rpc_spec.data_channel import HELLO_FORMAT

    conn = _session(datapath_server, Mode.RPC)
    try:
        err, reply = conn.sync("DATA_TCP_OFFER", "127.0.0.1", 1)
        assert err == 0
        port, secret = int(reply.value.port), bytes(reply.value.secret)
        wrong = bytes(b ^ 0xFF for b in secret)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as intruder:
            intruder.sendall(HELLO_FORMAT.pack(wrong, 0))
            assert intruder.recv(1) == b""  # the server closed it
        channels = ClientChannels("127.0.0.1", port, secret, 1)
        ptr = check(cuda.cuMemAlloc(4097))
        data = bytes(range(256)) * 16 + b"!"
        sends = channels.start_send(memoryview(data))
        err, _ = conn.sync("DATA_TCP_HTOD", int(ptr), len(data), 1, 0, False)
        assert err == 0 and all(f.exception() is None for f in sends)
        out = bytearray(len(data))
        check(cuda.cuMemcpyDtoH(out, ptr, len(out)))
        assert out == data
        channels.close()
    finally:
        conn.close()


def test_a_data_channel_transfer_larger_than_the_server_buffers_is_refused(
    datapath_server: str,
) -> None:
    conn = _session(datapath_server, Mode.RPC)
    try:
        err, _ = conn.sync("DATA_TCP_HTOD", 0, 1 << 40, 1, 0, False)
        assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
        assert "at most 268435456" in cricket_client.last_error_message()
    finally:
        conn.close()
