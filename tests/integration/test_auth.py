"""Token authentication (AUTH_CRICKET_TOKEN): cricket-server --auth-token-file, the client's
CRICKET_TOKEN / CRICKET_TOKEN_FILE, refusals, replay, both isolation modes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from security_helpers import copy_round_trip, running_server, start_server

import cricket_client
from cricket_server.auth import SecurityError, load_token
from cricket_xdr.rpc.auth import AUTH_CRICKET_TOKEN, TokenProver
from cricket_xdr.rpc.errors import AuthError
from cricket_xdr.rpc.handshake import null_call
from cricket_xdr.rpc.message import AUTH_BADCRED, AUTH_REJECTEDCRED, AUTH_TOOWEAK
from rpc_spec import cricket_rpc as proto

TOKEN = "s3cret-token-of-some-length"
PROGRAM = (proto.CRICKET_PROG, proto.CRICKET_V1)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRICKET_TOKEN", "CRICKET_TOKEN_FILE", "CRICKET_TLS", "CRICKET_TLS_CA"):
        monkeypatch.delenv(name, raising=False)


def token_file(folder: Path, text: str = TOKEN + "\n", mode: int = 0o600) -> Path:
    path = folder / "token"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_token_file_must_be_private_and_not_empty(tmp_path: Path) -> None:
    assert load_token(str(token_file(tmp_path))) == TOKEN.encode()
    with pytest.raises(SecurityError, match="readable or writable by every user"):
        load_token(str(token_file(tmp_path, mode=0o644)))
    with pytest.raises(SecurityError, match="empty"):
        load_token(str(token_file(tmp_path, text="\n")))
    result = start_server(
        tmp_path, "thread", "--auth-token-file", str(token_file(tmp_path, mode=0o604))
    )
    assert result.returncode != 0
    assert "readable or writable by every user" in result.stderr


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_good_token_served_wrong_or_none_refused(
    tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = token_file(tmp_path)
    with running_server(tmp_path, isolation, "--auth-token-file", str(path)) as address:
        with pytest.raises(AuthError, match="set CRICKET_TOKEN or CRICKET_TOKEN_FILE") as none:
            cricket_client.connect(address, make_default=False)
        assert none.value.stat == AUTH_TOOWEAK
        with pytest.raises(AuthError, match="wrong token") as wrong:
            cricket_client.connect(address, make_default=False, token="not-the-token")
        assert wrong.value.stat == AUTH_BADCRED
        monkeypatch.setenv("CRICKET_TOKEN_FILE", str(path))
        conn = cricket_client.connect(address, make_default=False)
        try:
            copy_round_trip(conn)
        finally:
            conn.close()
        monkeypatch.delenv("CRICKET_TOKEN_FILE")
        monkeypatch.setenv("CRICKET_TOKEN", TOKEN)
        conn = cricket_client.connect(address, make_default=False)
        conn.close()


def _connect(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


def test_replayed_proof_refused_on_another_connection(tmp_path: Path) -> None:
    with running_server(
        tmp_path, "thread", "--auth-token-file", str(token_file(tmp_path))
    ) as address:
        first = _connect(address)
        prover = TokenProver(TOKEN.encode())
        challenge = null_call(first, *PROGRAM, prover.challenge_request())
        proof = prover.proof(challenge)
        assert proof.flavor == AUTH_CRICKET_TOKEN
        prover.check_server(null_call(first, *PROGRAM, proof))  # accepted where it was made
        # The same proof bytes on the same connection again, and on another one: refused.
        with pytest.raises(AuthError) as again:
            null_call(first, *PROGRAM, proof)
        assert again.value.stat == AUTH_REJECTEDCRED
        second = _connect(address)
        with pytest.raises(AuthError) as replay:
            null_call(second, *PROGRAM, proof)
        assert replay.value.stat == AUTH_REJECTEDCRED
        null_call(second, *PROGRAM, TokenProver(b"x").challenge_request())  # a fresh challenge
        with pytest.raises(AuthError) as replay_after_challenge:
            null_call(second, *PROGRAM, proof)
        assert replay_after_challenge.value.stat == AUTH_REJECTEDCRED
        # Still nothing but NULL is served on the second connection.
        enc_hello = proto.hello_args(
            protocol_version=proto.CRICKET_PROTOCOL_VERSION, session_token=b"", client_name="x"
        )
        client = proto.CRICKET_V1_Client(_RawRpc(second))
        with pytest.raises(AuthError) as hello:
            client.HELLO(enc_hello)
        assert hello.value.stat == AUTH_TOOWEAK
        first.close()
        second.close()


class _RawRpc:
    """The RpcClient shape the generated stubs use, over a socket taken over mid-setup."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def call(
        self, prog: int, vers: int, proc: int, args: object = b"", *, timeout: object = None
    ) -> bytes:
        from cricket_xdr.rpc.connection import NEED_DATA, ClientConnection

        conn = ClientConnection()
        _, pieces = conn.send_call(prog, vers, proc, args)  # type: ignore[arg-type]
        self._sock.sendall(b"".join(pieces))
        while (event := conn.next_event()) is NEED_DATA:
            conn.receive_data(self._sock.recv(65536))
        return bytes(event.result())


@pytest.mark.parametrize("with_token", [True, False])
def test_reconnect_proves_the_token_again(tmp_path: Path, with_token: bool) -> None:
    from cricket_client import driver as cuda
    from cricket_client.errors import HelloRefused
    from cricket_client.reconnect import enable_reconnect
    from cricket_client.security import Security

    with running_server(
        tmp_path, "thread", "--auth-token-file", str(token_file(tmp_path))
    ) as address:
        conn = cricket_client.connect(address, make_default=False, token=TOKEN)
        if not with_token:
            conn.security = Security()  # as if the token had been forgotten since
        enable_reconnect(conn, deadline=0.5)
        conn._rpc._sock.shutdown(socket.SHUT_RDWR)  # the connection breaks
        # The session died with its connection, so resuming it is refused; but only after
        # the new connection proved the token (else the server would not answer HELLO).
        expected = HelloRefused if with_token else AuthError
        with conn.active(), pytest.raises(expected) as refused:
            cuda.cuInit(0)
        if not with_token:
            assert "set CRICKET_TOKEN" in str(refused.value)
        conn.closed = True


def test_cricket_checkpoint_proves_the_token(tmp_path: Path) -> None:
    """cricket-checkpoint --server is a client like any other: it needs the token."""
    import os
    import subprocess
    import sys

    sock = tmp_path / "operator.sock"  # CHECKPOINT_SERVER is the operator's, on this socket
    with running_server(
        tmp_path, "thread", "--auth-token-file", str(token_file(tmp_path)),
        "--unix", str(sock), "--checkpoint-root", str(tmp_path),
    ):  # fmt: skip
        run = [sys.executable, "-m", "checkpoint", "--server", f"unix:{sock}",
               str(tmp_path / "ckpt")]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRICKET_")}
        refused = subprocess.run(run, capture_output=True, text=True, env=env, timeout=60)
        assert refused.returncode != 0 and "CRICKET_TOKEN" in refused.stdout + refused.stderr
        taken = subprocess.run(run, capture_output=True, text=True, timeout=60,
                               env={**env, "CRICKET_TOKEN": TOKEN})  # fmt: skip
        assert taken.returncode == 0, taken.stdout + taken.stderr
        assert (tmp_path / "ckpt").is_dir()
