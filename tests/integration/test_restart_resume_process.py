"""A secure server under process isolation, restarted with `cricket-restart --isolation
process` and the same options, gives each client its session back: with a token, with TLS,
and with both (a restored session lives in a worker process of its own; the main process
routes a client to it by the HELLO after the token proof, or by the resume hint it sends
before STARTTLS).

A connection that names a restored session but cannot take it (it fails TLS or the token
proof, or says HELLO with another token, or says nothing) leaves the session waiting for its
real client, who resumes it while those connections are still open.

Runs on the backend CRICKET_TEST_BACKEND names (default sim; cuda on a GPU node, where
process isolation is the default).
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
from test_restart_keeps_security import LIMIT, MiB, allocate, server
from tls_certs import TlsFiles, make_tls_files

import cricket_client
from cricket_client import driver as cuda
from cricket_client.reconnect import enable_reconnect
from cricket_xdr.rpc.auth import AUTH_CRICKET_RESUME, resume_hint
from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import AuthError, ConnectionLost, RpcError
from cricket_xdr.rpc.handshake import null_call
from cricket_xdr.rpc.message import OpaqueAuth
from cricket_xdr.rpc.tls import TlsError, client_context
from rpc_spec import cricket_rpc as proto

TOKEN = "resume-in-a-worker-0123456789abcdef"
BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")  # cuda: the same on a GPU node
E = cuda.CUresult
PROGRAM = (proto.CRICKET_PROG, proto.CRICKET_V1)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRICKET_TOKEN", "CRICKET_TOKEN_FILE", "CRICKET_TLS", "CRICKET_TLS_CA",
                 "CRICKET_TLS_CERT", "CRICKET_TLS_KEY", "CRICKET_TLS_SERVER_NAME",
                 "CRICKET_RECONNECT_DEADLINE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


def options(tmp_path: Path, certs: Any, mode: str) -> tuple[list[str], Any, str | None]:
    """(server options, the client's tls=, its token=) for `mode`."""
    opts = ["--backend", BACKEND, "--isolation", "process", "--listen", "127.0.0.1:0",
            "--max-sessions", "1"]  # fmt: skip
    if BACKEND == "sim":
        opts += ["--sim-memory", "256M"]
    tls, token = None, None
    if "token" in mode:
        path = tmp_path / "token"
        path.write_text(TOKEN)
        path.chmod(0o600)
        opts += ["--auth-token-file", str(path)]
        token = TOKEN
    if "tls" in mode:
        opts += ["--tls-cert", str(certs.server.cert), "--tls-key", str(certs.server.key)]
        tls = client_context(str(certs.server_ca.cert))
    return opts, tls, token


def checkpointed_client(
    tmp_path: Path, opts: list[str], tls: Any, token: str | None, payload: bytes
) -> tuple[cricket_client.Connection, int, Path]:
    """A client with `payload` in device memory, its server stopped by SIGTERM after its final
    checkpoint: (the client, the pointer, the checkpoint)."""
    ckpt = tmp_path / "ckpt"
    with server(tmp_path, "server", [*opts, "--checkpoint-dir", str(ckpt)]) as first:
        conn = cricket_client.connect(first.address, make_default=False, tls=tls, token=token)
        ptr = allocate(conn, 4 * MiB, payload)
        enable_reconnect(conn, LIMIT)
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=LIMIT) == 0
    assert (ckpt / "MANIFEST").exists()
    return conn, ptr, ckpt


def read_back(conn: cricket_client.Connection, ptr: int, size: int) -> bytes:
    with conn.active():
        back = bytearray(size)
        assert cuda.cuMemcpyDtoH(back, ptr, size) == (E.CUDA_SUCCESS,)
    return bytes(back)


@pytest.mark.parametrize("mode", ["token", "tls", "token+tls"])
def test_a_restored_session_resumes_in_its_worker(
    tmp_path: Path, certs: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts, tls, token = options(tmp_path, certs, mode)
    payload = bytes(range(256)) * 4096
    conn, ptr, ckpt = checkpointed_client(tmp_path, opts, tls, token, payload)
    with server(tmp_path, "restart", ["restart", str(ckpt), *opts]) as restored:
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restored.address)
        assert read_back(conn, ptr, len(payload)) == payload
        assert conn.address == restored.address
        # The session goes on in its worker: new work, then the data again.
        with conn.active():
            err, other = cuda.cuMemAlloc(1 * MiB)
            assert err == E.CUDA_SUCCESS
            assert cuda.cuMemcpyHtoD(other, b"\x5a" * 16, 16) == (E.CUDA_SUCCESS,)
        assert read_back(conn, ptr, 64) == payload[:64]
        conn.close()


def _open(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=LIMIT)


