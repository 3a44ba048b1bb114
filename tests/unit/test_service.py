"""CricketService over a fake backend, called as the RPC dispatcher calls it (no sockets)."""

from __future__ import annotations

import logging

import pytest
from test_session_fakes import ARENA_BASE, ARENA_SIZE, FakeSession, make_manager

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_NOT_READY,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_UNKNOWN,
    CudaError,
)
from cricket_server.service import CricketService
from cricket_xdr.rpc.auth import Credential
from cricket_xdr.rpc.dispatch import CallContext, ConnectionInfo
from rpc_spec import cricket_rpc as proto


class Client:
    """One connection's worth of calls straight into the service."""

    _ids = 0

    def __init__(self, service: CricketService) -> None:
        Client._ids += 1
        self.service = service
        self.connection = ConnectionInfo(Client._ids, ("127.0.0.1", 40000 + Client._ids))
        self.ctx = CallContext(
            1, proto.CRICKET_PROG, 1, 0, Credential(0, b"", None), self.connection
        )

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        method = getattr(self.service, name)
        return lambda *args: method(self.ctx, *args)

    def hello(self, version: int = 1, token: bytes = b"") -> proto.hello_result:
        return self.HELLO(proto.hello_args(version, token, "test client"))

    def ready(self) -> proto.hello_ok:
        ok = self.hello().value
        assert self.CU_INIT(0) == 0
        handle = self.CU_DEVICE_PRIMARY_CTX_RETAIN(0).value
        assert self.CU_CTX_SET_CURRENT(handle) == 0
        return ok

    def drop(self) -> None:
        self.connection.run_close_callbacks()


@pytest.fixture
def service() -> CricketService:
    return CricketService(make_manager()[0])


def test_hello_answers_session_and_arena(service: CricketService) -> None:
    client = Client(service)
    result = client.hello(version=5)
    assert result.err == 0
    ok = result.value
    assert ok.protocol_version == 2  # the highest both speak
    assert ok.backend == "fake" and ok.driver_version == 13000 and ok.runtime_version == 13000
    assert len(ok.session_token) == 32 and ok.session_id != 0
    assert (ok.va_base, ok.va_size) == (ARENA_BASE, ARENA_SIZE)
    assert client.hello(1, ok.session_token).value.session_id == ok.session_id
    other = Client(service).hello().value
    assert other.session_id != ok.session_id and other.session_token != ok.session_token


def test_hello_refusals(service: CricketService) -> None:
    client = Client(service)
    result = client.hello(version=0)
    assert result.err == CUDA_ERROR_NOT_SUPPORTED and result.value is None
    assert "protocol version 0" in client.GET_ERROR_MESSAGE()
    assert client.hello(token=b"x" * 32).err == CUDA_ERROR_INVALID_VALUE
    assert client.hello().err == 0
    assert client.hello().err == CUDA_ERROR_INVALID_VALUE  # a second session on one connection


def test_hello_survives_a_failing_backend(service: CricketService) -> None:
    def broken() -> None:
        raise OSError("no device nodes")

    service.manager.backend.open_session = broken  # type: ignore[method-assign]
    client = Client(service)
    assert client.hello().err == CUDA_ERROR_UNKNOWN
    assert "OSError: no device nodes" in client.GET_ERROR_MESSAGE()


def test_cuda_calls_before_hello_or_cuinit_are_not_initialized(service: CricketService) -> None:
    client = Client(service)
    assert client.CU_INIT(0) == CUDA_ERROR_NOT_INITIALIZED
    assert client.CU_MEM_ALLOC(16).err == CUDA_ERROR_NOT_INITIALIZED
    assert "call HELLO first" in client.GET_ERROR_MESSAGE()
    client.hello()
    assert client.CU_DEVICE_GET_COUNT().err == CUDA_ERROR_NOT_INITIALIZED
    assert client.CU_DRIVER_GET_VERSION().value == 13000
    assert client.CU_INIT(0) == 0
    assert client.CU_DEVICE_GET_COUNT().value == 2
    assert client.CU_MEM_ALLOC(16).err == CUDA_ERROR_INVALID_CONTEXT
    assert client.GET_ERROR_MESSAGE() == "cuMemAlloc: no current context"


def test_devices(service: CricketService) -> None:
    client = Client(service)
    client.ready()
    assert client.CU_DEVICE_GET(1).value == 1
    assert client.CU_DEVICE_GET(2).err == 101
    assert client.CU_DEVICE_GET_NAME(1).value == "Fake GPU 1"
    assert client.CU_DEVICE_GET_ATTRIBUTE(16, 1).value == 161
    assert client.CU_DEVICE_GET_UUID(1).value == b"\x01" * 16
    assert client.CU_DEVICE_GET_PCI_BUS_ID(0).value == "0000:00:00.0"
    assert client.CU_DEVICE_TOTAL_MEM(0).value == 1 << 30
    state = client.CU_DEVICE_PRIMARY_CTX_GET_STATE(0).value
    assert (state.flags, state.active) == (0, 1)
    assert client.CU_CTX_GET_DEVICE().value == 0
    pair = client.CU_CTX_GET_STREAM_PRIORITY_RANGE().value
    assert (pair.first, pair.second) == (0, -5)


