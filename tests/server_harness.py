"""The one way a test starts a cricket-server (or cricket-restart) subprocess of its own.

`running_server` starts one on a free port with the options a test names, waits for its
`--ready-file` (a generous bound: the suite must pass on a busy machine), yields a `Server`
and at the end stops it (SIGTERM, then SIGKILL for its whole process group, workers
included), whatever happened; `start_server` does the same for a test that stops its servers
itself (`stop`, `kill`, `close`; `server_list` for a fixture).
A server also dies with the test process (PR_SET_PDEATHSIG), so nothing outlives a test.
`Server` gives what tests read of it: its address, log, threads and descriptors, workers.
`serving` does the same for an in-process `RpcServer` (tests of the RPC layer, fakes).

Used by tests/behaviour (on the backend CRICKET_TEST_BACKEND names) and tests/integration.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest

from cricket_xdr.rpc.server import RpcServer

ROOT = Path(__file__).resolve().parents[1]
BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")
PR_SET_PDEATHSIG = 1
LIMIT = 60.0  # seconds anything may take before a test gives up
START_LIMIT = 120.0  # seconds a server may take to write its ready file
T = TypeVar("T")


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    address: str
    log_path: Path
    name: str = "cricket-server"
    operator: str = ""  # "unix:PATH" of its Unix socket, where the caller gave one (--unix)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def usage(self) -> tuple[int, int]:
        """(threads, open file descriptors) of the server process and its workers."""
        threads = fds = 0
        for p in [psutil.Process(self.process.pid), *self.children()]:
            try:
                threads += p.num_threads()
                fds += p.num_fds()
            except psutil.NoSuchProcess:
                pass
        return threads, fds

    def client_connections(self) -> int:
        """TCP connections the server and its workers hold besides their listening sockets
        (a closed client's until the server noticed)."""
        count = 0
        for p in [psutil.Process(self.process.pid), *self.children()]:
            try:
                count += sum(c.status != psutil.CONN_LISTEN for c in p.net_connections("tcp"))
            except psutil.NoSuchProcess:
                pass
        return count

    def children(self) -> list[psutil.Process]:
        """The server's worker processes (and theirs); none once it ended."""
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def workers(self) -> int:
        return len(self.children())

    def stop(self, sig: int = signal.SIGTERM, limit: float = LIMIT) -> int:
        """Send `sig` (SIGTERM: a graceful stop) and wait for the exit status; a server that
        does not exit within `limit` is killed and the test fails."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(limit)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.name} did not exit within {limit:g} s of signal {sig}")

    def close(self, limit: float = 30.0) -> None:
        """The end of a test: SIGTERM and wait up to `limit` s, then SIGKILL whatever is left
        of the server's process group (a server stuck in its shutdown, a stray worker)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(limit)
        self.kill()

    def kill(self) -> None:
        """SIGKILL the server and its workers at once (as a crash of the node would) and reap."""
        children = self.children()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for child in children:  # a worker that left the group
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        self.process.wait()
        psutil.wait_procs(children, timeout=LIMIT)


def wait_for(probe: Callable[[], T], what: str, limit: float = LIMIT) -> T:
    """Poll `probe` until it returns something true; fail the test after `limit` seconds."""
    deadline = time.monotonic() + limit
    while not (found := probe()):
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} ({limit:g} s)")
        time.sleep(0.05)
    return found


def steady(probe: Callable[[], T | None], what: str, limit: float = 120.0, hold: float = 1.0) -> T:
    """What `probe` returns once it returned that (never None) for `hold` seconds: e.g. the
    threads and descriptors of a server with no client left. Whatever a closed connection or
    an ended session held goes on the server's own time, which on a busy machine is long;
    fails the test after `limit` seconds, naming what it saw."""
    deadline = time.monotonic() + limit
    seen: list[T | None] = []
    since = time.monotonic()
    while time.monotonic() < deadline:
        value = probe()
        if not seen or value != seen[-1]:
            since = time.monotonic()
            seen = [*seen[-9:], value]
        elif value is not None and time.monotonic() - since >= hold:
            return value
        time.sleep(0.1)
    pytest.fail(f"{what} did not hold still for {hold:g} s within {limit:g} s; the last values: {seen}")


