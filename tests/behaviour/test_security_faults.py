"""Faults: clients killed at random points, half-sent records, stalled connections, SIGTERM,
and a backend error in one session. Each test starts its own server (backend from
CRICKET_TEST_BACKEND; thread isolation on sim, process isolation on cuda unless
CRICKET_TEST_ISOLATION says otherwise) and checks it frees what the clients held and serves on.

Run as a script (`python test_security_faults.py ADDRESS`), this file forks the killed
clients: each a random mix of calls, forever, until SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from behaviour_helpers import BACKEND, KERNELS, check, nvrtc_cubin, open_session
from server_harness import (
    LIMIT,
    ROOT,
    Server,
    die_with_parent,
    running_server,
    steady,
    stop_gracefully,
    wait_for,
)

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
CUBIN = KERNELS / "test_kernels.sm_90.cubin"
ISOLATION = os.environ.get("CRICKET_TEST_ISOLATION", "auto")
MODE = ISOLATION if ISOLATION != "auto" else ("process" if BACKEND == "cuda" else "thread")
KILLED_CLIENTS = 100
AT_ONCE = 10


def random_workload(address: str, seed: int) -> None:
    """Allocations, copies, memsets, launches, streams, events and frees, at random."""
    rng = random.Random(seed)
    conn = open_session(address, make_default=True)
    module = check(cuda.cuModuleLoadData(CUBIN.read_bytes()))
    fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
    ptrs: list[tuple[int, int]] = []
    streams, events = [], []
    os.write(1, f"started {os.getpid()}\n".encode())
    while True:
        op = rng.randrange(9)
        if op == 0 or not ptrs:
            size = rng.choice((256, 4096, 1 << 20, 3 << 20))
            ptrs.append((check(cuda.cuMemAlloc(size)), size))
        elif op == 1:
            ptr, size = rng.choice(ptrs)
            data = np.full(size // 4, rng.randrange(1 << 32), dtype=np.uint32)
            check(cuda.cuMemcpyHtoD(ptr, data, size))
        elif op == 2:
            ptr, size = rng.choice(ptrs)
            out = np.empty(size, dtype=np.uint8)
            check(cuda.cuMemcpyDtoH(out, ptr, size))
        elif op == 3:
            ptr, size = rng.choice(ptrs)
            check(cuda.cuMemsetD32Async(ptr, 7, size // 4, 0))
        elif op == 4:
            ptr, size = rng.choice(ptrs)
            n = size // 4
            args = ((ptr, 9, n), (None, ctypes.c_uint, ctypes.c_ulonglong))
            check(cuda.cuLaunchKernel(fill, (n + 255) // 256, 1, 1, 256, 1, 1, 0, 0, args, 0))
        elif op == 5:
            if len(streams) >= 4:
                check(cuda.cuStreamDestroy(streams.pop(0)))
            streams.append(check(cuda.cuStreamCreate(0)))
        elif op == 6:
            if len(events) >= 4:
                check(cuda.cuEventDestroy(events.pop(0)))
            event = check(cuda.cuEventCreate(0))
            check(cuda.cuEventRecord(event, rng.choice(streams) if streams else 0))
            events.append(event)
        elif op == 7:
            ptr, _ = ptrs.pop(rng.randrange(len(ptrs)))
            check(cuda.cuMemFree(ptr))
        else:
            check(cuda.cuCtxSynchronize())
    conn.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_server(tmp_path / "server", isolation=MODE, backend=BACKEND) as srv:
        yield srv


def free_memory(address: str) -> int:
    conn = open_session(address, make_default=False)
    with conn.active():
        free, _ = check(cuda.cuMemGetInfo())
    conn.close()
    return int(free)


def vector_add_works(conn: cricket_client.Connection) -> bool:
    with conn.active():
        mod = check(cuda.cuModuleLoadData(CUBIN.read_bytes()))
        func = check(cuda.cuModuleGetFunction(mod, b"vector_add"))
        n = 1000
        a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, dtype=np.float32)
        ptrs = [check(cuda.cuMemAlloc(a.nbytes)) for _ in range(3)]
        check(cuda.cuMemcpyHtoD(ptrs[0], a, a.nbytes))
        check(cuda.cuMemcpyHtoD(ptrs[1], b, b.nbytes))
        args = ((*ptrs, n), (None, None, None, ctypes.c_int))
        check(cuda.cuLaunchKernel(func, (n + 127) // 128, 1, 1, 128, 1, 1, 0, 0, args, 0))
        out = np.empty_like(a)
        check(cuda.cuMemcpyDtoH(out, ptrs[2], out.nbytes))
        return bool(np.array_equal(out, a + b))


def server_usage(server: Server) -> tuple[int, int]:
    """Threads and descriptors of the server; with process isolation those of the main
    process plus how many workers it has (the spare)."""
    if MODE == "process":
        import psutil

        main = psutil.Process(server.process.pid)
        return main.num_threads() + server.workers(), main.num_fds()
    return server.usage()


def idle_usage(server: Server) -> tuple[int, int]:
    """The server's usage with no client left, once steady (see `steady`)."""
    return steady(
        lambda: None if server.client_connections() else server_usage(server),
        "the idle server's (threads, fds)",
    )


