"""Connections that have not authenticated cost little and not for long: no worker process
before the token proof, --handshake-deadline, --max-pending, small records before the proof,
and one bound on what incomplete records of all connections hold (--max-buffered)."""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import psutil
import pytest
from server_harness import Server, running_server, wait_for
from tls_certs import make_tls_files

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr.rpc.auth import AUTH_TLS
from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.connection import ClientConnection
from cricket_xdr.rpc.errors import ConnectionLost
from cricket_xdr.rpc.message import NULL_AUTH, OpaqueAuth
from rpc_spec import cricket_rpc as proto

E = cuda.CUresult
TOKEN = "a-token-for-the-denial-of-service-tests"
MODES = ["thread", "process"]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRICKET_TOKEN", "CRICKET_TOKEN_FILE", "CRICKET_TLS", "CRICKET_TLS_CA"):
        monkeypatch.delenv(name, raising=False)


def token_file(folder: Path) -> str:
    path = folder / "token"
    path.write_text(TOKEN)
    path.chmod(0o600)
    return str(path)


def connect_raw(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes `sock` (end of file or reset) within `within` seconds;
    what it sends before (e.g. a reply to a STARTTLS probe) is read and dropped."""
    deadline = time.monotonic() + within
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if sock.recv(4096) == b"":
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        pass
    return False


def serves_with_token(address: str) -> None:
    conn = cricket_client.connect(address, make_default=False, timeout=60, token=TOKEN)
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
        _, ptr = cuda.cuMemAlloc(4096)
        assert cuda.cuMemFree(ptr) == (E.CUDA_SUCCESS,)
    conn.close()


def workers(srv: Server) -> int:
    """Worker processes (direct children: a starting worker may run short helpers itself)."""
    return len(psutil.Process(srv.process.pid).children())


def test_idle_unauthenticated_connections_get_no_worker_and_are_closed(tmp_path: Path) -> None:
    options = ("--auth-token-file", token_file(tmp_path), "--handshake-deadline", "3",
               "--max-pending", "40")  # fmt: skip
    with running_server(tmp_path, *options, isolation="process", backend="sim") as srv:
        serves_with_token(srv.address)
        wait_for(lambda: workers(srv) == 1, "one spare worker")
        idle = [connect_raw(srv.address) for _ in range(30)]
        time.sleep(1.0)
        assert workers(srv) == 1  # the spare only: none for unauthenticated connections
        serves_with_token(srv.address)  # while they wait, an authenticated client is served
        started = time.monotonic()
        assert all(closed_by_server(sock, 30) for sock in idle)
        assert time.monotonic() - started < 20
        for sock in idle:
            sock.close()
        assert workers(srv) <= 2
        assert "connection setup not done within 3 s" in srv.log()


@pytest.mark.parametrize("mode", MODES)
def test_connections_beyond_max_pending_are_closed_at_once(tmp_path: Path, mode: str) -> None:
    options = ("--auth-token-file", token_file(tmp_path), "--max-pending", "5")
    with running_server(tmp_path, *options, isolation=mode, backend="sim") as srv:
        pending = [connect_raw(srv.address) for _ in range(5)]
        wait_for(lambda: srv.client_connections() >= 5, "the server to take the first five")
        extra = connect_raw(srv.address)
        assert closed_by_server(extra, 10)
        assert not closed_by_server(pending[0], 0.5)  # the first five wait for their setup
        for sock in pending + [extra]:
            sock.close()
        wait_for(lambda: _served(srv.address), "an authenticated client to be served")
        assert "--max-pending" in srv.log()


def _served(address: str) -> bool:
    try:
        serves_with_token(address)
    except ConnectionLost:
        return False
    return True


@pytest.mark.parametrize("mode", MODES)
def test_a_large_record_before_the_proof_is_cut_off(tmp_path: Path, mode: str) -> None:
    options = ("--auth-token-file", token_file(tmp_path))
    with running_server(tmp_path, *options, isolation=mode, backend="sim") as srv:
        sock = connect_raw(srv.address)
        sock.sendall(struct.pack(">I", 0x80000000 | (512 << 20)))  # a 512 MiB record
        sent = 0
        chunk = bytes(1 << 16)
        try:
            while sent < 64 << 20:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        assert sent < 16 << 20, f"the server took {sent} bytes of a record before the proof"
        assert closed_by_server(sock, 30)
        sock.close()
        serves_with_token(srv.address)
        rss = sum(p.memory_info().rss for p in [psutil.Process(srv.process.pid)])
        assert rss < 400 << 20


def test_incomplete_records_of_all_connections_share_max_buffered(tmp_path: Path) -> None:
    options = ("--max-buffered", "48M", "--max-record", "64M")
    with running_server(tmp_path, *options, isolation="thread", backend="sim") as srv:
        socks = [connect_raw(srv.address) for _ in range(3)]
        for sock in socks:  # each announces 20 MiB and sends a little of it
            sock.sendall(struct.pack(">I", 0x80000000 | (20 << 20)) + bytes(1 << 16))
        closed = [closed_by_server(sock, 5) for sock in socks]
        assert closed.count(True) == 1, closed  # two fit in 48 MiB, the third does not
        for sock in socks:
            sock.close()
        assert "--max-buffered" in srv.log()
        with RpcClient(tuple_address(srv.address), timeout=30) as rpc:  # others are served
            rpc.call(proto.CRICKET_PROG, proto.CRICKET_V1, 0, b"")


def tuple_address(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


class _ProbeAuth:
    def credentials(self) -> tuple[OpaqueAuth, OpaqueAuth]:
        return OpaqueAuth(AUTH_TLS, b""), NULL_AUTH


def starttls_probe() -> bytes:
    _, pieces = ClientConnection(auth=_ProbeAuth()).send_call(
        proto.CRICKET_PROG, proto.CRICKET_V1, 0
    )
    return b"".join(bytes(p) for p in pieces)


def test_with_tls_idle_or_stalled_connections_hold_few_workers_briefly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    certs = make_tls_files(tmp_path / "certs")
    options = ("--tls-cert", str(certs.server.cert), "--tls-key", str(certs.server.key),
               "--handshake-deadline", "8")  # fmt: skip
    with running_server(tmp_path, *options, isolation="process", backend="sim") as srv:
        wait_for(lambda: workers(srv) == 1, "one spare worker")
        idle = [connect_raw(srv.address) for _ in range(20)]
        time.sleep(1.0)
        assert workers(srv) == 1  # nothing sent: no worker
        main = psutil.Process(srv.process.pid)
        cpu = sum(main.cpu_times()[:2])
        for sock in idle[:10]:
            sock.sendall(starttls_probe()[:3])  # part of a record: looked at, not spun on
        time.sleep(3.0)
        used = sum(main.cpu_times()[:2]) - cpu
        assert used < 0.5, f"the main process used {used:.2f} s of CPU in 3 s"
        assert workers(srv) == 1
        stalled = [connect_raw(srv.address) for _ in range(16)]
        for sock in stalled:  # the STARTTLS probe, then no TLS handshake
            sock.sendall(starttls_probe())
        most = 0
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            most = max(most, workers(srv))
            time.sleep(0.1)
        assert most <= 1 + 8 + 2, most  # the spare, 8 in their setup, spares being started
        still_open = [i for i, s in enumerate(idle + stalled) if not closed_by_server(s, 30)]
        assert not still_open, still_open
        for sock in idle + stalled:
            sock.close()
        monkeypatch.setenv("CRICKET_TLS_CA", str(certs.server_ca.cert))
        conn = cricket_client.connect(srv.address, make_default=False, timeout=60)
        with conn.active():
            assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        conn.close()


def test_unauthenticated_connections_do_not_fill_max_sessions(tmp_path: Path) -> None:
    options = ("--auth-token-file", token_file(tmp_path), "--max-sessions", "1")
    with running_server(tmp_path, *options, isolation="process", backend="sim") as srv:
        idle = [connect_raw(srv.address) for _ in range(10)]
        time.sleep(0.5)
        serves_with_token(srv.address)  # the one session is this client's, not theirs
        for sock in idle:
            sock.close()
