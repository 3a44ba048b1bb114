"""Accepting survives what one client can cause: no thread for a connection (that connection
alone is refused) and a full descriptor table (the listener rests instead of spinning, logs
rate-limited, and serves again once descriptors are free)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import psutil
import pytest
from server_harness import running_server, wait_for

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import ConnectionLost
from cricket_xdr.rpc.server import RpcServer
from rpc_spec import cricket_rpc as proto

E = cuda.CUresult
PROGRAM = (proto.CRICKET_PROG, proto.CRICKET_V1)


def ping(address: tuple[str, int]) -> bool:
    with RpcClient(address, timeout=30) as rpc:
        rpc.call(*PROGRAM, 0, b"")
    return True


def test_a_connection_without_a_thread_is_refused_and_the_next_served(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    start = threading.Thread.start
    failures = [1]

    def start_or_fail(thread: threading.Thread) -> None:
        if thread.name.startswith("rpc-connection") and failures:
            failures.pop()
            raise RuntimeError("can't start new thread")
        start(thread)

    with RpcServer([proto.CRICKET_V1_Server()]) as server:
        address = server.listen_tcp("127.0.0.1", 0)
        server.start()
        monkeypatch.setattr(threading.Thread, "start", start_or_fail)
        with pytest.raises(ConnectionLost):
            ping(address)
        assert not failures
        assert ping(address)  # the accept thread lives on
        assert ping(address)
    assert "no thread to serve it" in caplog.text


def test_out_of_descriptors_rests_logs_little_and_recovers(tmp_path: Path) -> None:
    nofile = ("prlimit", "--nofile=64:64", "--")
    with running_server(tmp_path, isolation="thread", backend="sim", prefix=nofile) as srv:
        host, port = srv.address.rsplit(":", 1)
        proc = psutil.Process(srv.process.pid)
        clients: list[socket.socket] = []
        try:
            for _ in range(120):  # more than the server can accept
                clients.append(socket.create_connection((host, int(port)), timeout=30))
            wait_for(lambda: "Too many open files" in srv.log(), "accept to fail with EMFILE")
            log_size = len(srv.log())
            cpu = proc.cpu_times()
            time.sleep(4.0)
            used = sum(proc.cpu_times()[:2]) - sum(cpu[:2])
            assert used < 1.0, f"the server used {used:.2f} s of CPU in 4 s while out of fds"
            assert len(srv.log()) - log_size < 2000, srv.log()[-3000:]
        finally:
            for sock in clients:
                sock.close()
        conn = wait_for(lambda: _session(srv.address), "the server to serve again")
        with conn.active():
            _, ptr = cuda.cuMemAlloc(4096)
            assert cuda.cuMemFree(ptr) == (E.CUDA_SUCCESS,)
        conn.close()
        assert srv.process.poll() is None


def _session(address: str) -> cricket_client.Connection | None:
    try:
        conn = cricket_client.connect(address, make_default=False, timeout=10)
    except Exception:
        return None
    with conn.active():
        if cuda.cuInit(0) != (E.CUDA_SUCCESS,):
            conn.close()
            return None
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        cuda.cuCtxSetCurrent(ctx)
    return conn