def server_command(
    ready: Path,
    options: Sequence[str],
    backend: str | None,
    isolation: str | None,
    listen: str | Sequence[str] | None,
    program: Sequence[str] = ("cricket_server",),
) -> list[str]:
    """`python -m PROGRAM` with --backend, --isolation, --listen (each unless None)."""
    command = [sys.executable, "-m", *program]
    if backend is not None:
        command += ["--backend", backend]
    if isolation is not None:
        command += ["--isolation", isolation]
    for address in [listen] if isinstance(listen, str) else listen or ():
        command += ["--listen", address]
    return [*command, "--ready-file", str(ready), *options]


def start_server(
    folder: Path,
    *options: str,
    backend: str | None = BACKEND,
    isolation: str | None = "thread",
    listen: str | Sequence[str] | None = "127.0.0.1:0",
    program: Sequence[str] = ("cricket_server",),
    name: str = "server",
    prefix: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    enter: Callable[[], None] | None = None,
) -> Server:
    """A server on a free port (its ready file and log `NAME.ready`, `NAME.log` in `folder`),
    ready to serve; the caller stops it. `program`: the module and its first arguments
    (e.g. `("cricket_server", "restart", CKPT)`); `prefix`: a command to run it under (e.g.
    `ip netns exec NAME`); `enter`: called in the child before exec (e.g. to join a network
    namespace). The server runs in a process group of its own, its workers with it."""
    folder.mkdir(parents=True, exist_ok=True)
    ready, log_path = folder / f"{name}.ready", folder / f"{name}.log"
    command = [*prefix, *server_command(ready, options, backend, isolation, listen, program)]

    def preexec() -> None:
        os.setsid()
        die_with_parent()
        if enter is not None:
            enter()

    with open(log_path, "wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, preexec_fn=preexec,
            env=None if env is None else dict(env),
        )  # fmt: skip
    server = Server(process, "", log_path, f"{program[0]} ({name})")
    deadline = time.monotonic() + START_LIMIT
    while not ready.exists():
        if process.poll() is not None:
            server.kill()
            pytest.fail(f"{server.name} exited with {process.returncode}:\n{server.log()}")
        if time.monotonic() > deadline:
            server.kill()
            pytest.fail(f"{server.name} did not get ready in {START_LIMIT:g} s:\n{server.log()}")
        time.sleep(0.05)
    server.address = ready.read_text().strip()
    return server


@contextmanager
def running_server(folder: Path, *options: str, **how: Any) -> Iterator[Server]:
    """`start_server(folder, *options, **how)`, stopped with its workers at the end."""
    server = start_server(folder, *options, **how)
    try:
        yield server
    finally:
        server.close()


def server_list() -> Iterator[list[Server]]:
    """For a fixture: the servers a test starts (it appends them), stopped at its end."""
    started: list[Server] = []
    try:
        yield started
    finally:
        for server in started:
            server.close()


@contextmanager
def serving(server: RpcServer) -> Iterator[tuple[str, int]]:
    """An in-process RpcServer on a free loopback port, started; yields its address and
    shuts it down (closing every connection) at the end."""
    address = server.listen_tcp("127.0.0.1", 0)
    server.start()
    try:
        yield address
    finally:
        server.shutdown()


def die_with_parent() -> None:
    """In a child before exec: SIGKILL when the test process dies (even without cleanup)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_gracefully(server: Server, limit: float = LIMIT) -> int:
    """SIGTERM the server and wait for its exit status."""
    return server.stop(signal.SIGTERM, limit)


def run_under_cricket(
    address: str, program: Path | str, *, env: Mapping[str, str] | None = None,
    timeout: float = 300.0, python_options: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`python -m cricket_client.run --server ADDRESS PROGRAM` from the repository root, the GPU
    hidden from it (CUDA_VISIBLE_DEVICES=, the server keeps its own): remote must mean remote,
    so a call that stayed local fails instead of quietly running on this machine's GPU."""
    hidden = {**(os.environ if env is None else env), "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, *python_options, "-m", "cricket_client.run", "--server", address,
         str(program)],
        cwd=ROOT, env=hidden, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def run_locally(program: Path | str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """`python PROGRAM` from the repository root with this machine's CUDA (the local baseline)."""
    return subprocess.run(
        [sys.executable, str(program)], cwd=ROOT, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
