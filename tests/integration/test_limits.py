"""cricket-server's limits on sim, with thread and process isolation: --max-session-memory,
--max-sessions, --max-record, --idle-timeout, --max-in-flight, and --resume-grace (thread).

Each test starts its own server; exceeding a limit gives CUDA_ERROR_OUT_OF_MEMORY or an RPC
error to that client only, and the server goes on serving.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from server_harness import running_server, wait_for

import cricket_client
from cricket_client import driver as cuda
from cricket_client.reconnect import enable_reconnect
from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import ConnectionLost, RpcError
from rpc_spec import cricket_rpc as proto

E = cuda.CUresult
MODES = ["thread", "process"]


def session(address: str) -> cricket_client.Connection:
    conn = cricket_client.connect(address, make_default=False, timeout=60)
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
    return conn


def hello_refusal(address: str) -> tuple[int, str]:
    """(HELLO's CUresult, GET_ERROR_MESSAGE) from a raw RPC client."""
    host, port = address.rsplit(":", 1)
    with RpcClient((host, int(port)), timeout=30) as rpc:
        stub = proto.CRICKET_V1_Client(rpc)
        reply = stub.HELLO(proto.hello_args(proto.CRICKET_PROTOCOL_VERSION, b"", "limits"))
        return reply.err, stub.GET_ERROR_MESSAGE()


@pytest.mark.parametrize("mode", MODES)
def test_an_allocation_beyond_the_session_quota_is_out_of_memory(
    tmp_path: Path, mode: str
) -> None:
    with running_server(tmp_path, "--max-session-memory", "1M", isolation=mode) as srv:
        conn, other = session(srv.address), session(srv.address)
        with conn.active():
            err, small = cuda.cuMemAlloc(512 << 10)
            assert err == E.CUDA_SUCCESS
            assert cuda.cuMemAlloc(768 << 10) == (E.CUDA_ERROR_OUT_OF_MEMORY, None)
            message = cricket_client.last_error_message()
            assert "quota of 1048576 bytes (--max-session-memory)" in message
            assert "it holds 524288 bytes" in message
            assert cuda.cuMemFree(small) == (E.CUDA_SUCCESS,)
            assert cuda.cuMemAlloc(1 << 20)[0] == E.CUDA_SUCCESS
        with other.active():  # the quota is per session
            assert cuda.cuMemAlloc(1 << 20)[0] == E.CUDA_SUCCESS
        conn.close()
        other.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_hello_beyond_max_sessions_is_refused_with_the_reason(tmp_path: Path, mode: str) -> None:
    with running_server(tmp_path, "--max-sessions", "2", isolation=mode) as srv:
        first, second = session(srv.address), session(srv.address)
        with pytest.raises(cricket_client.HelloRefused, match="CUDA_ERROR_OUT_OF_MEMORY"):
            cricket_client.connect(srv.address, make_default=False, timeout=30)
        err, message = hello_refusal(srv.address)
        assert err == E.CUDA_ERROR_OUT_OF_MEMORY
        assert "(--max-sessions 2)" in message
        with second.active():
            assert cuda.cuMemAlloc(64)[0] == E.CUDA_SUCCESS  # the admitted ones go on
        first.close()

        def admitted() -> bool:
            try:
                session(srv.address).close()
            except cricket_client.HelloRefused:
                return False
            return True

        wait_for(admitted, "a session once one ended")
        second.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_record_above_max_record_closes_only_its_connection(tmp_path: Path, mode: str) -> None:
    with running_server(tmp_path, "--max-record", "64K", isolation=mode) as srv:
        other = session(srv.address)
        host, port = srv.address.rsplit(":", 1)
        with RpcClient((host, int(port)), timeout=30) as rpc:
            rpc.call(proto.CRICKET_PROG, proto.CRICKET_V1, 0, b"")  # NULL: served
            with pytest.raises(ConnectionLost):
                rpc.call(proto.CRICKET_PROG, proto.CRICKET_V1, 0, bytes(128 << 10))
        with other.active():
            _, ptr = cuda.cuMemAlloc(4096)
            small = np.arange(1024, dtype=np.uint32)
            assert cuda.cuMemcpyHtoD(ptr, small, small.nbytes) == (E.CUDA_SUCCESS,)
        assert "closing the connection" in srv.log()
        other.close()


@pytest.mark.parametrize("mode", MODES)
def test_an_idle_connection_is_closed_and_its_session_freed(tmp_path: Path, mode: str) -> None:
    with running_server(tmp_path, "--idle-timeout", "0.5", isolation=mode) as srv:
        conn = session(srv.address)
        with conn.active():
            assert cuda.cuMemAlloc(1 << 20)[0] == E.CUDA_SUCCESS
        sid = conn.info.session_id
        wait_for(lambda: f"session {sid:#x} end" in srv.log(), "the idle session's end")
        assert "idle for 0.5 s, closing" in srv.log()
        with conn.active(), pytest.raises(RpcError):
            cuda.cuMemAlloc(64)
        fresh = session(srv.address)  # served on; a busy client is not idle
        with fresh.active():
            for _ in range(3):
                assert cuda.cuMemAlloc(64)[0] == E.CUDA_SUCCESS
                time.sleep(0.2)
        fresh.close()


@pytest.mark.parametrize("mode", MODES)
def test_calls_beyond_max_in_flight_wait_and_are_all_answered(tmp_path: Path, mode: str) -> None:
    with running_server(tmp_path, "--max-in-flight", "2", isolation=mode) as srv:
        conn = session(srv.address)
        n = 4096
        with conn.active():
            _, ptr = cuda.cuMemAlloc(4 * n)
            for i in range(2000):  # pipelined: sent without waiting for replies
                assert cuda.cuMemsetD32Async(ptr, i, n, 0) == (E.CUDA_SUCCESS,)
            out = np.empty(n, dtype=np.uint32)
            assert cuda.cuMemcpyDtoH(out, ptr, out.nbytes) == (E.CUDA_SUCCESS,)
        assert (out == 1999).all()
        conn.close()


def test_a_dropped_session_is_resumed_within_the_grace_period(tmp_path: Path) -> None:
    options = ("--idle-timeout", "0.5", "--resume-grace", "30")
    with running_server(tmp_path, *options, isolation="thread") as srv:
        conn = session(srv.address)
        enable_reconnect(conn, 30)
        data = np.arange(1024, dtype=np.uint32)
        with conn.active():
            _, ptr = cuda.cuMemAlloc(data.nbytes)
            assert cuda.cuMemcpyHtoD(ptr, data, data.nbytes) == (E.CUDA_SUCCESS,)
        sid = conn.info.session_id
        wait_for(lambda: f"session {sid:#x}: connection lost; kept 30 s" in srv.log(), "a drop")
        out = np.empty_like(data)
        with conn.active():  # the call finds the connection gone, resumes, runs again
            assert cuda.cuMemcpyDtoH(out, ptr, out.nbytes) == (E.CUDA_SUCCESS,)
        assert (out == data).all()
        assert f"session {sid:#x} resumed by" in srv.log()
        conn.close()


def test_a_dropped_session_not_resumed_in_time_is_freed(tmp_path: Path) -> None:
    options = ("--idle-timeout", "0.3", "--resume-grace", "0.5")
    with running_server(tmp_path, *options, isolation="thread") as srv:
        conn = session(srv.address)
        sid = conn.info.session_id
        wait_for(lambda: f"session {sid:#x} end (not resumed within 0.5 s)" in srv.log(), "end")
        host, port = srv.address.rsplit(":", 1)
        with RpcClient((host, int(port)), timeout=30) as rpc:
            stub = proto.CRICKET_V1_Client(rpc)
            args = proto.hello_args(proto.CRICKET_PROTOCOL_VERSION, conn.info.session_token, "x")
            assert stub.HELLO(args).err == E.CUDA_ERROR_INVALID_VALUE


def test_resume_grace_needs_thread_isolation(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cricket_server.cli import main

    result = CliRunner().invoke(
        main, ["--backend", "sim", "--isolation", "process", "--resume-grace", "5"]
    )
    assert result.exit_code == 2
    assert "--resume-grace needs --isolation thread" in result.output
