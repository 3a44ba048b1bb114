"""Helpers of the checkpoint behaviour tests: servers of their own (they get killed)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from behaviour_helpers import BACKEND, check
from server_harness import Server
from server_harness import server_list as server_list  # for the tests' `servers` fixtures
from server_harness import start_server as start

from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint
from cricket_client import driver as cuda

# Isolation of the servers these tests start (CRICKET_TEST_ISOLATION, as the suite's server).
ISOLATION = os.environ.get("CRICKET_TEST_ISOLATION", "auto")


ServerProcess = Server  # a cricket-server or cricket-restart of a test's own


def start_server(
    servers: list[ServerProcess], folder: Path, isolation: str = ISOLATION, *extra: str
) -> ServerProcess:
    """cricket-server; isolation "auto" is thread on sim and process on cuda. Clients may
    checkpoint below `folder` (--checkpoint-root); the operator's Unix socket is
    `server.operator` ("unix:PATH", for cricket-checkpoint --server)."""
    name = f"server{len(servers)}"
    socket_path = folder / f"{name}.sock"
    server = start(
        folder, "--unix", str(socket_path), "--checkpoint-root", str(folder), *extra,
        backend=BACKEND, isolation=isolation, name=name,
    )  # fmt: skip
    server.operator = f"unix:{socket_path}"
    servers.append(server)
    return server


def start_restart(
    servers: list[ServerProcess],
    folder: Path,
    ckpt: Path,
    *extra: str,
    listen: str = "127.0.0.1:0",
    isolation: str = ISOLATION,
) -> ServerProcess:
    """cricket-restart of `ckpt`; isolation as for start_server."""
    server = start(
        folder, "--checkpoint-root", str(folder), *extra, backend=BACKEND, isolation=isolation,
        listen=listen, program=("cricket_server", "restart", str(ckpt)),
        name=f"restart{len(servers)}",
    )  # fmt: skip
    servers.append(server)
    return server


def read(ptr: Any, size: int) -> bytes:
    out = bytearray(size)
    check(cuda.cuMemcpyDtoH(out, ptr, size))
    return bytes(out)


def operator_checkpoint(server: ServerProcess, target: Path, limit: float = 60.0) -> Checkpoint:
    """SIGUSR1 to a server started with --checkpoint-dir `target`; the checkpoint it writes,
    once its MANIFEST is new and opens (the directory is swapped in whole)."""
    manifest = target / "MANIFEST"
    before = manifest.stat().st_mtime_ns if manifest.exists() else None
    server.process.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + limit
    while True:
        assert time.monotonic() < deadline, server.log()
        if manifest.exists() and manifest.stat().st_mtime_ns != before:
            try:
                return Checkpoint.open(target)
            except (CheckpointError, FileNotFoundError):
                pass  # caught between the swap's two renames: look again
        time.sleep(0.02)
