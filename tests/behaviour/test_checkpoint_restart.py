"""Checkpoint, SIGKILL the server, `cricket-restart`, and the same client goes on.

A program builds state (allocations of several sizes, a linked list of device pointers inside
device memory, a module with a global, streams, events), checkpoints its session, the server
is killed with SIGKILL, `cricket-restart` restores the checkpoint on a new port, and the same
client process continues through REMOTE_GPU_ADDRESS: same pointers, same handles, contents
bit-exact, the list_sum kernel still walks the list. Runs on CRICKET_TEST_BACKEND.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from behaviour_helpers import BACKEND, KERNELS, ROOT, check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from checkpoint.reader import Checkpoint
from cricket_client import driver as cuda
from cricket_client.reconnect import enable_reconnect

SIZES = [1, 100, 4096, 65536 + 3, 1 << 20, (3 << 20) + 17]  # small (sub-allocated) and large


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def build_list(values: list[int], big: int) -> list[int]:
    """A linked list of struct node {node *next; int value;}: some nodes in allocations of
    their own, some inside the allocation at `big`; returns the node addresses."""
    nodes = []
    for i in range(len(values)):
        nodes.append(int(check(cuda.cuMemAlloc(16))) if i % 2 else big + 4096 * (i + 1))
    for i, value in enumerate(values):
        nxt = nodes[i + 1] if i + 1 < len(nodes) else 0
        check(cuda.cuMemcpyHtoD(nodes[i], struct.pack("<Qi4x", nxt, value), 16))
    return nodes


def list_sum(kernels: Any, head: int) -> int:
    func = check(cuda.cuModuleGetFunction(kernels, b"list_sum"))
    out = check(cuda.cuMemAlloc(4))
    check(cuda.cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, 0, ((head, out), (None, None)), 0))
    total = struct.unpack("<i", read(out, 4))[0]
    check(cuda.cuMemFree(out))
    return total


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_checkpoint_sigkill_restart_and_the_client_goes_on(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    server = start_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    try:
        rng = random.Random(5)
        allocs = [check(cuda.cuMemAlloc(size)) for size in SIZES]
        contents = {}
        for ptr, size in zip(allocs, SIZES, strict=True):
            data = rng.randbytes(size)
            check(cuda.cuMemcpyHtoD(ptr, data, size))
            contents[int(ptr)] = data
        values = [3, -7, 11, 1000, 42, 5, 8]
        nodes = build_list(values, int(allocs[-1]))
        kernels = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
        counter, counter_size = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
        check(cuda.cuLaunchKernel(add, 2, 1, 1, 32, 1, 1, 0, 0, ((3,), (ctypes.c_int,)), 0))
        _least, greatest = check(cuda.cuCtxGetStreamPriorityRange())
        stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
        prio_stream = check(cuda.cuStreamCreateWithPriority(0, greatest))
        event = check(cuda.cuEventCreate(0))
        check(cuda.cuEventRecord(event, stream))
        check(cuda.cuCtxSynchronize())
        assert list_sum(kernels, nodes[0]) == sum(values)
        for ptr in allocs:  # the list lives partly in the last allocation: read it now
            contents[int(ptr)] = read(ptr, len(contents[int(ptr)]))

        info = cricket_client.checkpoint(tmp_path / "ckpt")
        assert info.sessions == 1 and info.bytes >= sum(SIZES)
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        # the same process, the same connection object, the same pointers and handles
        for ptr, size in zip(allocs, SIZES, strict=True):
            assert read(ptr, size) == contents[int(ptr)], f"allocation {int(ptr):#x} differs"
            base, got = check(cuda.cuMemGetAddressRange(ptr))
            assert (int(base), got) == (int(ptr), size)
        assert conn.address == restarted.address
        assert list_sum(kernels, nodes[0]) == sum(values)
        assert int(check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))) == int(add)
        check(cuda.cuStreamSynchronize(stream))
        check(cuda.cuStreamSynchronize(prio_stream))
        check(cuda.cuEventRecord(event, stream))
        check(cuda.cuEventSynchronize(event))
        new_counter, new_size = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
        assert new_size == counter_size
        if BACKEND == "sim":  # on cuda the driver places module globals (a restore reports a move)
            assert int(new_counter) == int(counter)
        assert struct.unpack("<i", read(new_counter, 4))[0] == 2 * 32 * 3
        # the restored server issues new pointers and handles that collide with none
        fresh = check(cuda.cuMemAlloc(1 << 20))
        assert all(
            not (int(p) <= int(fresh) < int(p) + s) for p, s in zip(allocs, SIZES, strict=True)
        )
        new_stream = check(cuda.cuStreamCreate(0))
        assert int(new_stream) & ((1 << 56) - 1) > int(event) & ((1 << 56) - 1)
    finally:
        conn.close()


def test_a_client_with_reconnecting_off_does_not_reconnect(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cricket_xdr.rpc.errors import ConnectionLost

    monkeypatch.setenv("CRICKET_RECONNECT_DEADLINE", "0")
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        check(cuda.cuMemAlloc(64))
        server.kill()
        with pytest.raises(ConnectionLost):
            cuda.cuMemAlloc(64)
    finally:
        conn.close()


def test_checkpoint_directory_inspect_and_verify(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        ptr = check(cuda.cuMemAlloc(4096))
        check(cuda.cuMemcpyHtoD(ptr, bytes(range(256)) * 16, 4096))
        cricket_client.checkpoint(tmp_path / "ckpt")
    finally:
        conn.close()
    run = [sys.executable, "-m", "checkpoint"]
    shown = subprocess.run(
        [*run, "inspect", str(tmp_path / "ckpt")], capture_output=True, text=True, cwd=ROOT
    )
    assert shown.returncode == 0, shown.stderr
    assert f"allocation {int(ptr):#x}: 4096 bytes" in shown.stdout
    verified = subprocess.run(
        [*run, "verify", str(tmp_path / "ckpt")], capture_output=True, text=True, cwd=ROOT
    )
    assert verified.returncode == 0 and "ok" in verified.stdout, verified.stderr


def test_cricket_checkpoint_asks_a_running_server(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    server = start_server(servers, tmp_path, "thread")  # one process holds every session
    first = open_session(server.address, make_default=False)
    second = open_session(server.address, make_default=False)
    try:
        with first.active():
            check(cuda.cuMemAlloc(1000))
        with second.active():
            check(cuda.cuMemAlloc(2000))
        taken = subprocess.run(
            [sys.executable, "-m", "checkpoint", "--server", server.operator, str(tmp_path / "all")],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert taken.returncode == 0, taken.stderr
        assert "2 session(s)" in taken.stdout
        one = subprocess.run(
            [
                sys.executable,
                "-m",
                "checkpoint",
                "--server",
                server.operator,
                "--session",
                hex(second.info.session_id),
                str(tmp_path / "one"),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert one.returncode == 0, one.stderr
        shown = subprocess.run(
            [sys.executable, "-m", "checkpoint", "inspect", str(tmp_path / "one")],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert f"session {second.info.session_id:#x}" in shown.stdout
        assert f"session {first.info.session_id:#x}" not in shown.stdout
    finally:
        first.close()
        second.close()
    assert os.path.isdir(tmp_path / "all")


def test_migration_to_another_server_with_an_explicit_redirect(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    """Checkpoint on one server, restart on another while the first still runs, point the
    client at the second and stop the first: the client moves with its session."""
    first = start_server(servers, tmp_path)
    conn = open_session(first.address, make_default=True)
    try:
        data = random.Random(11).randbytes(200_000)
        ptr = check(cuda.cuMemAlloc(len(data)))
        check(cuda.cuMemcpyHtoD(ptr, data, len(data)))
        kernels = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 8, 1, 1, 0, 0, ((2,), (ctypes.c_int,)), 0))
        cricket_client.checkpoint(tmp_path / "moving")
        second = start_restart(servers, tmp_path, tmp_path / "moving")
        cricket_client.redirect(second.address)
        first.stop()  # SIGTERM: the first server ends its sessions and connections
        assert read(ptr, len(data)) == data
        assert conn.address == second.address
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 8, 1, 1, 0, 0, ((1,), (ctypes.c_int,)), 0))
        counter, _ = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
        assert struct.unpack("<i", read(counter, 4))[0] == 8 * 2 + 8 * 1
    finally:
        conn.close()


def test_process_isolation_checkpoints_every_worker_and_restarts_one_per_session(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    """cricket-checkpoint --server asks a process-isolated server: every worker writes its
    session; cricket-restart --isolation process gives each session a worker of its own and
    routes each client's HELLO to the worker holding its session."""
    server = start_server(servers, tmp_path, "process")
    conns = [open_session(server.address, make_default=False) for _ in range(2)]
    data = [random.Random(i).randbytes(70_000 + i) for i in range(2)]
    ptrs = []
    try:
        for conn, payload in zip(conns, data, strict=True):
            enable_reconnect(conn, 60)
            with conn.active():
                ptrs.append(check(cuda.cuMemAlloc(len(payload))))
                check(cuda.cuMemcpyHtoD(ptrs[-1], payload, len(payload)))
        taken = subprocess.run(
            [sys.executable, "-m", "checkpoint", "--server", server.operator, str(tmp_path / "all")],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert taken.returncode == 0, taken.stderr
        assert "2 session(s)" in taken.stdout
        ids = {s.session_id for s in Checkpoint.open(tmp_path / "all").manifest.sessions}
        assert ids == {c.info.session_id for c in conns}
        server.kill()
        # auto: the sessions share handle values (separate workers), so a worker per session
        restarted = start_restart(servers, tmp_path, tmp_path / "all", isolation="auto")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        for conn, ptr, payload in zip(conns, ptrs, data, strict=True):
            with conn.active():
                assert read(ptr, len(payload)) == payload
                assert conn.address == restarted.address
                more = check(cuda.cuMemAlloc(4096))  # the session goes on in its worker
                check(cuda.cuMemcpyHtoD(more, b"m" * 4096, 4096))
                assert read(more, 4096) == b"m" * 4096
        log = restarted.log()
        for conn in conns:
            assert f"(restored session {conn.info.session_id:#x})" in log
    finally:
        for conn in conns:
            conn.close()


def test_process_isolation_checkpoints_every_worker_on_sigusr1(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    target = tmp_path / "periodic"
    server = start_server(servers, tmp_path, "process", "--checkpoint-dir", str(target))
    conns = [open_session(server.address, make_default=False) for _ in range(2)]
    try:
        for i, conn in enumerate(conns):
            with conn.active():
                ptr = check(cuda.cuMemAlloc(1000 + i))
                check(cuda.cuMemcpyHtoD(ptr, bytes([65 + i]) * (1000 + i), 1000 + i))
        server.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while not (target / "MANIFEST").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        ckpt = Checkpoint.open(target)
        ckpt.verify()
        found = {s.session_id: s for s in ckpt.manifest.sessions}
        assert set(found) == {c.info.session_id for c in conns}
        for i, conn in enumerate(conns):
            (alloc,) = found[conn.info.session_id].allocations
            assert ckpt.read_blob(alloc.contents) == bytes([65 + i]) * (1000 + i)
        assert not list(tmp_path.glob(".periodic.tmp-*"))  # the parts went into the new one
    finally:
        for conn in conns:
            conn.close()


def test_a_restarted_server_checkpoints_again_on_sigusr1(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        ptr = check(cuda.cuMemAlloc(1000))
        check(cuda.cuMemcpyHtoD(ptr, b"a" * 1000, 1000))
        cricket_client.checkpoint(tmp_path / "first")
        server.kill()
        again = tmp_path / "again"
        restarted = start_restart(
            servers, tmp_path, tmp_path / "first", "--checkpoint-dir", str(again)
        )
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        check(cuda.cuMemcpyHtoD(ptr, b"b" * 1000, 1000))  # resumes, then writes
        restarted.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while not (again / "MANIFEST").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        ckpt = Checkpoint.open(again)
        (session,) = ckpt.manifest.sessions
        assert session.session_id == conn.info.session_id
        assert ckpt.read_blob(session.allocations[0].contents) == b"b" * 1000
    finally:
        conn.close()


def test_a_restart_on_the_same_address_needs_no_new_address(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(cricket_client.ADDRESS_ENV, raising=False)
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        ptr = check(cuda.cuMemAlloc(64))
        check(cuda.cuMemcpyHtoD(ptr, b"s" * 64, 64))
        cricket_client.checkpoint(tmp_path / "c")
        server.kill()
        start_restart(servers, tmp_path, tmp_path / "c", listen=server.address)
        assert read(ptr, 64) == b"s" * 64
        assert conn.address == server.address
    finally:
        conn.close()


def test_a_restored_worker_no_client_resumes_is_stopped_after_the_resume_timeout(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=False)
    try:
        with conn.active():
            check(cuda.cuMemAlloc(4096))
            cricket_client.checkpoint(tmp_path / "c")
        session = conn.info.session_id
    finally:
        conn.close()
    restarted = start_restart(
        servers, tmp_path, tmp_path / "c", "--resume-timeout", "0.5", isolation="process"
    )
    deadline = time.monotonic() + 60
    while "freed 1 restored session(s)" not in restarted.log():
        assert time.monotonic() < deadline, restarted.log()
        time.sleep(0.05)
    while f"ended (exit status 0): session {session:#x}" not in restarted.log():
        assert time.monotonic() < deadline, restarted.log()
        time.sleep(0.05)


def test_a_damaged_checkpoint_is_refused_before_any_worker_starts(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=False)
    try:
        with conn.active():
            ptr = check(cuda.cuMemAlloc(70_000))
            check(cuda.cuMemcpyHtoD(ptr, random.Random(2).randbytes(70_000), 70_000))
            cricket_client.checkpoint(tmp_path / "c")
    finally:
        conn.close()
    (blob,) = (tmp_path / "c").rglob("alloc-*")
    blob.write_bytes(blob.read_bytes()[:-1])
    refused = subprocess.run(
        [sys.executable, "-m", "cricket_server", "restart", str(tmp_path / "c"), "--listen",
         "127.0.0.1:0", "--backend", BACKEND, "--isolation", "process"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 1
    assert str(blob) in refused.stderr and "worker" not in refused.stderr
