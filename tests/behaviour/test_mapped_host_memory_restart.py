"""Mapped host memory (cricket_client.mapped_host) across a server crash and cricket-restart:
the restored session holds the device copy as it was at the checkpoint, at the same device
pointer, and the program's and the kernels' writes keep reaching the other side afterwards.
Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from behaviour_helpers import KERNELS, check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


@pytest.mark.parametrize("who", ["program", "operator"])
def test_mapped_memory_survives_a_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, who: str
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    ckpt = tmp_path / "ckpt"
    try:
        kernels = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        poke = check(cuda.cuModuleGetFunction(kernels, b"poke"))
        host = check(cuda.cuMemHostAlloc(4, cuda.CU_MEMHOSTALLOC_DEVICEMAP))
        dptr = int(check(cuda.cuMemHostGetDevicePointer(host, 0)))
        flag = ctypes.c_int.from_address(host)
        flag.value = 3
        check(cuda.cuCtxSynchronize())  # the program's write reaches the device copy
        if who == "program":
            cricket_client.checkpoint(ckpt)
        else:
            taken = subprocess.run(
                [sys.executable, "-m", "checkpoint", "--server", server.operator, str(ckpt)],
                capture_output=True, text=True, cwd=ROOT,
            )  # fmt: skip
            assert taken.returncode == 0, taken.stderr
        server.kill()
        restarted = start_restart(servers, tmp_path, ckpt)
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        assert read(dptr, 4) == (3).to_bytes(4, "little")  # restored, same device pointer
        args = ((dptr, 5), (None, ctypes.c_int))
        check(cuda.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, 0, args, 0))
        check(cuda.cuCtxSynchronize())
        assert flag.value == 5
        flag.value = 6
        check(cuda.cuCtxSynchronize())
        assert read(dptr, 4) == (6).to_bytes(4, "little")
        check(cuda.cuMemFreeHost(host))
        assert conn.address != server.address
    finally:
        conn.close()
