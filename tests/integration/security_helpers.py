"""A cricket-server with --auth-token-file / --tls-* options, started and stopped by a test,
and a session that allocates and copies both ways through it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import server_harness
from server_harness import LIMIT

import cricket_client
from cricket_client import driver as cuda

ROOT = Path(__file__).resolve().parents[2]
E = cuda.CUresult


@contextmanager
def running_server(folder: Path, isolation: str, *options: str) -> Iterator[str]:
    """A sim server on a free loopback port with `options`; yields its "host:port"."""
    with server_harness.running_server(
        folder, "--sim-memory", "256M", *options,
        backend="sim", isolation=isolation, name=f"server-{isolation}",
    ) as server:  # fmt: skip
        yield server.address


def start_server(folder: Path, isolation: str, *options: str) -> subprocess.CompletedProcess[str]:
    """Run a server expected to refuse to start; its exit status and output."""
    return subprocess.run(
        [sys.executable, "-m", "cricket_server", "--backend", "sim", "--isolation", isolation,
         "--listen", "127.0.0.1:0", *options],
        cwd=ROOT, capture_output=True, text=True, timeout=LIMIT,
    )  # fmt: skip


def copy_round_trip(conn: cricket_client.Connection) -> None:
    """HELLO was answered; an allocation and a copy there and back keep the bytes."""
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
        data = np.random.default_rng(7).integers(0, 255, 3 << 20, dtype=np.uint8)
        err, ptr = cuda.cuMemAlloc(data.nbytes)
        assert err == E.CUDA_SUCCESS
        assert cuda.cuMemcpyHtoD(ptr, data, data.nbytes) == (E.CUDA_SUCCESS,)
        back = np.zeros_like(data)
        assert cuda.cuMemcpyDtoH(back, ptr, back.nbytes) == (E.CUDA_SUCCESS,)
        assert np.array_equal(back, data)
        assert cuda.cuMemFree(ptr) == (E.CUDA_SUCCESS,)
