"""CUDA graphs across checkpoint, SIGKILL and cricket-restart: the same client relaunches its
instantiated execs (same handles) and gets the same results, host memory nodes included."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import KERNELS, check, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client.checkpoints import CheckpointFailed

N = 2048
BLOCK = 256


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def saxpy_args(a: float, dx: Any, dy: Any) -> Any:
    return ((a, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_restored_execs_relaunch_with_the_same_results(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    server = start_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    try:
        mod = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        saxpy = check(cuda.cuModuleGetFunction(mod, b"saxpy"))
        host_in = np.zeros(N, dtype=np.float32)
        host_out = np.zeros(N, dtype=np.float32)
        dx = check(cuda.cuMemAlloc(host_in.nbytes))
        dy = check(cuda.cuMemAlloc(host_in.nbytes))
        stream = check(cuda.cuStreamCreate(0))
        # captured: host -> x, y = 1, y += 3 x (twice), y -> host
        check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
        check(cuda.cuMemcpyHtoDAsync(dx, host_in, host_in.nbytes, stream))
        check(cuda.cuMemsetD32Async(dy, int(np.float32(1).view(np.uint32)), N, stream))
        for _ in range(2):
            check(cuda.cuLaunchKernel(saxpy, N // BLOCK, 1, 1, BLOCK, 1, 1, 0, stream,
                                      saxpy_args(3.0, dx, dy), 0))
        check(cuda.cuMemcpyDtoHAsync(host_out, dy, host_out.nbytes, stream))
        graph = check(cuda.cuStreamEndCapture(stream))
        exec_ = check(cuda.cuGraphInstantiate(graph, 0))
        # explicit, with a child graph: z = 0 then z += 0.5 y
        dz = check(cuda.cuMemAlloc(host_in.nbytes))
        child = check(cuda.cuGraphCreate(0))
        p = cuda.CUDA_KERNEL_NODE_PARAMS()
        p.func, p.gridDimX, p.gridDimY, p.gridDimZ = saxpy, N // BLOCK, 1, 1
        p.blockDimX, p.blockDimY, p.blockDimZ = BLOCK, 1, 1
        p.kernelParams = saxpy_args(0.5, dy, dz)
        check(cuda.cuGraphAddKernelNode(child, None, 0, p))
        explicit = check(cuda.cuGraphCreate(0))
        ms = cuda.CUDA_MEMSET_NODE_PARAMS()
        ms.dst, ms.value, ms.elementSize, ms.width, ms.height = dz, 0, 4, N, 1
        zero = check(cuda.cuGraphAddMemsetNode(explicit, None, 0, ms, check(cuda.cuCtxGetCurrent())))
        check(cuda.cuGraphAddChildGraphNode(explicit, [zero], 1, child))
        exec2 = check(cuda.cuGraphInstantiate(explicit, 0))

        def run(value: float) -> tuple[np.ndarray, np.ndarray]:
            host_in[:] = value
            check(cuda.cuGraphLaunch(exec_, stream))
            check(cuda.cuGraphLaunch(exec2, stream))
            check(cuda.cuStreamSynchronize(stream))
            z = np.empty(N, dtype=np.float32)
            check(cuda.cuMemcpyDtoH(z, dz, z.nbytes))
            return host_out.copy(), z

        before = run(2.0)
        assert np.all(before[0] == 13) and np.all(before[1] == 6.5)
        cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        host_out[:] = 0
        after = run(2.0)
        assert np.array_equal(after[0], before[0]) and np.array_equal(after[1], before[1])
        assert np.all(run(4.0)[0] == 25)  # the host node still reads the buffer anew
        # the graphs themselves came back too: same handles, same nodes
        _, count = check(cuda.cuGraphGetNodes(graph))
        assert count == 5
        again = check(cuda.cuGraphInstantiate(explicit, 0))
        check(cuda.cuGraphLaunch(again, stream))
        check(cuda.cuStreamSynchronize(stream))
    finally:
        conn.close()


def test_a_checkpoint_during_a_capture_is_refused_naming_it(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    server = start_server(servers, tmp_path, "thread")
    conn = open_session(server.address, make_default=True)
    try:
        stream = check(cuda.cuStreamCreate(0))
        check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
        with pytest.raises(CheckpointFailed, match="cuStreamEndCapture"):
            cricket_client.checkpoint(tmp_path / "ckpt")
        check(cuda.cuStreamEndCapture(stream))
        cricket_client.checkpoint(tmp_path / "ckpt")
    finally:
        conn.close()


def test_graph_calls_after_the_checkpoint_are_replayed_after_a_crash(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Capture, instantiate and launches made after the checkpoint come back by replay: the
    same graph and exec handles, and the device memory as the launches left it."""
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        mod = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        saxpy = check(cuda.cuModuleGetFunction(mod, b"saxpy"))
        host_in = np.ones(N, dtype=np.float32)
        dx = check(cuda.cuMemAlloc(host_in.nbytes))
        dy = check(cuda.cuMemAlloc(host_in.nbytes))
        check(cuda.cuMemsetD32(dy, 0, N))
        stream = check(cuda.cuStreamCreate(0))
        cricket_client.checkpoint(tmp_path / "ckpt")

        check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
        check(cuda.cuMemcpyHtoDAsync(dx, host_in, host_in.nbytes, stream))
        check(cuda.cuLaunchKernel(saxpy, N // BLOCK, 1, 1, BLOCK, 1, 1, 0, stream,
                                  saxpy_args(1.0, dx, dy), 0))
        graph = check(cuda.cuStreamEndCapture(stream))
        exec_ = check(cuda.cuGraphInstantiate(graph, 0))
        for value in (1.0, 2.0, 3.0):
            host_in[:] = value
            check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        check(cuda.cuStreamSynchronize(stream))  # reconnects and replays
        y = np.empty(N, dtype=np.float32)
        check(cuda.cuMemcpyDtoH(y, dy, y.nbytes))
        assert np.all(y == 6)  # the three launches, each with the bytes it was sent
        _, count = check(cuda.cuGraphGetNodes(graph))
        assert count == 2
        host_in[:] = 10
        check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        check(cuda.cuMemcpyDtoH(y, dy, y.nbytes))
        assert np.all(y == 16)
    finally:
        conn.close()