def _hinted_rpc(address: str, tls: Any, hint: bytes, token: str | None) -> RpcClient:
    host, port = address.rsplit(":", 1)
    return RpcClient((host, int(port)), tls=tls, token=token and token.encode(),
                     program=PROGRAM, resume_hint=hint, connect_timeout=LIMIT)  # fmt: skip


def test_connections_that_name_a_restored_session_cannot_take_it_away(
    tmp_path: Path, certs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts, tls, token = options(tmp_path, certs, "token+tls")
    payload = bytes(reversed(range(256))) * 4096
    conn, ptr, ckpt = checkpointed_client(tmp_path, opts, tls, token, payload)
    hint = resume_hint(conn.info.session_token)  # an eavesdropper saw it, or read the checkpoint
    restart = ["restart", str(ckpt), *opts, "--handshake-deadline", "3"]
    with server(tmp_path, "restart", restart) as restored:
        address = restored.address
        held: list[Any] = []
        try:
            # 1. Names the session, then fails TLS: a plain call where the handshake belongs.
            s = _open(address)
            null_call(s, *PROGRAM, OpaqueAuth(AUTH_CRICKET_RESUME, hint))
            s.sendall(b"\x80\x00\x00\x04abcd")
            held.append(s)
            # 2. Names the session, passes TLS, but not the server's token proof.
            with pytest.raises(AuthError):
                _hinted_rpc(address, tls, hint, "not-the-server-token-at-all-000000")
            # 3. Names the session and says nothing more (until the worker gives up on it).
            s = _open(address)
            null_call(s, *PROGRAM, OpaqueAuth(AUTH_CRICKET_RESUME, hint))
            held.append(s)
            # 4. A user of the server (its token and TLS) without the session's token: HELLO
            # with a wrong token and HELLO for a new session are refused in that worker.
            rpc = _hinted_rpc(address, tls, hint, token)
            held.append(rpc)
            stub = proto.CRICKET_V1_Client(rpc)
            for wrong in (bytes(32), b""):
                args = proto.hello_args(protocol_version=proto.CRICKET_PROTOCOL_VERSION,
                                        session_token=wrong, client_name="intruder")  # fmt: skip
                assert stub.HELLO(args, timeout=LIMIT).err == E.CUDA_ERROR_INVALID_VALUE
            # 5. TLS without the client's trust anchors: fails the handshake.
            with pytest.raises((TlsError, RpcError, OSError)):
                _hinted_rpc(address, ssl.create_default_context(), hint, token)
            # The real client, while 1, 3 and 4 are still open, and after 2 and 5 failed.
            monkeypatch.setenv(cricket_client.ADDRESS_ENV, address)
            assert read_back(conn, ptr, len(payload)) == payload
            # A late connection naming the taken session gets nothing of it.
            late = _hinted_rpc(address, tls, hint, token)
            held.append(late)
            args = proto.hello_args(protocol_version=proto.CRICKET_PROTOCOL_VERSION,
                                    session_token=conn.info.session_token[::-1],
                                    client_name="late")  # fmt: skip
            try:
                refused = proto.CRICKET_V1_Client(late).HELLO(args, timeout=LIMIT).err != 0
            except ConnectionLost:
                refused = True
            assert refused
            assert read_back(conn, ptr, 64) == payload[:64]
        finally:
            for h in held:
                h.close()
            conn.close()


def test_a_waiting_session_outlives_failed_attempts_one_after_another(
    tmp_path: Path, certs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each failed attempt ends before the next comes: the worker holding the session does
    not end with any of them."""
    opts, tls, token = options(tmp_path, certs, "tls")
    payload = b"\xa5" * (1 * MiB)
    conn, ptr, ckpt = checkpointed_client(tmp_path, opts, tls, token, payload)
    hint = resume_hint(conn.info.session_token)
    with server(tmp_path, "restart", ["restart", str(ckpt), *opts]) as restored:
        address = restored.address
        for _ in range(3):
            rpc = _hinted_rpc(address, tls, hint, None)  # TLS done in that worker
            try:
                args = proto.hello_args(protocol_version=proto.CRICKET_PROTOCOL_VERSION,
                                        session_token=b"x" * 32, client_name="guess")  # fmt: skip
                reply = proto.CRICKET_V1_Client(rpc).HELLO(args, timeout=LIMIT)
                assert reply.err == E.CUDA_ERROR_INVALID_VALUE
            finally:
                rpc.close()
            s = _open(address)
            null_call(s, *PROGRAM, OpaqueAuth(AUTH_CRICKET_RESUME, hint))
            s.close()  # ends during its setup
        time.sleep(1.0)  # the worker has seen every one of them end
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, address)
        assert read_back(conn, ptr, len(payload)) == payload
        conn.close()