def run_killed_clients(address: str, rng: random.Random) -> tuple[int, list[str]]:
    """KILLED_CLIENTS workload clients, AT_ONCE at a time, each SIGKILLed 0-1 s after it got
    to work; (how many got to work, what those that ended on their own said). The clients
    are forked by one process that has imported everything (starting 100 Pythons would
    take minutes on two cores)."""
    zygote = subprocess.Popen(
        [sys.executable, __file__, address],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=die_with_parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT), *sys.path])},  # for server_harness
    )  # fmt: skip
    assert zygote.stdin is not None and zygote.stdout is not None
    out = zygote.stdout.fileno()
    buffered = b""
    kill_at: dict[int, float] = {}  # running clients
    asked = started = working = 0
    failed: list[str] = []
    try:
        while started < KILLED_CLIENTS or kill_at:
            while asked < KILLED_CLIENTS and asked - started + len(kill_at) < AT_ONCE:
                zygote.stdin.write(f"{rng.randrange(1 << 30)}\n".encode())
                zygote.stdin.flush()
                asked += 1
            if select.select([out], [], [], 0.02)[0]:
                buffered += os.read(out, 1 << 16)
            *lines, buffered = buffered.split(b"\n")
            now = time.monotonic()
            for line in lines:
                what, pid_text, *rest = line.decode().split(" ", 2)
                pid = int(pid_text)
                if what == "forked":
                    kill_at.setdefault(pid, now + LIMIT)
                    started += 1
                elif what == "started":
                    kill_at[pid] = now + rng.uniform(0.0, 1.0)
                    working += 1
                elif what == "failed":
                    failed.append(" ".join(rest))
                    kill_at[pid] = 0.0
            for pid, when in list(kill_at.items()):
                if now >= when:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    del kill_at[pid]
    finally:
        zygote.kill()
        zygote.wait()
    return working, failed


