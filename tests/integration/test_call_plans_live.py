"""Over a live connection, procedures with call plans behave as the codecs made them behave:
arguments of the wrong size are GARBAGE_ARGS, a result the codec refuses is SYSTEM_ERR, and
the client's `call` path reports failures and asynchronous errors as `sync` does."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest
from test_client_fakes import FakeCricket, FakeServer

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import GarbageArgs, SystemErr
from cricket_xdr.xdr import XdrEncodeError
from rpc_spec import cricket_rpc as p

PROG, VERS = p.CRICKET_PROG, p.CRICKET_V1


class Planned(FakeCricket):
    """FakeCricket with the measured queries; records the arguments its handlers get."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[Any, ...]] = []
        self.mem_info: Any = p.mem_info_result(0, p.mem_info(free=3 << 30, total=8 << 30))

    def CU_DEVICE_GET_ATTRIBUTE(self, ctx: Any, attrib: int, dev: int) -> p.int_result:
        self.seen.append((attrib, dev))
        if dev != 0:
            return p.int_result(101, None)  # CUDA_ERROR_INVALID_DEVICE
        return p.int_result(0, attrib * 10)

    def CU_MEM_GET_INFO(self, ctx: Any) -> p.mem_info_result:
        return self.mem_info

    def CU_CTX_GET_DEVICE(self, ctx: Any) -> p.int_result:
        return p.int_result(0, 0)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer(Planned())
    yield srv
    srv.stop()


@pytest.fixture
def rpc(server: FakeServer) -> Iterator[RpcClient]:
    host, port = server.address.rsplit(":", 1)
    client = RpcClient((host, int(port)), timeout=30)
    yield client
    client.close()


def test_fixed_arguments_reach_the_handler_positionally(server: FakeServer, rpc: RpcClient) -> None:
    body = rpc.call(PROG, VERS, p.CU_DEVICE_GET_ATTRIBUTE, struct.pack(">ii", 16, 0))
    assert bytes(body) == struct.pack(">ii", 0, 160)
    assert server.service.seen == [(16, 0)]


@pytest.mark.parametrize("size", [0, 4, 7, 9, 12])
def test_arguments_of_another_size_are_garbage(server: FakeServer, rpc: RpcClient, size: int) -> None:
    with pytest.raises(GarbageArgs):
        rpc.call(PROG, VERS, p.CU_DEVICE_GET_ATTRIBUTE, b"\1" * size)
    assert server.service.seen == []
    # the connection goes on
    assert bytes(rpc.call(PROG, VERS, p.CU_DEVICE_GET_ATTRIBUTE, struct.pack(">ii", 1, 0)))


def test_a_result_the_codec_refuses_is_a_system_error(server: FakeServer, rpc: RpcClient) -> None:
    server.service.mem_info = p.mem_info_result(0, None)  # success without its value
    with pytest.raises(SystemErr):
        rpc.call(PROG, VERS, p.CU_MEM_GET_INFO, b"")
    server.service.mem_info = p.mem_info_result(0, p.mem_info(free=-1, total=0))  # not unsigned
    with pytest.raises(SystemErr):
        rpc.call(PROG, VERS, p.CU_MEM_GET_INFO, b"")


def test_driver_queries_through_plans(server: FakeServer) -> None:
    with cricket_client.connect(server.address, make_default=False) as conn, conn.active():
        assert cuda.cuMemGetInfo() == (cuda.CUresult.CUDA_SUCCESS, 3 << 30, 8 << 30)
        attr = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        err, value = cuda.cuDeviceGetAttribute(attr, cuda.CUdevice(0))
        assert err == cuda.CUresult.CUDA_SUCCESS and value == int(attr) * 10
        assert cuda.cuDeviceGetAttribute(attr, 1) == (cuda.CUresult.CUDA_ERROR_INVALID_DEVICE, None)
        err, dev = cuda.cuCtxGetDevice()
        assert err == cuda.CUresult.CUDA_SUCCESS and int(dev) == 0
        # a value out of range fails in the client, as through the codecs, and is not counted
        counted = conn.replay_log.seq
        with pytest.raises(XdrEncodeError, match="int: cannot encode 1099511627776"):
            cuda.cuDeviceGetAttribute(attr, 2**40)
        assert conn.replay_log.seq == counted
        server.service.mem_info = p.mem_info_result(2, None)
        assert cuda.cuMemGetInfo() == (cuda.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None, None)
