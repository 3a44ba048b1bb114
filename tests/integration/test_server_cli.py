"""`python -m cricket_server` end to end on the sim backend, through the generated client stubs.

Each test starts its own server on a free loopback port (`--listen 127.0.0.1:0`, address read
from `--ready-file`) and stops it; nothing outlives the test.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import click
import pytest
from server_harness import Server, running_server

from cricket_server.backends import make_backend
from cricket_server.backends.cuda import gpu_available
from cricket_server.cli import parse_address, parse_size
from cricket_xdr.rpc.client import RpcClient
from rpc_spec import cricket_rpc as proto

CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_INVALID_HANDLE = 400
STARTUP_LIMIT = 60.0  # seconds a server (or a client child) may take to come up


def client(server: Server) -> tuple[RpcClient, proto.CRICKET_V1_Client]:
    """A connection to `server` (TCP or Unix socket) and the generated stubs on it."""
    if server.address.startswith("unix:"):
        rpc = RpcClient(server.address, timeout=30)
    else:
        host, port = server.address.rsplit(":", 1)
        rpc = RpcClient((host, int(port)), timeout=30)
    return rpc, proto.CRICKET_V1_Client(rpc)


def cli_server(tmp_path: Path, *args: str) -> AbstractContextManager[Server]:
    """`python -m cricket_server ARGS` (the test names --listen/--unix/--isolation) on sim."""
    return running_server(
        tmp_path, *args, "--sim-memory", "1G", "--log-level", "debug",
        backend="sim", isolation=None, listen=None,
    )  # fmt: skip


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with cli_server(tmp_path, "--listen", "127.0.0.1:0") as srv:
        yield srv


def wait_for(condition: Callable[[], bool]) -> None:
    """Wait until `condition()` holds (the server reacts to a dropped client on its own time)."""
    deadline = time.monotonic() + STARTUP_LIMIT
    while not condition():
        assert time.monotonic() < deadline, "the server did not react in time"
        time.sleep(0.05)


def ready_client(c: proto.CRICKET_V1_Client, name: str = "test") -> proto.hello_ok:
    hello = c.HELLO(proto.hello_args(1, b"", name))
    assert hello.err == 0
    assert c.CU_INIT(0) == 0
    ctx = c.CU_DEVICE_PRIMARY_CTX_RETAIN(0)
    assert ctx.err == 0
    assert c.CU_CTX_SET_CURRENT(ctx.value) == 0
    return hello.value


def test_hello_alloc_copy_round_trip(server: Server) -> None:
    rpc, c = client(server)
    with rpc:
        assert c.CU_MEM_ALLOC(64).err == CUDA_ERROR_NOT_INITIALIZED  # before HELLO
        ok = ready_client(c)
        assert ok.backend == "sim" and ok.protocol_version == 1 and len(ok.session_token) == 32
        ptr = c.CU_MEM_ALLOC(1 << 20)
        assert ptr.err == 0 and ok.va_base <= ptr.value < ok.va_base + ok.va_size
        payload = os.urandom(1 << 20)
        assert c.CU_MEMCPY_HTOD(ptr.value, payload) == 0
        assert bytes(c.CU_MEMCPY_DTOH(ptr.value, 1 << 20).value) == payload
        assert c.CU_MEMCPY_DTOH(ptr.value + 100, 1 << 20).err == CUDA_ERROR_INVALID_VALUE
        assert "runs past the end" in c.GET_ERROR_MESSAGE()
        assert c.CU_MEM_FREE(ptr.value) == 0
        assert c.GOODBYE() == 0
    assert f"session {ok.session_id:#x} end (goodbye)" in server.log()


def test_two_clients_are_isolated(server: Server) -> None:
    rpc_a, a = client(server)
    rpc_b, b = client(server)
    with rpc_a, rpc_b:
        ready_client(a, "a")
        ready_client(b, "b")
        ptr = a.CU_MEM_ALLOC(4096).value
        assert a.CU_MEMCPY_HTOD(ptr, b"only a may read this") == 0
        stream = a.CU_STREAM_CREATE(0).value
        assert b.CU_MEMCPY_DTOH(ptr, 20).err == CUDA_ERROR_INVALID_VALUE
        assert b.CU_MEMCPY_HTOD(ptr, b"overwritten by b....") == CUDA_ERROR_INVALID_VALUE
        assert b.CU_MEM_FREE(ptr) == CUDA_ERROR_INVALID_VALUE
        assert b.CU_STREAM_SYNCHRONIZE(stream) == CUDA_ERROR_INVALID_HANDLE
        assert "not owned by this session" in b.GET_ERROR_MESSAGE()
        assert bytes(a.CU_MEMCPY_DTOH(ptr, 20).value) == b"only a may read this"
        assert a.CU_STREAM_SYNCHRONIZE(stream) == 0


CHILD = textwrap.dedent(
    """
    import sys, time
    from cricket_xdr.rpc.client import RpcClient
    from rpc_spec import cricket_rpc as proto
    host, port = sys.argv[1].rsplit(":", 1)
    c = proto.CRICKET_V1_Client(RpcClient((host, int(port))))
    assert c.HELLO(proto.hello_args(1, b"", "doomed")).err == 0
    assert c.CU_INIT(0) == 0
    assert c.CU_CTX_CREATE(0, 0).err == 0
    for _ in range(4):
        assert c.CU_MEM_ALLOC(16 << 20).err == 0
    assert c.CU_STREAM_CREATE(0).err == 0
    print("allocated", flush=True)
    time.sleep(600)
    """
)


def test_killed_client_has_its_memory_freed(server: Server) -> None:
    rpc, c = client(server)
    with rpc:
        ready_client(c, "observer")
        before = c.CU_MEM_GET_INFO().value.free
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, server.address], stdout=subprocess.PIPE, text=True
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "allocated"
            during = c.CU_MEM_GET_INFO().value.free
            assert during <= before - (64 << 20)
        finally:
            child.kill()
            child.wait()
        wait_for(lambda: "end (connection closed)" in server.log())
        assert c.CU_MEM_GET_INFO().value.free == before
    assert "4 allocations" in server.log()


def test_sigterm_frees_sessions_and_exits_zero(tmp_path: Path) -> None:
    with cli_server(tmp_path, "--listen", "127.0.0.1:0") as srv:
        rpc, c = client(srv)
        with rpc:
            ok = ready_client(c)
            assert c.CU_MEM_ALLOC(1000).err == 0
            assert srv.stop(signal.SIGTERM) == 0
    text = srv.log()
    assert f"session {ok.session_id:#x} end" in text and "1 allocations" in text
    assert not (tmp_path / "server.ready").exists()


def test_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "cricket.sock"
    with cli_server(tmp_path, "--unix", str(path)) as srv:
        assert srv.address == f"unix:{path}"
        rpc, c = client(srv)
        with rpc:
            ready_client(c)
            assert c.CU_DEVICE_GET_COUNT().value >= 1
        assert srv.stop(signal.SIGINT) == 0
    assert not path.exists()


def test_address_and_size_parsing() -> None:
    assert parse_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_address("[::1]:28463") == ("::1", 28463)
    assert parse_size("512M") == 512 << 20
    assert parse_size("8GiB") == 8 << 30
    assert parse_size("4096") == 4096
    for bad in ("localhost", ":80", "host:port", "h:70000"):
        with pytest.raises(click.BadParameter):
            parse_address(bad)
    with pytest.raises(click.BadParameter):
        parse_size("lots")


def test_auto_backend_without_a_gpu_is_sim_with_a_notice(caplog: pytest.LogCaptureFixture) -> None:
    if gpu_available():
        pytest.skip("a GPU answers here: auto picks cuda")
    caplog.set_level(logging.WARNING, "cricket_server.backends")
    backend = make_backend("auto", sim_memory=64 << 20)
    try:
        assert backend.name == "sim"
        assert backend.device_total_mem(0) == 64 << 20
        assert "no GPU answers here" in caplog.text
    finally:
        backend.close()
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        make_backend("tpu")


def test_two_tcp_listeners(tmp_path: Path) -> None:
    with cli_server(tmp_path, "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0") as srv:
        line = next(x for x in srv.log().splitlines() if "listening on" in x)
        ports = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", line)]
        assert len(set(ports)) == 2 and srv.address == f"127.0.0.1:{ports[0]}"
        for port in ports:
            with RpcClient(("127.0.0.1", port), timeout=30) as rpc:
                hello = proto.CRICKET_V1_Client(rpc).HELLO(proto.hello_args(1, b"", "t"))
                assert hello.err == 0
        assert srv.stop() == 0


def test_bad_backend_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cricket_server", "--backend", "tpu"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "tpu" in result.stderr
