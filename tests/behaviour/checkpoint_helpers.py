"""Helpers of the checkpoint behaviour tests: servers of their own (they get killed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from behaviour_helpers import BACKEND, ROOT, check

from cricket_client import driver as cuda

# Isolation of the servers these tests start (CRICKET_TEST_ISOLATION, as the suite's server).
ISOLATION = os.environ.get("CRICKET_TEST_ISOLATION", "auto")


class ServerProcess:
    """A cricket-server or cricket-restart subprocess on a free loopback port."""

    def __init__(self, args: list[str], folder: Path, name: str) -> None:
        self.ready = folder / f"{name}.ready"
        self.log = folder / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, *args, "--ready-file", str(self.ready)],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # kill() takes the server's workers down with it
            )
        deadline = time.monotonic() + 120
        while not self.ready.exists():
            if self.proc.poll() is not None:
                pytest.fail(f"{name} exited with {self.proc.returncode}:\n{self.log.read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"{name} did not get ready:\n{self.log.read_text()}")
            time.sleep(0.05)
        self.address = self.ready.read_text().strip()
        self.operator = ""  # the Unix socket of a cricket-server started by start_server

    def kill(self) -> None:
        """SIGKILL the server and its worker processes at once, as a crash of the node would."""
        import psutil

        children = psutil.Process(self.proc.pid).children(recursive=True)
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        psutil.wait_procs(children, timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def server_list() -> Iterator[list[ServerProcess]]:
    """For a fixture: the servers a test starts, stopped at its end."""
    started: list[ServerProcess] = []
    yield started
    for server in started:
        server.stop()


def start_server(
    servers: list[ServerProcess], folder: Path, isolation: str = ISOLATION, *extra: str
) -> ServerProcess:
    """cricket-server; isolation "auto" is thread on sim and process on cuda. Clients may
    checkpoint below `folder` (--checkpoint-root); the operator's Unix socket is
    `server.operator` ("unix:PATH", for cricket-checkpoint --server)."""
    name = f"server{len(servers)}"
    args = ["-m", "cricket_server", "--listen", "127.0.0.1:0", "--backend", BACKEND]
    args += ["--unix", str(folder / f"{name}.sock"), "--checkpoint-root", str(folder)]
    args += ["--isolation", isolation, *extra]
    servers.append(ServerProcess(args, folder, name))
    servers[-1].operator = f"unix:{folder / f'{name}.sock'}"
    return servers[-1]


def start_restart(
    servers: list[ServerProcess],
    folder: Path,
    ckpt: Path,
    *extra: str,
    listen: str = "127.0.0.1:0",
    isolation: str = ISOLATION,
) -> ServerProcess:
    """cricket-restart of `ckpt`; isolation as for start_server."""
    args = [
        "-m",
        "cricket_server",
        "restart",
        str(ckpt),
        "--listen",
        listen,
        "--backend",
        BACKEND,
        "--isolation",
        isolation,
        "--checkpoint-root",
        str(folder),
        *extra,
    ]
    servers.append(ServerProcess(args, folder, f"restart{len(servers)}"))
    return servers[-1]


def read(ptr: Any, size: int) -> bytes:
    out = bytearray(size)
    check(cuda.cuMemcpyDtoH(out, ptr, size))
    return bytes(out)
