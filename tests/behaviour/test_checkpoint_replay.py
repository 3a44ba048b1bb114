"""Failover with replay: the server is killed after calls that no checkpoint holds; after
`cricket-restart` the client replays them, and every allocation is exactly as before the
crash. Runs on CRICKET_TEST_BACKEND (servers of its own; see test_checkpoint_restart)."""

from __future__ import annotations

import ctypes
import hashlib
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from behaviour_helpers import KERNELS, check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from checkpoint.reader import Checkpoint
from cricket_client import driver as cuda
from cricket_client.replay import MAX_BYTES_ENV


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def digest(ptr: object, size: int) -> str:
    return hashlib.sha256(read(ptr, size)).hexdigest()


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_calls_after_the_checkpoint_are_replayed_after_a_crash(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    server = start_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    try:
        rng = random.Random(3)
        a_size, b_size = 1 << 20, 4000
        a = check(cuda.cuMemAlloc(a_size))
        b = check(cuda.cuMemAlloc(b_size))
        check(cuda.cuMemcpyHtoD(a, rng.randbytes(a_size), a_size))
        kernels = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
        counter, _ = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
        stream = check(cuda.cuStreamCreate(0))
        cricket_client.checkpoint(tmp_path / "ckpt")

        # work no checkpoint holds: synchronous and pipelined calls, new memory, a new stream
        buffer = bytearray(rng.randbytes(a_size // 2))
        check(cuda.cuMemcpyHtoD(a, buffer, len(buffer)))
        buffer[:] = bytes(len(buffer))  # the log kept its own copy
        check(cuda.cuMemsetD8Async(b, 0x5A, b_size, stream))
        for v in (3, 4):
            check(
                cuda.cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, stream, ((v,), (ctypes.c_int,)), 0)
            )
        c = check(cuda.cuMemAlloc(70_000))
        check(cuda.cuMemcpyHtoD(c, rng.randbytes(70_000), 70_000))
        new_stream = check(cuda.cuStreamCreate(0))
        check(cuda.cuCtxSynchronize())
        before = {int(p): digest(p, n) for p, n in ((a, a_size), (b, b_size), (c, 70_000))}
        assert struct.unpack("<i", read(counter, 4))[0] == 32 * 7
        check(cuda.cuMemsetD8Async(c, 0x11, 100, new_stream))  # in flight at the crash
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        check(cuda.cuStreamSynchronize(new_stream))  # reconnects, replays, then runs
        before[int(c)] = hashlib.sha256(b"\x11" * 100 + read(c, 70_000)[100:]).hexdigest()
        after = {int(p): digest(p, n) for p, n in ((a, a_size), (b, b_size), (c, 70_000))}
        assert after == before
        new_counter, _ = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
        assert struct.unpack("<i", read(new_counter, 4))[0] == 32 * 7
        assert conn.address == restarted.address
    finally:
        conn.close()


def test_a_full_log_takes_a_new_checkpoint_first(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_BYTES_ENV, "100000")
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        ptr = check(cuda.cuMemAlloc(300_000))
        cricket_client.checkpoint(tmp_path / "ckpt")
        first = Checkpoint.open(tmp_path / "ckpt").manifest.sessions[0].calls
        data = random.Random(9).randbytes(300_000)
        check(cuda.cuMemcpyHtoD(ptr, data, len(data)))  # over the bound: a new checkpoint
        renewed = Checkpoint.open(tmp_path / "ckpt").manifest.sessions[0]
        assert renewed.calls > first
        assert Checkpoint.open(tmp_path / "ckpt").read_blob(renewed.allocations[0].contents) == data
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        assert read(ptr, len(data)) == data
    finally:
        conn.close()
