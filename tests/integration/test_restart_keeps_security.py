"""`cricket-restart` builds the same server as `cricket-server`: a server restored from a
token-protected, TLS, limited server, given the same options, refuses a client without the
token, serves nothing without TLS, and enforces its limits; in both isolation modes.

The checkpoint comes from the first server's final checkpoint at SIGTERM (--checkpoint-dir),
holding the session of a client that allocated device memory.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tls_certs import TlsFiles, make_tls_files

import cricket_client
from cricket_client import driver as cuda
from cricket_client.reconnect import enable_reconnect
from cricket_xdr.rpc.errors import AuthError
from cricket_xdr.rpc.tls import client_context

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120.0
TOKEN = "restart-keeps-the-token-0123456789"
E = cuda.CUresult
MiB = 1 << 20


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRICKET_TOKEN", "CRICKET_TOKEN_FILE", "CRICKET_TLS", "CRICKET_TLS_CA",
                 "CRICKET_TLS_CERT", "CRICKET_TLS_KEY", "CRICKET_TLS_SERVER_NAME"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


@contextmanager
def server(folder: Path, name: str, command: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m cricket_server COMMAND` until ready (its address in `process.address`);
    killed with its workers at the end unless it already ended."""
    import psutil

    ready, log = folder / f"{name}.ready", folder / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "cricket_server", *command, "--ready-file", str(ready)],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + LIMIT
        while not ready.exists():
            if process.poll() is not None:
                pytest.fail(f"{name} exited with {process.returncode}:\n{log.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not get ready:\n{log.read_text()}")
            time.sleep(0.05)
        process.address = ready.read_text().strip()  # type: ignore[attr-defined]
        yield process
    finally:
        if process.poll() is None:
            children = psutil.Process(process.pid).children(recursive=True)
            process.kill()
            process.wait()
            psutil.wait_procs(children, timeout=30)
            for child in children:
                if child.is_running():
                    child.kill()


def allocate(conn: cricket_client.Connection, size: int, payload: bytes = b"") -> Any:
    """cuMemAlloc of `size` bytes in the primary context, `payload` copied to its start; the
    pointer, or the CUresult of a refused allocation."""
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        _, dev = cuda.cuDeviceGet(0)
        _, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
        err, ptr = cuda.cuMemAlloc(size)
        if err != E.CUDA_SUCCESS:
            return err
        if payload:
            assert cuda.cuMemcpyHtoD(ptr, payload, len(payload)) == (E.CUDA_SUCCESS,)
        return ptr


def connect_when_room(address: str, tls: object) -> cricket_client.Connection:
    """A session with token and TLS, waiting while --max-sessions still counts the workers of
    connections refused just before (process isolation)."""
    deadline = time.monotonic() + LIMIT
    while True:
        try:
            return cricket_client.connect(address, make_default=False, tls=tls, token=TOKEN)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_restored_server_keeps_token_tls_and_limits(
    tmp_path: Path, certs: TlsFiles, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    secure = [
        "--backend", "sim", "--sim-memory", "256M", "--isolation", isolation,
        "--listen", "127.0.0.1:0", "--auth-token-file", str(token),
        "--tls-cert", str(certs.server.cert), "--tls-key", str(certs.server.key),
        "--max-session-memory", "8M", "--max-sessions", "2",
    ]  # fmt: skip
    tls = client_context(str(certs.server_ca.cert))
    ckpt = tmp_path / "ckpt"
    payload = bytes(range(256)) * 4096
    with server(tmp_path, "server", [*secure, "--checkpoint-dir", str(ckpt)]) as first:
        old = cricket_client.connect(first.address, make_default=False, tls=tls, token=TOKEN)
        ptr = allocate(old, 4 * MiB, payload)
        enable_reconnect(old, LIMIT)
        first.send_signal(signal.SIGTERM)  # the final checkpoint holds that session
        assert first.wait(timeout=LIMIT) == 0
    assert (ckpt / "MANIFEST").exists()

    with server(tmp_path, "restart", ["restart", str(ckpt), *secure]) as restored:
        address = restored.address
        with pytest.raises(AuthError, match="set CRICKET_TOKEN"):
            cricket_client.connect(address, make_default=False, tls=tls)
        with pytest.raises(AuthError, match="requires TLS"):
            cricket_client.connect(address, make_default=False, tls=False, token=TOKEN)
        if isolation == "thread":  # the restored session comes back through TLS and the token
            monkeypatch.setenv(cricket_client.ADDRESS_ENV, address)
            with old.active():
                back = bytearray(len(payload))
                assert cuda.cuMemcpyDtoH(back, ptr, len(payload)) == (E.CUDA_SUCCESS,)
            assert bytes(back) == payload and old.address == address
        # The restored session is the first of --max-sessions 2; this is the second (under
        # process isolation once the workers of the refused connections have ended).
        conn = connect_when_room(address, tls)
        try:
            assert allocate(conn, 16 * MiB) == E.CUDA_ERROR_OUT_OF_MEMORY  # --max-session-memory
            assert allocate(conn, 4 * MiB) != E.CUDA_ERROR_OUT_OF_MEMORY
            with pytest.raises(Exception, match="max-sessions|refused|closed"):  # the third
                cricket_client.connect(address, make_default=False, tls=tls, token=TOKEN)
        finally:
            conn.close()