def zygote(address: str) -> None:
    """Fork a workload client for each seed read from stdin; say 'forked PID' for each,
    and the clients say 'started PID' (or 'failed PID why') on the same stdout."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                random_workload(address, int(line))
            except BaseException:
                why = traceback.format_exc().replace("\n", " | ")
                os.write(1, f"failed {os.getpid()} {why}\n".encode())
                code = 1
            os._exit(code)
        os.write(1, f"forked {pid}\n".encode())


def test_clients_killed_at_random_points_leave_nothing_behind(server: Server) -> None:
    fresh = open_session(server.address, make_default=False)
    assert vector_add_works(fresh)
    fresh.close()
    free_before = free_memory(server.address)
    baseline = idle_usage(server)
    working, failed = run_killed_clients(server.address, random.Random(7))
    assert not failed, f"clients failed on their own before SIGKILL: {failed}"
    assert working == KILLED_CLIENTS
    assert "Traceback" not in server.log()
    usage = idle_usage(server)
    assert usage == baseline, f"threads and descriptors {usage}, {baseline} before"
    if BACKEND == "sim":
        assert free_memory(server.address) == free_before
    else:  # other tests' servers take and give back GPU memory meanwhile; a leak never
        # gives it back, so free memory must come back to where it was at some point
        wait_for(
            lambda: free_memory(server.address) > free_before - (64 << 20),
            f"free GPU memory back near {free_before >> 20} MiB",
            limit=120.0,
        )
    fresh = open_session(server.address, make_default=False)
    assert vector_add_works(fresh)
    fresh.close()


@pytest.mark.parametrize("stall", ["half a record", "nothing at all"])
def test_a_stalled_connection_never_blocks_other_clients(server: Server, stall: str) -> None:
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as stalled:
        if stall == "half a record":
            stalled.sendall((0x80000000 | 1000).to_bytes(4, "big") + bytes(10))
        for _ in range(3):  # other sessions start, work and end meanwhile
            conn = open_session(server.address, make_default=False)
            assert vector_add_works(conn)
            conn.close()
        stalled.sendall(bytes(100)) if stall == "half a record" else None
    assert server.process.poll() is None


def test_sigterm_drains_the_server_gracefully(server: Server) -> None:
    conn = open_session(server.address, make_default=False)
    with conn.active():
        check(cuda.cuMemAlloc(1 << 20))
    sid = conn.info.session_id
    wait_for(lambda: f"session {sid:#x} start" in server.log(), "the session's start")
    assert stop_gracefully(server) == 0
    log = server.log()
    assert f"session {sid:#x} end" in log and "cricket-server stopped" in log
    assert "Traceback" not in log


def _kernel_error(conn: cricket_client.Connection) -> int:
    """A backend error in `conn`'s session: on sim a kernel whose host code raises
    (LAUNCH_FAILED), on cuda a kernel writing outside every allocation (ILLEGAL_ADDRESS)."""
    with conn.active():
        if BACKEND == "sim":
            source = (
                'extern "C" __global__ void init_array(int *g_data, int *factor, int n)'
                "{ for (int i = 0; i < n; i++) g_data[threadIdx.x] += *factor; }"
            )
            mod = check(cuda.cuModuleLoadData(nvrtc_cubin(source, "faults.cu")))
            func = check(cuda.cuModuleGetFunction(mod, b"init_array"))
            data, factor = check(cuda.cuMemAlloc(64)), check(cuda.cuMemAlloc(4))
            big = np.array([1 << 20], dtype=np.int32)
            check(cuda.cuMemcpyHtoD(factor, big, 4))
            args = ((data, factor, 1 << 20), (None, None, ctypes.c_int))
        else:
            mod = check(cuda.cuModuleLoadData(CUBIN.read_bytes()))
            func = check(cuda.cuModuleGetFunction(mod, b"poke"))
            args = ((16, 1), (None, ctypes.c_int))
        check(cuda.cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, 0, args, 0))
        return int(cuda.cuCtxSynchronize()[0])


def test_a_backend_error_in_one_session_leaves_the_others_working(server: Server) -> None:
    faulty = open_session(server.address, make_default=False)
    other = open_session(server.address, make_default=False)
    expected = E.CUDA_ERROR_LAUNCH_FAILED if BACKEND == "sim" else E.CUDA_ERROR_ILLEGAL_ADDRESS
    assert _kernel_error(faulty) == expected
    assert vector_add_works(other)
    faulty.close()
    later = open_session(server.address, make_default=False)
    assert vector_add_works(later)
    later.close()
    other.close()


if __name__ == "__main__":
    zygote(sys.argv[1])
