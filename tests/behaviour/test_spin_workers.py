"""cricket-server --isolation process --spin-us N: the workers are started with the spin, and
a spinning client (CRICKET_SPIN_US) runs driver programs through them as usual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import psutil
import pytest
from behaviour_helpers import check, open_session
from server_harness import BACKEND, ROOT, running_server, wait_for

from cricket_client import driver as cuda


def worker_spins(pid: int) -> list[str]:
    """The --spin-us values of the worker processes of server `pid`."""
    values = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            cmdline = child.cmdline()
        except psutil.NoSuchProcess:
            continue
        if "cricket_server.workers.child" in cmdline and "--spin-us" in cmdline:
            values.append(cmdline[cmdline.index("--spin-us") + 1])
    return values


def test_spinning_workers_and_client_serve_driver_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRICKET_SPIN_US", "50")
    with running_server(tmp_path, "--spin-us", "50", isolation="process") as srv:
        wait_for(lambda: worker_spins(srv.process.pid), "a worker started with --spin-us")
        assert set(worker_spins(srv.process.pid)) == {"50.0"}
        conn = open_session(srv.address, make_default=False)
        try:
            with conn.active():
                data = np.arange(1 << 20, dtype=np.uint32)
                ptr = check(cuda.cuMemAlloc(data.nbytes))
                for _ in range(200):  # small synchronous calls, one after another
                    assert check(cuda.cuCtxGetDevice()) == check(cuda.cuDeviceGet(0))
                check(cuda.cuMemcpyHtoD(ptr, data, data.nbytes))
                out = np.empty_like(data)
                check(cuda.cuMemcpyDtoH(out, ptr, out.nbytes))
                assert np.array_equal(out, data)
                check(cuda.cuMemFree(ptr))
        finally:
            conn.close()


def test_spin_us_must_not_be_negative() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cricket_server", "--backend", BACKEND, "--spin-us", "-1",
         "--listen", "127.0.0.1:0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--spin-us" in done.stderr
