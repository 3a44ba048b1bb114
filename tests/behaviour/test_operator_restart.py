"""Operator checkpoints and restarts that an unmodified client survives.

The client (unmodified_client.py, a subprocess under `cricket-run`) is a cuda-python program
that uses only `cuda.bindings.driver` and never takes a checkpoint. It builds state; the operator checkpoints it (`cricket-checkpoint --server`,
SIGUSR1 with --checkpoint-dir, --checkpoint-every, or the final checkpoint on SIGTERM); the
server dies; `cricket-restart` serves the checkpoint on the same address; the client goes on
and reads its data back. Calls made after the checkpoint are reported as CallsLost naming
them; a session that no server holds is a quick, clear error. Both isolation modes; runs on
CRICKET_TEST_BACKEND.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from behaviour_helpers import ROOT, check, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client.reconnect import DEADLINE_ENV, DEFAULT_DEADLINE

MODES = ["thread", "process"]
WAIT = 120.0  # seconds: generous bounds for a busy machine
CLIENT = Path(__file__).with_name("unmodified_client.py")


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


# -- the operator's commands (the one place these tests start servers and checkpoints) -----


def operator_server(
    servers: list[ServerProcess], folder: Path, isolation: str, *extra: str
) -> ServerProcess:
    """cricket-server as an operator starts it (`--listen ADDRESS` in `extra` adds an address)."""
    return start_server(servers, folder, isolation, *extra)


def process(server: ServerProcess) -> subprocess.Popen[bytes]:
    """The server's process (`process` or, in older harnesses, `proc`)."""
    return server.process if hasattr(server, "process") else server.proc  # type: ignore[no-any-return]


def log_text(server: ServerProcess) -> str:
    log = server.log
    return log() if callable(log) else log.read_text()  # type: ignore[no-any-return]


