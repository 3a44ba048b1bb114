"""A cricket-server subprocess of a test's own, with options (limits, isolation), and what the
security tests read of it: its log, its threads and descriptors, a fresh session's view.

Used by tests/behaviour/test_security_*.py (on the backend CRICKET_TEST_BACKEND names) and by
the unit tests of limits, faults, fuzzing, load and network namespaces (on sim).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")
PR_SET_PDEATHSIG = 1
LIMIT = 60.0  # seconds anything may take before a test gives up
T = TypeVar("T")


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    address: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def usage(self) -> tuple[int, int]:
        """(threads, open file descriptors) of the server process and its workers."""
        procs = [psutil.Process(self.process.pid)]
        procs += procs[0].children(recursive=True)
        threads = fds = 0
        for p in procs:
            try:
                threads += p.num_threads()
                fds += p.num_fds()
            except psutil.NoSuchProcess:
                pass
        return threads, fds

    def workers(self) -> int:
        return len(psutil.Process(self.process.pid).children(recursive=True))


def wait_for(probe: Callable[[], T], what: str, limit: float = LIMIT) -> T:
    deadline = time.monotonic() + limit
    while not (found := probe()):
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.05)
    return found


def server_command(
    ready: Path, options: Sequence[str], backend: str, isolation: str, listen: str
) -> list[str]:
    return [
        sys.executable, "-m", "cricket_server", "--backend", backend, "--isolation", isolation,
        "--listen", listen, "--ready-file", str(ready), *options,
    ]  # fmt: skip


@contextmanager
def running_server(
    folder: Path,
    *options: str,
    backend: str = BACKEND,
    isolation: str = "thread",
    listen: str = "127.0.0.1:0",
    prefix: Sequence[str] = (),
) -> Iterator[Server]:
    """A server on a free port; killed with its workers at the end whatever happened.
    `prefix`: a command to run it under (e.g. `ip netns exec NAME`)."""
    folder.mkdir(parents=True, exist_ok=True)
    ready, log_path = folder / "ready", folder / "server.log"
    with open(log_path, "wb") as out:
        process = subprocess.Popen(
            [*prefix, *server_command(ready, options, backend, isolation, listen)],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent,
        )  # fmt: skip
    try:
        wait_for(lambda: ready.exists() or process.poll() is not None, "the ready file")
        if process.poll() is not None:
            pytest.fail(f"cricket-server exited:\n{log_path.read_text()}")
        yield Server(process, ready.read_text().strip(), log_path)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def die_with_parent() -> None:
    """In a child before exec: SIGKILL when the test process dies (even without cleanup)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_gracefully(server: Server, limit: float = LIMIT) -> int:
    """SIGTERM the server and wait for its exit status."""
    server.process.send_signal(signal.SIGTERM)
    return server.process.wait(limit)
