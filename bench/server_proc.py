"""Start `cricket-server` in a subprocess for a benchmark and stop it afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def cricket_server(backend: str, *, unix: bool = False) -> Iterator[str]:
    """Yield the address ("host:port" or "unix:PATH") of a fresh server on `backend`."""
    with cricket_server_process(backend, unix=unix) as (address, _pid):
        yield address


@contextmanager
def cricket_server_process(
    backend: str,
    *,
    unix: bool = False,
    isolation: str = "auto",
    spin_us: float | None = None,
    runner: Sequence[str] = ("-m", "cricket_server"),
) -> Iterator[tuple[str, int]]:
    """Yield (address, process id) of a fresh server on `backend` with `--isolation`
    `isolation` and, when given, `--spin-us spin_us`. `runner`: the interpreter's arguments
    that run the server (a profiling wrapper around cricket_server's main, say); the server's
    options follow them."""
    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready")
        args = [sys.executable, *runner, "--backend", backend,
                "--isolation", isolation, "--ready-file", ready, "--log-level", "warning"]
        args += ["--unix", os.path.join(tmp, "s.sock")] if unix else ["--listen", "127.0.0.1:0"]
        if spin_us is not None:
            args += ["--spin-us", f"{spin_us:g}"]
        proc = subprocess.Popen(args)
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(ready):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"cricket-server ({backend}) did not start")
                time.sleep(0.02)
            yield Path(ready).read_text().strip(), proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
