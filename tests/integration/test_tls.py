"""RPC over TLS (RFC 9289): cricket-server --tls-cert/--tls-key[/--tls-client-ca], the client's
CRICKET_TLS_* configuration, refusals, and TLS with a token; both isolation modes."""

from __future__ import annotations

from pathlib import Path

import pytest
from security_helpers import copy_round_trip, running_server
from tls_certs import TlsFiles, make_tls_files

import cricket_client
from cricket_xdr.rpc.errors import AuthError
from cricket_xdr.rpc.tls import TlsError, client_context

TOKEN = "tls-and-token-secret"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRICKET_TOKEN", "CRICKET_TOKEN_FILE", "CRICKET_TLS", "CRICKET_TLS_CA",
                 "CRICKET_TLS_CERT", "CRICKET_TLS_KEY", "CRICKET_TLS_SERVER_NAME"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


def server_tls(certs: TlsFiles, *, client_ca: bool = False) -> list[str]:
    options = ["--tls-cert", str(certs.server.cert), "--tls-key", str(certs.server.key)]
    if client_ca:
        options += ["--tls-client-ca", str(certs.client_ca.cert)]
    return options


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_tls_without_client_certificates(
    tmp_path: Path, certs: TlsFiles, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_server(tmp_path, isolation, *server_tls(certs)) as address:
        monkeypatch.setenv("CRICKET_TLS_CA", str(certs.server_ca.cert))
        conn = cricket_client.connect(address, make_default=False)
        try:
            assert conn._rpc._sock.version() == "TLSv1.3"
            copy_round_trip(conn)
        finally:
            conn.close()
        # Without TLS the server serves nothing but NULL.
        with pytest.raises(AuthError, match="TLS"):
            cricket_client.connect(address, make_default=False, tls=False)


def test_client_that_does_not_trust_the_server_refuses(tmp_path: Path, certs: TlsFiles) -> None:
    with running_server(tmp_path, "thread", *server_tls(certs)) as address:
        with pytest.raises(TlsError, match="certificate is not trusted.*CRICKET_TLS_CA"):
            cricket_client.connect(
                address, make_default=False, tls=client_context(str(certs.other_ca.cert))
            )
        with pytest.raises(TlsError, match="certificate is not trusted"):
            cricket_client.connect(address, make_default=False, tls=True)  # system trust


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_tls_with_client_certificates(
    tmp_path: Path, certs: TlsFiles, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_server(tmp_path, isolation, *server_tls(certs, client_ca=True)) as address:
        ca = str(certs.server_ca.cert)
        with pytest.raises(TlsError, match="refused the TLS connection"):
            cricket_client.connect(address, make_default=False, tls=client_context(ca))
        stranger = client_context(
            ca, str(certs.stranger_client.cert), str(certs.stranger_client.key)
        )
        with pytest.raises(TlsError, match="refused the TLS connection"):
            cricket_client.connect(address, make_default=False, tls=stranger)
        monkeypatch.setenv("CRICKET_TLS_CA", ca)
        monkeypatch.setenv("CRICKET_TLS_CERT", str(certs.client.cert))
        monkeypatch.setenv("CRICKET_TLS_KEY", str(certs.client.key))
        conn = cricket_client.connect(address, make_default=False)
        try:
            copy_round_trip(conn)
        finally:
            conn.close()


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_tls_and_token_together(
    tmp_path: Path, certs: TlsFiles, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    options = [*server_tls(certs), "--auth-token-file", str(token)]
    with running_server(tmp_path, isolation, *options) as address:
        tls = client_context(str(certs.server_ca.cert))
        with pytest.raises(AuthError, match="set CRICKET_TOKEN"):
            cricket_client.connect(address, make_default=False, tls=tls)
        with pytest.raises(AuthError, match="requires TLS"):
            cricket_client.connect(address, make_default=False, tls=False, token=TOKEN)
        monkeypatch.setenv("CRICKET_TOKEN", TOKEN)
        conn = cricket_client.connect(address, make_default=False, tls=tls)
        try:
            copy_round_trip(conn)
        finally:
            conn.close()


def test_tls_socket_nonblocking_sends_keep_every_byte(certs: TlsFiles) -> None:
    """The client's contract: a send with MSG_DONTWAIT takes what it can, the rest is sent
    again later starting at the first byte not taken; the peer gets every byte once."""
    import socket
    import threading

    from cricket_xdr.rpc.tls import TlsSocket, server_context

    a, b = socket.socketpair()
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 14)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 14)
    server = TlsSocket(
        b, server_context(str(certs.server.cert), str(certs.server.key)), server_side=True
    )
    client = TlsSocket(
        a, client_context(str(certs.server_ca.cert)), server_side=False, server_hostname="localhost"
    )
    accepting = threading.Thread(target=server.handshake, args=(10,))
    accepting.start()
    client.handshake(10)
    accepting.join()
    payload = bytes(range(256)) * (4 << 12)  # 4 MiB
    received = bytearray()

    def read_all() -> None:
        view = memoryview(bytearray(1 << 16))
        while len(received) < len(payload):
            n = server.recv_into(view)
            assert n
            received.extend(view[:n])

    reader = threading.Thread(target=read_all)
    reader.start()
    rest = [memoryview(payload[:1000]), memoryview(payload[1000:])]
    partial = 0
    while rest:
        sent = client.sendmsg(rest, (), socket.MSG_DONTWAIT)
        partial += sent < sum(len(r) for r in rest)
        while rest and sent >= len(rest[0]):
            sent -= len(rest.pop(0))
        if rest:
            rest[0] = rest[0][sent:]
    reader.join(30)
    assert partial, "the socket buffers never filled: the test did not exercise partial sends"
    assert bytes(received) == payload
    a.close()
    b.close()


def test_bulk_copies_never_leave_tls(
    tmp_path: Path, certs: TlsFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data channels are plain TCP: a TLS connection neither offers nor accepts them, and a
    large copy forced onto them stays inside the encrypted RPC, bit-exact."""
    import numpy as np

    from cricket_client import driver as cuda

    E = cuda.CUresult
    monkeypatch.setenv("CRICKET_DATA_PATH", "tcp")
    with running_server(tmp_path, "thread", *server_tls(certs)) as address:
        monkeypatch.setenv("CRICKET_TLS_CA", str(certs.server_ca.cert))
        conn = cricket_client.connect(address, make_default=False)
        try:
            with conn.active():
                assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
                err, ctx = cuda.cuDevicePrimaryCtxRetain(cuda.CUdevice(0))
                assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
                data = np.random.default_rng(3).integers(0, 255, 32 << 20, dtype=np.uint8)
                err, ptr = cuda.cuMemAlloc(data.nbytes)
                assert cuda.cuMemcpyHtoD(ptr, data, data.nbytes) == (E.CUDA_SUCCESS,)
                back = np.zeros_like(data)
                assert cuda.cuMemcpyDtoH(back, ptr, back.nbytes) == (E.CUDA_SUCCESS,)
                assert np.array_equal(back, data)
                assert conn.datapaths is not None
                assert not conn.datapaths.capabilities().tcp
                assert str(conn.datapaths.last_path) != "tcp"
                err, _offer = conn.sync("DATA_TCP_OFFER", "127.0.0.1", 2)
                assert err == E.CUDA_ERROR_NOT_SUPPORTED
                assert "TLS" in cricket_client.last_error_message()
        finally:
            conn.close()
