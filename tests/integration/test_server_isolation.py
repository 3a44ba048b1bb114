"""`cricket-server --isolation process` on the sim backend: one worker process a connection.

Each test starts its own server on a free loopback port and stops it; the workers' pids come
from the server's log (the worker's own lines carry "[worker PID]"), their fate from psutil.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
import pytest
import server_harness
from server_harness import LIMIT, wait_for

import cricket_client
from cricket_client import driver as cuda
from cricket_server.cli import resolve_isolation
from cricket_xdr.rpc.errors import RpcError

ROOT = Path(__file__).resolve().parents[2]
CUBIN = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"
E = cuda.CUresult


@dataclass
class Server(server_harness.Server):
    """A `--isolation process` server: its workers as its log names them."""

    def worker_of(self, conn: cricket_client.Connection) -> int:
        """The pid of the worker that opened `conn`'s session."""
        pattern = rf"\[worker (\d+)\]: session {conn.info.session_id:#x} start"
        return int(wait_for(lambda: re.search(pattern, self.log()), "session start line")[1])

    def spares(self) -> list[int]:
        return [
            int(p) for p in re.findall(r"worker (\d+) ready \(backend sim, spare\)", self.log())
        ]

    def ended(self, pid: int) -> str | None:
        found = re.search(rf"worker {pid} ended \(([^)]*)\)", self.log())
        return found[1] if found else None


@contextmanager
def running_server(folder: Path, *options: str) -> Iterator[Server]:
    with server_harness.running_server(
        folder, "--sim-memory", "256M", *options, backend="sim", isolation="process"
    ) as srv:
        yield Server(srv.process, srv.address, srv.log_path, srv.name)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_server(tmp_path) as srv:
        yield srv


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _session(address: str) -> cricket_client.Connection:
    conn = cricket_client.connect(address, make_default=False, timeout=LIMIT)
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
    return conn


def _vector_add_works(conn: cricket_client.Connection) -> bool:
    """Allocation, copies both ways and a vector_add launch, in `conn`'s session."""
    with conn.active():
        err, mod = cuda.cuModuleLoadData(CUBIN.read_bytes())
        assert err == E.CUDA_SUCCESS, cricket_client.last_error_message()
        err, func = cuda.cuModuleGetFunction(mod, b"vector_add")
        n = 1000
        a = np.arange(n, dtype=np.float32)
        b = np.full(n, 0.5, dtype=np.float32)
        ptrs = [cuda.cuMemAlloc(a.nbytes)[1] for _ in range(3)]
        assert cuda.cuMemcpyHtoD(ptrs[0], a, a.nbytes) == (E.CUDA_SUCCESS,)
        assert cuda.cuMemcpyHtoD(ptrs[1], b, b.nbytes) == (E.CUDA_SUCCESS,)
        args = ((*ptrs, n), (None, None, None, ctypes.c_int))
        assert cuda.cuLaunchKernel(func, (n + 127) // 128, 1, 1, 128, 1, 1, 0, 0, args, 0) == (
            E.CUDA_SUCCESS,
        )
        out = np.empty_like(a)
        assert cuda.cuMemcpyDtoH(out, ptrs[2], out.nbytes) == (E.CUDA_SUCCESS,)
        return bool(np.array_equal(out, a + b))


def test_auto_isolation_is_process_for_cuda_and_thread_for_sim() -> None:
    assert resolve_isolation("auto", "cuda") == ("process", "cuda")
    assert resolve_isolation("auto", "sim") == ("thread", "sim")
    assert resolve_isolation("process", "sim") == ("process", "sim")
    assert resolve_isolation("thread", "cuda") == ("thread", "cuda")


def test_each_client_gets_its_own_worker_and_a_spare_waits(server: Server) -> None:
    assert "isolation process" in server.log()
    first_spare = server.spares()[0]
    one, two = _session(server.address), _session(server.address)
    try:
        pids = {server.worker_of(one), server.worker_of(two)}
        assert len(pids) == 2 and first_spare in pids
        assert server.process.pid not in pids
        assert pids <= {c.pid for c in psutil.Process(server.process.pid).children()}
        # the worker taken second was a spare too, and the next spare is there for a third client
        wait_for(lambda: set(server.spares()) - pids, "a spare worker after two connections")
        assert _vector_add_works(one) and _vector_add_works(two)
    finally:
        one.close()
        two.close()