def operator_checkpoint(address: str, target: Path, *extra: str) -> str:
    """`cricket-checkpoint --server ADDRESS TARGET` (ADDRESS: the operator's Unix socket); its output."""
    taken = subprocess.run(
        [sys.executable, "-m", "checkpoint", "--server", address, *extra, str(target)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=WAIT,
    )
    assert taken.returncode == 0, taken.stderr
    return taken.stdout


def operator_restart(
    servers: list[ServerProcess], folder: Path, ckpt: Path, address: str, isolation: str
) -> ServerProcess:
    """`cricket-restart CKPT --listen ADDRESS` (the address the dead server had)."""
    return start_restart(servers, folder, ckpt, listen=address, isolation=isolation)


# -- the client -------------------------------------------------------------------------------


class Client:
    """`cricket-run --server ADDRESS unmodified_client.py`, with the default reconnect
    settings."""

    def __init__(self, address: str, folder: Path) -> None:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # a call that stayed local would fail
        env.pop(DEADLINE_ENV, None)
        self.errors = folder / "client.err"
        with open(self.errors, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cricket_client.run", "--server", address, str(CLIENT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                cwd=ROOT,
                env=env,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str) -> str:
        try:
            line = self.lines.get(timeout=WAIT)
        except queue.Empty:
            line = "(nothing)"
        if line is None or not line.startswith(prefix):
            self.stop()
            pytest.fail(f"client said {line!r}, not {prefix!r}:\n{self.errors.read_text()}")
        return line

    def finish(self) -> None:
        """Wait for a clean exit."""
        assert self.proc.wait(timeout=WAIT) == 0, self.errors.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def clients() -> Iterator[list[Client]]:
    started: list[Client] = []
    yield started
    for client in started:
        client.stop()


# -- the four ways an operator checkpoints; each leaves the server dead ----------------------


def manifest_version(directory: Path) -> tuple[int, int] | None:
    try:
        st = (directory / "MANIFEST").stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def wait_until(condition: Callable[[], bool], what: str, server: ServerProcess) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {WAIT:g} s:\n{log_text(server)}")
        time.sleep(0.05)


def by_cricket_checkpoint(server: ServerProcess, ckpt: Path) -> None:
    assert "1 session(s)" in operator_checkpoint(server.operator, ckpt)
    server.kill()


def by_sigusr1(server: ServerProcess, ckpt: Path) -> None:
    process(server).send_signal(signal.SIGUSR1)
    wait_until(lambda: manifest_version(ckpt) is not None, "checkpoint after SIGUSR1", server)
    server.kill()


def by_checkpoint_every(server: ServerProcess, ckpt: Path) -> None:
    # The client is idle: the second checkpoint written from now on began after its calls.
    for _ in range(2):
        seen = manifest_version(ckpt)

        def newer(seen: tuple[int, int] | None = seen) -> bool:
            return manifest_version(ckpt) not in (None, seen)

        wait_until(newer, "periodic checkpoint", server)
    server.kill()


def by_final_checkpoint_on_sigterm(server: ServerProcess, ckpt: Path) -> None:
    process(server).send_signal(signal.SIGTERM)
    assert process(server).wait(timeout=WAIT) == 0, log_text(server)
    assert "final checkpoint into" in log_text(server)


# name: (server options, how the checkpoint is taken and the server ends)
OPERATOR_PATHS: dict[str, tuple[tuple[str, ...], Callable[[ServerProcess, Path], None]]] = {
    "cricket-checkpoint": ((), by_cricket_checkpoint),
    "sigusr1": (("--checkpoint-dir", "{ckpt}"), by_sigusr1),
    "checkpoint-every": (("--checkpoint-dir", "{ckpt}", "--checkpoint-every", "0.3"), by_checkpoint_every),
    "sigterm": (("--checkpoint-dir", "{ckpt}"), by_final_checkpoint_on_sigterm),
}  # fmt: skip


@pytest.mark.parametrize("path", list(OPERATOR_PATHS))
@pytest.mark.parametrize("isolation", MODES)
def test_an_unmodified_client_survives_an_operator_restart(
    tmp_path: Path,
    servers: list[ServerProcess],
    clients: list[Client],
    isolation: str,
    path: str,
) -> None:
    ckpt = tmp_path / "ckpt"
    options, take = OPERATOR_PATHS[path]
    server = operator_server(
        servers, tmp_path, isolation, *(o.format(ckpt=ckpt) for o in options)
    )
    clients.append(client := Client(server.address, tmp_path))
    client.expect("ready")
    take(server, ckpt)
    operator_restart(servers, tmp_path, ckpt, server.address, isolation)
    client.send("go")
    client.expect("ok")  # the data, the module, the function and the stream are all back
    client.finish()


@pytest.mark.parametrize("isolation", MODES)
def test_calls_after_an_operator_checkpoint_are_reported_lost_by_name(
    tmp_path: Path,
    servers: list[ServerProcess],
    clients: list[Client],
    isolation: str,
) -> None:
    server = operator_server(servers, tmp_path, isolation)
    clients.append(client := Client(server.address, tmp_path))
    client.expect("ready")
    operator_checkpoint(server.operator, tmp_path / "ckpt")
    client.send("more")  # a memset and a launch that the checkpoint does not hold
    client.expect("more done")
    server.kill()
    operator_restart(servers, tmp_path, tmp_path / "ckpt", server.address, isolation)
    client.send("go")
    lost = client.expect("lost").split()[1:]
    assert lost == ["CU_MEMSET", "CU_LAUNCH_KERNEL", "CU_STREAM_SYNCHRONIZE"]
    client.expect("ok")  # and it goes on from the checkpoint's state
    client.finish()


@pytest.mark.parametrize("isolation", MODES)
def test_reads_after_an_operator_checkpoint_are_not_reported_lost(
    tmp_path: Path,
    servers: list[ServerProcess],
    clients: list[Client],
    isolation: str,
) -> None:
    server = operator_server(servers, tmp_path, isolation)
    clients.append(client := Client(server.address, tmp_path))
    client.expect("ready")
    operator_checkpoint(server.operator, tmp_path / "ckpt")
    client.send("reads")  # copies to the host, synchronizations, queries: nothing changes
    client.expect("reads done")
    server.kill()
    operator_restart(servers, tmp_path, tmp_path / "ckpt", server.address, isolation)
    client.send("go")
    client.expect("ok")  # not "lost ...": the restored session is all the program has seen
    client.finish()


@pytest.mark.parametrize("isolation", MODES)
@pytest.mark.parametrize("instead", ["fresh server", "restart without it"])
def test_a_session_no_server_holds_is_a_quick_clear_error(
    tmp_path: Path,
    servers: list[ServerProcess],
    monkeypatch: pytest.MonkeyPatch,
    isolation: str,
    instead: str,
) -> None:
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    monkeypatch.delenv(cricket_client.ADDRESS_ENV, raising=False)
    server = operator_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    other = open_session(server.address, make_default=False)
    try:
        check(cuda.cuMemAlloc(4096))
        if instead == "restart without it":  # a checkpoint of the other session only
            session = hex(other.info.session_id)
            operator_checkpoint(server.operator, tmp_path / "other", "--session", session)
        server.kill()
        if instead == "fresh server":
            operator_server(servers, tmp_path, isolation, "--listen", server.address)
        else:
            operator_restart(servers, tmp_path, tmp_path / "other", server.address, isolation)
        start = time.monotonic()
        with pytest.raises(cricket_client.SessionNotFound) as gone:
            cuda.cuMemAlloc(64)
        assert time.monotonic() - start < DEFAULT_DEADLINE / 2  # not the whole deadline
        message = str(gone.value)
        assert f"session {conn.info.session_id:#x}" in message
        assert f"server at {server.address} does not hold it" in message
    finally:
        conn.close()
        other.close()