def test_memory_round_trip_and_attributes(service: CricketService) -> None:
    client = Client(service)
    client.ready()
    ptr = client.CU_MEM_ALLOC(1024).value
    assert client.CU_MEMCPY_HTOD(ptr, b"hello world") == 0
    assert bytes(client.CU_MEMCPY_DTOH(ptr, 11).value) == b"hello world"
    assert client.CU_MEMSET(ptr, 0x41, 1, 5) == 0
    assert bytes(client.CU_MEMCPY_DTOH_ASYNC(ptr, 6, 0).value) == b"AAAAA "
    assert client.CU_MEMCPY_DTOH(ptr + 1000, 100).err == CUDA_ERROR_INVALID_VALUE
    assert "runs past the end" in client.GET_ERROR_MESSAGE()
    rng = client.CU_MEM_GET_ADDRESS_RANGE(ptr + 5).value
    assert (rng.base, rng.size) == (ptr, 1024)
    attrs = client.CU_POINTER_GET_ATTRIBUTES([2, 4, 9], ptr).value
    assert [(a.attribute, a.err, a.value) for a in attrs] == [
        (2, 0, 2),
        (4, CUDA_ERROR_INVALID_VALUE, 0),
        (9, 0, 0),
    ]
    pitch = client.CU_MEM_ALLOC_PITCH(1000, 2, 4).value
    assert pitch.pitch == 1024
    info = client.CU_MEM_GET_INFO().value
    assert info.total == 1 << 30 and info.free < info.total
    assert client.CU_MEM_FREE(ptr) == 0
    assert client.CU_MEM_FREE(ptr) == CUDA_ERROR_INVALID_VALUE


def test_modules_launches_streams_events(service: CricketService) -> None:
    client = Client(service)
    client.ready()
    bad = client.CU_MODULE_LOAD_DATA(b"garbage", [])
    assert bad.err == 200 and "not a module image" in bad.value
    loaded = client.CU_MODULE_LOAD_DATA(b"MOD", [proto.option_value(0, 32)])
    assert loaded.err == 0
    module = loaded.value.handle
    func = client.CU_MODULE_GET_FUNCTION(module, "add").value
    params = client.CU_FUNC_GET_PARAM_INFO(func).value
    assert [(p.offset, p.size) for p in params] == [(0, 8), (8, 8), (16, 4)]
    stream = client.CU_STREAM_CREATE(0).value
    args = proto.launch_args(func, 1, 1, 1, 32, 1, 1, 0, stream, bytes(8))
    assert client.CU_LAUNCH_KERNEL(args) == CUDA_ERROR_INVALID_VALUE
    assert client.GET_ERROR_MESSAGE() == (
        f"cuLaunchKernel: function {func:#x} takes 20 bytes of parameters, got 8 (kernel add)"
    )
    args.params = bytes(20)
    assert client.CU_LAUNCH_KERNEL(args) == 0
    assert client.CU_STREAM_QUERY(stream) == 0
    event = client.CU_EVENT_CREATE(0).value
    assert client.CU_EVENT_RECORD(event, stream) == 0
    assert client.CU_EVENT_QUERY(event) == CUDA_ERROR_NOT_READY
    assert client.CU_EVENT_ELAPSED_TIME(event, event).value == 1.5
    assert client.CU_STREAM_WAIT_EVENT(stream, event, 0) == 0
    assert client.CU_STREAM_SYNCHRONIZE(event) == CUDA_ERROR_INVALID_HANDLE
    assert client.CU_FUNC_GET_ATTRIBUTE(0, func).value == 100
    assert client.CU_OCCUPANCY_MAX_ACTIVE_BLOCKS_PER_MULTIPROCESSOR(func, 256, 0, 0).value == 8
    assert client.CU_OCCUPANCY_MAX_POTENTIAL_BLOCK_SIZE(func, 0, 0, 0).value.second == 1024
    assert client.CU_MODULE_UNLOAD(module) == 0
    assert client.CU_MODULE_GET_FUNCTION(module, "add").err == CUDA_ERROR_INVALID_HANDLE


def test_backend_crash_is_unknown_and_the_connection_lives(
    service: CricketService, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client(service)
    client.ready()
    session = client.connection.state["cricket"].session
    assert isinstance(session.bsession, FakeSession)
    session.bsession.fail_next = ZeroDivisionError("boom")
    caplog.set_level(logging.ERROR, "cricket_server.service")
    assert client.CU_CTX_SYNCHRONIZE() == CUDA_ERROR_UNKNOWN
    assert "ZeroDivisionError: boom" in client.GET_ERROR_MESSAGE()
    assert "cuCtxSynchronize failed" in caplog.text
    session.bsession.fail_next = CudaError(700, "cuCtxSynchronize: an illegal address")
    assert client.CU_CTX_SYNCHRONIZE() == 700
    assert client.CU_CTX_SYNCHRONIZE() == 0


def test_goodbye_and_dropped_connections_free_the_session(service: CricketService) -> None:
    manager = service.manager
    a, b = Client(service), Client(service)
    a.ready()
    b.ready()
    for client in (a, b):
        assert client.CU_MEM_ALLOC(5 << 20).err == 0
    assert manager.arena.free_bytes() < ARENA_SIZE
    assert a.GOODBYE() == 0
    assert a.CU_MEM_ALLOC(16).err == CUDA_ERROR_NOT_INITIALIZED
    a.drop()  # the close callback after GOODBYE does nothing more
    assert len(manager.sessions()) == 1
    b.drop()
    assert manager.sessions() == []
    assert manager.arena.free_bytes() == ARENA_SIZE


def test_error_message_is_bounded(service: CricketService) -> None:
    client = Client(service)
    client.ready()
    session = client.connection.state["cricket"].session
    session.last_error = "x" * 5000
    assert len(client.GET_ERROR_MESSAGE().encode()) <= proto.MAX_NAME