def test_a_killed_worker_leaves_the_other_client_working(server: Server) -> None:
    victim, bystander = _session(server.address), _session(server.address)
    try:
        pid = server.worker_of(victim)
        with victim.active():
            assert cuda.cuMemAlloc(1 << 20)[0] == E.CUDA_SUCCESS
        psutil.Process(pid).kill()
        wait_for(lambda: server.ended(pid), "the killed worker's end line")
        assert server.ended(pid) == "killed by SIGKILL"
        with victim.active(), pytest.raises(RpcError):
            cuda.cuMemAlloc(16)
        assert _vector_add_works(bystander)
        newcomer = _session(server.address)  # the server goes on accepting
        try:
            assert _vector_add_works(newcomer)
        finally:
            newcomer.close()
    finally:
        victim.close()
        bystander.close()


def test_a_client_that_disconnects_ends_its_worker(server: Server) -> None:
    conn = _session(server.address)
    pid = server.worker_of(conn)
    with conn.active():
        assert cuda.cuMemAlloc(4096)[0] == E.CUDA_SUCCESS
    conn.close()
    wait_for(lambda: _gone(pid), f"worker {pid} to exit")
    wait_for(lambda: server.ended(pid), "the worker's end line")
    assert server.ended(pid) == "exit status 0"
    line = next(x for x in server.log().splitlines() if f"worker {pid} ended" in x)
    assert f"session {conn.info.session_id:#x}" in line and "peer 127.0.0.1:" in line


def test_a_sticky_error_spoils_only_its_own_session(server: Server) -> None:
    faulty, other = _session(server.address), _session(server.address)
    try:
        with faulty.active():
            err, mod = cuda.cuModuleLoadData(CUBIN.read_bytes())
            err, poke = cuda.cuModuleGetFunction(mod, b"poke")
            args = ((16, 1), (None, ctypes.c_int))
            assert cuda.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, 0, args, 0) == (E.CUDA_SUCCESS,)
            assert cuda.cuCtxSynchronize() == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)
            # CUDA's semantics: the process's CUDA state is spoiled, every later call fails
            assert cuda.cuMemAlloc(16) == (E.CUDA_ERROR_ILLEGAL_ADDRESS, None)
            assert "CUDA_ERROR_ILLEGAL_ADDRESS earlier in this session" in (
                cricket_client.last_error_message()
            )
        assert _vector_add_works(other)
    finally:
        faulty.close()
        other.close()
    pid = server.worker_of(faulty)
    wait_for(lambda: _gone(pid), f"the faulty session's worker {pid} to exit")


def test_sigterm_stops_every_worker_and_exits_0(server: Server) -> None:
    conn = _session(server.address)
    try:
        with conn.active():
            assert cuda.cuMemAlloc(1 << 20)[0] == E.CUDA_SUCCESS
        workers = _children(server.process.pid)
        assert len(workers) == 2  # the one serving conn and the spare
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=LIMIT) == 0
        assert all(_gone(w.pid) for w in workers)
        log = server.log()
        assert f"session {conn.info.session_id:#x} end (server shutdown)" in log
        assert "1 allocations" in log
    finally:
        conn.close()


def test_workers_do_not_outlive_a_killed_server(server: Server) -> None:
    conn = _session(server.address)
    try:
        workers = _children(server.process.pid)
        assert len(workers) == 2
        server.process.kill()
        server.process.wait()
        for worker in workers:
            wait_for(lambda w=worker: _gone(w.pid), f"worker {worker.pid} to exit")
    finally:
        conn.close()


def test_spare_workers_wait_for_a_burst_of_connections(tmp_path: Path) -> None:
    with running_server(tmp_path, "--spare-workers", "2") as server:
        spares = wait_for(
            lambda: server.spares() if len(server.spares()) == 2 else None, "2 spares"
        )
        one, two = _session(server.address), _session(server.address)
        try:
            assert {server.worker_of(one), server.worker_of(two)} == set(spares)
        finally:
            one.close()
            two.close()


def test_a_backend_that_no_worker_can_create_stops_the_server_with_its_reason(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cricket_server", "--backend", "cuda", "--isolation", "process",
         "--listen", "127.0.0.1:0", "--ready-file", str(tmp_path / "ready")],
        cwd=ROOT, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, capture_output=True,
        text=True, timeout=LIMIT,
    )  # fmt: skip
    assert result.returncode == 1
    assert "could not create the cuda backend" in result.stderr
    assert re.search(r"--isolation process: worker \d+ ended \(exit status 1\) before it was ready",
                     result.stderr)  # fmt: skip
    assert not (tmp_path / "ready").exists()
