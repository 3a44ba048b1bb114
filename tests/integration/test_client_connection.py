"""The client against a small in-memory server: sessions, copies, pipelining, launches."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator

import numpy as np
import pytest
from test_client_fakes import FAULTY, SAXPY, VA_BASE, FakeServer, goodbye_counter

import cricket_client
from cricket_client import driver as cuda
from cricket_client.connection import parse_address

SUCCESS = cuda.CUresult.CUDA_SUCCESS


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    yield srv
    srv.stop()


@pytest.fixture
def conn(server: FakeServer) -> Iterator[cricket_client.Connection]:
    c = cricket_client.connect(server.address)
    yield c
    c.close()


def _alloc(n: int) -> cuda.CUdeviceptr:
    err, ptr = cuda.cuMemAlloc(n)
    assert err == SUCCESS
    return ptr


def test_parse_address() -> None:
    assert parse_address("127.0.0.1:7070") == ("127.0.0.1", 7070)
    assert parse_address("[::1]:7070") == ("::1", 7070)
    assert parse_address("unix:/tmp/x.sock") == "unix:/tmp/x.sock"
    with pytest.raises(ValueError, match="host:port"):
        parse_address("nohost")


def test_hello_keeps_session_and_va_range(conn: cricket_client.Connection) -> None:
    assert conn.info.session_id == 7 and conn.info.session_token == b"t" * 16
    assert conn.is_device_address(VA_BASE) and not conn.is_device_address(VA_BASE - 1)


def test_lazy_default_from_environment(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cricket_client.ADDRESS_ENV, server.address)
    goodbyes = goodbye_counter(server.service)
    assert cuda.cuInit(0) == (SUCCESS,)
    conn = cricket_client.get_connection()
    assert conn.address == server.address
    conn.close()
    assert goodbyes == [1]


def test_no_address_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cricket_client.ADDRESS_ENV, raising=False)
    with pytest.raises(cricket_client.NotConnectedError, match="REMOTE_GPU_ADDRESS"):
        cricket_client.Connection()


def test_device_name_is_nul_padded(conn: cricket_client.Connection) -> None:
    assert cuda.cuDeviceGetName(12, 0) == (SUCCESS, b"Fake GPU\0\0\0\0")
    assert cuda.cuDeviceGetName(12, 3) == (cuda.CUresult.CUDA_ERROR_INVALID_DEVICE, None)


@pytest.mark.parametrize(
    "make_src",
    [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8).copy(),
     lambda b: ctypes.create_string_buffer(b, len(b))],
)
def test_copies_accept_every_host_buffer(conn: cricket_client.Connection, make_src) -> None:
    data = bytes(range(256)) * 3
    src = make_src(data)
    ptr = _alloc(len(data))
    assert cuda.cuMemcpyHtoD(ptr, src, len(data)) == (SUCCESS,)
    out = bytearray(len(data))
    assert cuda.cuMemcpyDtoH(out, ptr, len(data)) == (SUCCESS,)
    assert out == data


def test_integer_host_addresses(conn: cricket_client.Connection) -> None:
    src = np.arange(100, dtype=np.int32)
    dst = np.zeros_like(src)
    ptr = _alloc(src.nbytes)
    assert cuda.cuMemcpyHtoD(ptr, src.ctypes.data, src.nbytes) == (SUCCESS,)
    assert cuda.cuMemcpyDtoH(dst.ctypes.data, ptr, src.nbytes) == (SUCCESS,)
    assert (dst == src).all()


def test_large_copies_travel_in_chunks(conn: cricket_client.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda, "COPY_CHUNK", 1000)
    data = np.random.default_rng(1).integers(0, 255, 4097, dtype=np.uint8)
    ptr = _alloc(4097)
    assert cuda.cuMemcpyHtoD(ptr, data, 4097) == (SUCCESS,)
    out = np.zeros_like(data)
    assert cuda.cuMemcpyDtoHAsync(out, ptr, 4097, 0) == (SUCCESS,)
    assert (out == data).all()


def test_memcpy_decides_direction_from_the_va_range(conn: cricket_client.Connection) -> None:
    a, b = _alloc(64), _alloc(64)
    src = np.arange(16, dtype=np.uint32)
    out = np.zeros_like(src)
    assert cuda.cuMemcpy(a, src.ctypes.data, 64) == (SUCCESS,)
    assert cuda.cuMemcpy(b, a, 64) == (SUCCESS,)
    assert cuda.cuMemcpyAsync(out.ctypes.data, b, 64, cuda.CU_STREAM_LEGACY) == (SUCCESS,)
    assert (out == src).all()
    copy = np.zeros_like(src)
    assert cuda.cuMemcpy(copy.ctypes.data, src.ctypes.data, 64) == (SUCCESS,)
    assert (copy == src).all()


def test_async_copy_takes_the_bytes_at_call_time(conn: cricket_client.Connection) -> None:
    buf = bytearray(b"A" * 32)
    ptr = _alloc(32)
    assert cuda.cuMemcpyHtoDAsync(ptr, buf, 32, 0) == (SUCCESS,)
    buf[:] = b"B" * 32
    out = bytearray(32)
    assert cuda.cuMemcpyDtoH(out, ptr, 32) == (SUCCESS,)
    assert out == b"A" * 32


@pytest.mark.parametrize(("fn", "width", "value"), [("cuMemsetD8", 1, 0xAB), ("cuMemsetD16", 2, 0xABCD), ("cuMemsetD32", 4, 0xDEADBEEF)])
def test_memset_widths(conn: cricket_client.Connection, fn: str, width: int, value: int) -> None:
    ptr = _alloc(64)
    assert getattr(cuda, fn)(ptr, value, 64 // width) == (SUCCESS,)
    assert getattr(cuda, fn + "Async")(ptr, value, 8 // width, 0) == (SUCCESS,)
    out = bytearray(64)
    cuda.cuMemcpyDtoH(out, ptr, 64)
    assert out == value.to_bytes(width, "little") * (64 // width)


def test_asynchronous_error_surfaces_at_next_synchronizing_call(
    conn: cricket_client.Connection, server: FakeServer
) -> None:
    args = ((1.0, 0, 0, 1), (ctypes.c_float, None, None, ctypes.c_int))
    assert cuda.cuLaunchKernel(cuda.CUfunction(FAULTY), 1, 1, 1, 1, 1, 1, 0, 0, args, 0) == (SUCCESS,)
    assert cuda.cuCtxSynchronize() == (cuda.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert "illegal address" in cricket_client.last_error_message()
    assert cuda.cuCtxSynchronize() == (SUCCESS,)
    assert conn.pending_count == 0


def test_launch_packs_arguments_and_caches_param_info(
    conn: cricket_client.Connection, server: FakeServer
) -> None:
    x, y = _alloc(16), _alloc(16)
    f = cuda.CUfunction(SAXPY)
    args = ((2.0, x, y, 4), (ctypes.c_float, None, None, ctypes.c_int))
    for _ in range(3):
        assert cuda.cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, 0, args, 0) == (SUCCESS,)
    assert cuda.cuCtxSynchronize() == (SUCCESS,)
    assert server.service.param_info_calls == 1
    sent = server.service.launches[-1]
    assert (sent.grid_x, sent.block_x, sent.stream) == (2, 32, 0)
    assert sent.params[8:16] == int(x).to_bytes(8, "little")
    assert cuda.cuFuncGetParamInfo(f, 3) == (SUCCESS, 24, 4)


def test_launch_with_wrong_argument_count_is_refused_locally(
    conn: cricket_client.Connection, server: FakeServer
) -> None:
    args = ((2.0,), (ctypes.c_float,))
    f = cuda.CUfunction(SAXPY)
    assert cuda.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, 0) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    assert cricket_client.last_error_message() == "cuLaunchKernel: function 0x10 takes 4 parameters, got 1"
    cuda.cuCtxSynchronize()
    assert server.service.launches == []


def test_streams_map_to_wire_handles(conn: cricket_client.Connection, server: FakeServer) -> None:
    args = ((1.0, 0, 0, 1), (ctypes.c_float, None, None, ctypes.c_int))
    f = cuda.CUfunction(SAXPY)
    for stream in (None, 0, cuda.CU_STREAM_LEGACY, cuda.CU_STREAM_PER_THREAD, cuda.CUstream(0x55)):
        cuda.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, args, 0)
    cuda.cuCtxSynchronize()
    assert [la.stream for la in server.service.launches] == [0, 0, 0, 2, 0x55]


def test_jit_log_buffers_are_filled(conn: cricket_client.Connection, server: FakeServer) -> None:
    info, error = bytearray(32), bytes(bytearray(b" " * 32))  # bytes are written in place too
    opts = [cuda.CUjit_option.CU_JIT_INFO_LOG_BUFFER, cuda.CUjit_option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            cuda.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, cuda.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    err, mod = cuda.cuModuleLoadDataEx(b"// ptx", 4, opts, [info, 32, error, 32])
    assert (err, mod) == (SUCCESS, cuda.CUmodule(5))
    assert info.startswith(b"info: 1 kernel\0")
    err, mod = cuda.cuModuleLoadDataEx(b"junk", 4, opts, [info, 32, error, 32])
    assert (err, mod) == (cuda.CUresult.CUDA_ERROR_INVALID_IMAGE, None)
    assert error.startswith(b"error: not an image\0")
    sent_options = [o.option for o in server.service.loads[0][1]]
    assert sent_options == [opts[1], opts[3]]  # sizes travel, host pointers do not


def test_module_image_from_an_address_is_read_to_its_nul(
    conn: cricket_client.Connection, server: FakeServer
) -> None:
    ptx = np.frombuffer(b"// ptx text\0garbage", dtype=np.uint8)
    assert cuda.cuModuleLoadData(ptx.ctypes.data)[0] == SUCCESS
    assert server.service.loads[-1][0] == b"// ptx text\0"


def test_pointer_attributes(conn: cricket_client.Connection) -> None:
    ptr = _alloc(256)
    inner = cuda.CUdeviceptr(int(ptr) + 16)
    attr = cuda.CUpointer_attribute
    assert cuda.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inner) == (SUCCESS, ptr)
    err, values = cuda.cuPointerGetAttributes(2, [attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, attr.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR], inner)
    assert (err, values) == (SUCCESS, [int(cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE), ptr])


def test_occupancy_callback_is_not_supported(conn: cricket_client.Connection) -> None:
    result = cuda.cuOccupancyMaxPotentialBlockSize(cuda.CUfunction(SAXPY), lambda n: 0, 0, 0)
    assert result == (cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED, None, None)
    assert "blockSizeToDynamicSMemSize" in cricket_client.last_error_message()


def test_active_connection_overrides_default(server: FakeServer) -> None:
    first = cricket_client.connect(server.address)
    second = cricket_client.connect(server.address, make_default=False)
    try:
        assert cricket_client.get_connection() is first
        with second.active():
            assert cricket_client.get_connection() is second
        assert cricket_client.get_connection() is first
    finally:
        second.close()
        first.close()


def test_deferred_error_survives_a_full_pipeline(
    conn: cricket_client.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cricket_client.pipeline.MAX_PENDING", 4)
    args = ((1.0, 0, 0, 1), (ctypes.c_float, None, None, ctypes.c_int))
    cuda.cuLaunchKernel(cuda.CUfunction(FAULTY), 1, 1, 1, 1, 1, 1, 0, 0, args, 0)
    for _ in range(20):
        assert cuda.cuLaunchKernel(cuda.CUfunction(SAXPY), 1, 1, 1, 1, 1, 1, 0, 0, args, 0) == (SUCCESS,)
    assert conn.pending_count <= 5
    assert cuda.cuCtxSynchronize() == (cuda.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,)


def test_lost_server_raises_an_rpc_error_and_close_still_works() -> None:
    from cricket_xdr.rpc.errors import ConnectionLost

    srv = FakeServer()
    conn = cricket_client.connect(srv.address, reconnect_deadline=0.5)
    srv.stop()
    with pytest.raises(ConnectionLost, match="no server took it back within 0.5 s") as lost:
        cuda.cuInit(0)  # tries to reconnect for 0.5 s: nothing listens there any more
    assert srv.address in str(lost.value)
    conn.close()
    assert conn.closed


def test_drain_sends_gathered_launches_and_waits_for_them(
    server: FakeServer, conn: cricket_client.Connection
) -> None:
    args = ((2.0, 0x1000, 0x2000, 4), (ctypes.c_float, None, None, ctypes.c_int))
    for _ in range(5):
        assert cuda.cuLaunchKernel(cuda.CUfunction(SAXPY), 1, 1, 1, 1, 1, 1, 0, 0, args, 0) == (SUCCESS,)
    assert conn.drain() == 0
    assert len(server.service.launches) == 5
    assert conn.pending_count == 0
