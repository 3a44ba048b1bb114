"""A library's module (cuLibraryGetModule) survives checkpoint, SIGKILL and cricket-restart
with its library: the same handle, the function taken from it launches, the globals read
through it keep their contents, and it stays the library's (cuModuleUnload refused, gone
with cuLibraryUnload)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from behaviour_helpers import KERNELS, check, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda

CUBIN = KERNELS / "test_kernels.sm_90.cubin"
ERR = cuda.CUresult


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def read_int(ptr: cuda.CUdeviceptr) -> int:
    out = np.zeros(1, np.int32)
    check(cuda.cuMemcpyDtoH(out, ptr, 4))
    return int(out[0])


def test_a_librarys_module_survives_checkpoint_and_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        lib = check(cuda.cuLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))
        module = check(cuda.cuLibraryGetModule(lib))
        add = check(cuda.cuModuleGetFunction(module, b"add_to_counter"))
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 4, 1, 1, 0, 0, ((5,), (ctypes.c_int,)), 0))
        bias, size = check(cuda.cuModuleGetGlobal(module, b"bias"))
        check(cuda.cuMemcpyHtoD(bias, np.array([41], np.int32), size))
        check(cuda.cuCtxSynchronize())

        cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        assert int(check(cuda.cuLibraryGetModule(lib))) == int(module)
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 4, 1, 1, 0, 0, ((5,), (ctypes.c_int,)), 0))
        check(cuda.cuCtxSynchronize())
        counter, _ = check(cuda.cuModuleGetGlobal(module, b"counter"))
        assert read_int(counter) == 40
        bias, _ = check(cuda.cuModuleGetGlobal(module, b"bias"))
        assert read_int(bias) == 41
        assert cuda.cuModuleUnload(module) == (ERR.CUDA_ERROR_NOT_PERMITTED,)
        check(cuda.cuModuleGetFunction(module, b"empty"))
        check(cuda.cuLibraryUnload(lib))
        assert cuda.cuModuleGetFunction(module, b"empty")[0] == ERR.CUDA_ERROR_INVALID_HANDLE
    finally:
        conn.close()
