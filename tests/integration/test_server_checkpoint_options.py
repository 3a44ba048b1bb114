"""cricket-server --checkpoint-dir: SIGUSR1 writes a checkpoint of every session, SIGTERM
writes a final one before the server exits, with thread and process isolation (there every
worker writes its session's part); --checkpoint-every alone is refused."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_server_cli import cli_server, client, ready_client, wait_for

from checkpoint.reader import Checkpoint


def _sessions_in(directory: Path) -> int:
    return len(Checkpoint.open(directory).manifest.sessions)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_sigusr1_and_sigterm_write_checkpoints(tmp_path: Path, isolation: str) -> None:
    ckpt = tmp_path / "ckpt"
    with cli_server(tmp_path, "--listen", "127.0.0.1:0", "--isolation", isolation,
                    "--checkpoint-dir", str(ckpt)) as srv:  # fmt: skip
        rpc, c = client(srv)
        with rpc:
            ready_client(c)
            ptr = c.CU_MEM_ALLOC(4096)
            assert ptr.err == 0
            assert c.CU_MEMCPY_HTOD(ptr.value, b"\x42" * 4096) == 0
            srv.process.send_signal(signal.SIGUSR1)
            wait_for(lambda: "session(s)" in srv.log())
            assert _sessions_in(ckpt) == 1
            first = srv.log().count("session(s)")
            assert srv.stop(signal.SIGTERM) == 0
    log = srv.log()
    assert "final checkpoint" in log
    assert log.count("session(s)") == first + 1
    assert _sessions_in(ckpt) == 1
    assert not list(tmp_path.glob(".ckpt.tmp-*"))
    verify = subprocess.run([sys.executable, "-m", "checkpoint", "verify", str(ckpt)],
                            capture_output=True, text=True)  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_checkpoint_every_needs_a_directory() -> None:
    base = [sys.executable, "-m", "cricket_server", "--backend", "sim", "--listen", "127.0.0.1:0"]
    every_alone = subprocess.run([*base, "--checkpoint-every", "5"], capture_output=True, text=True,
                                 timeout=60)  # fmt: skip
    assert every_alone.returncode == 2 and "--checkpoint-every needs --checkpoint-dir" in every_alone.stderr
