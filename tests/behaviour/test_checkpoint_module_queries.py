"""What the small module, kernel, context and stream calls made or set survives checkpoint,
SIGKILL and cricket-restart: a library loaded from a file with its kernels listed, an
attribute set through cuKernelSetAttribute, the functions a module listed, and the ids of
contexts and streams."""

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


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def restart_from_checkpoint(
    servers: list[ServerProcess], server: ServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoint the session, kill its server, restart from the checkpoint and point the
    client at the restarted server."""
    cricket_client.checkpoint(tmp_path / "ckpt")
    server.kill()
    restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
    monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)


def test_module_queries_survive_checkpoint_and_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        dev = check(cuda.cuDeviceGet(0))
        lib = check(cuda.cuLibraryLoadFromFile(str(CUBIN), None, None, 0, None, None, 0))
        kernels = check(cuda.cuLibraryEnumerateKernels(check(cuda.cuLibraryGetKernelCount(lib)), lib))
        saxpy = check(cuda.cuLibraryGetKernel(lib, b"saxpy"))
        smem = cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(cuda.cuKernelSetAttribute(smem, 8192, saxpy, dev))
        module = check(cuda.cuModuleLoad(str(CUBIN)))
        functions = check(cuda.cuModuleEnumerateFunctions(check(cuda.cuModuleGetFunctionCount(module)), module))
        names = [bytes(check(cuda.cuFuncGetName(f))) for f in functions]
        stream = check(cuda.cuStreamCreate(0))
        stream_id = check(cuda.cuStreamGetId(stream))
        ctx_id = check(cuda.cuCtxGetId(None))

        restart_from_checkpoint(servers, server, tmp_path, monkeypatch)

        assert check(cuda.cuKernelGetAttribute(smem, saxpy, dev)) == 8192
        again = check(cuda.cuLibraryEnumerateKernels(len(kernels), lib))
        assert [int(k) for k in again] == [int(k) for k in kernels]
        assert [bytes(check(cuda.cuFuncGetName(f))) for f in functions] == names
        assert int(check(cuda.cuFuncGetModule(functions[0]))) == int(module)
        assert check(cuda.cuStreamGetId(stream)) == stream_id
        assert check(cuda.cuCtxGetId(None)) == ctx_id
        bias, size = check(cuda.cuLibraryGetGlobal(lib, b"bias"))
        out = np.zeros(1, np.int32)
        check(cuda.cuMemcpyDtoH(out, bias, size))
        assert out[0] == 7
    finally:
        conn.close()


def test_library_globals_keep_their_contents_across_checkpoint_and_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library's globals come back with what the program wrote into them (`bias`, asked
    for) and what its kernels wrote (`counter`, never asked for before the checkpoint)."""
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        lib = check(cuda.cuLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))
        bias, size = check(cuda.cuLibraryGetGlobal(lib, b"bias"))
        check(cuda.cuMemcpyHtoD(bias, np.array([41], np.int32), size))
        add = check(cuda.cuKernelGetFunction(check(cuda.cuLibraryGetKernel(lib, b"add_to_counter"))))
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 4, 1, 1, 0, 0, ((5,), (ctypes.c_int,)), 0))
        check(cuda.cuCtxSynchronize())

        restart_from_checkpoint(servers, server, tmp_path, monkeypatch)

        out = np.zeros(1, np.int32)
        bias, size = check(cuda.cuLibraryGetGlobal(lib, b"bias"))
        check(cuda.cuMemcpyDtoH(out, bias, size))
        assert out[0] == 41
        counter, size = check(cuda.cuLibraryGetGlobal(lib, b"counter"))
        check(cuda.cuMemcpyDtoH(out, counter, size))
        assert out[0] == 20
    finally:
        conn.close()


def test_a_global_only_a_library_kernel_wrote_comes_back(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No cuLibraryGetGlobal before the checkpoint: the kernel's writes to `counter` are kept."""
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        lib = check(cuda.cuLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))
        add = check(cuda.cuKernelGetFunction(check(cuda.cuLibraryGetKernel(lib, b"add_to_counter"))))
        check(cuda.cuLaunchKernel(add, 2, 1, 1, 4, 1, 1, 0, 0, ((3,), (ctypes.c_int,)), 0))
        check(cuda.cuCtxSynchronize())

        restart_from_checkpoint(servers, server, tmp_path, monkeypatch)

        out = np.zeros(1, np.int32)
        counter, size = check(cuda.cuLibraryGetGlobal(lib, b"counter"))
        check(cuda.cuMemcpyDtoH(out, counter, size))
        assert out[0] == 24
    finally:
        conn.close()
