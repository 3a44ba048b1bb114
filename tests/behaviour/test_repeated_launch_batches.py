"""A loop that sends the same launches step after step (a decoding step: a copy in, a few
kernels, a read back) gets each step's results, whatever the server makes of the repeats (on
the cuda backend, graphs of the repeated batches): the parameters of every step, launches that
change shape midway, a function's module unloaded and loaded again, and a capture of the same
launches, which records kernel nodes. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from behaviour_helpers import KERNELS, check

import cricket_client
from cricket_client import driver as cuda

N = 1024
LAUNCHES = 10
CUBIN = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
SAXPY_TYPES = (ctypes.c_float, None, None, ctypes.c_int)


class Loop:
    """x and y on the device; `step(a_values)` sends x, one saxpy per value (y = a x + y),
    and reads y back, as the host computes it."""

    def __init__(self, saxpy: Any, stream: Any = 0) -> None:
        self.saxpy, self.stream = saxpy, stream
        self.x = check(cuda.cuMemAlloc(4 * N))
        self.y = check(cuda.cuMemAlloc(4 * N))
        check(cuda.cuMemsetD32(self.y, 0, N))
        self.expected = np.zeros(N, dtype=np.float32)

    def step(self, values: list[float], x: np.ndarray, grid: int = N // 256) -> np.ndarray:
        check(cuda.cuMemcpyHtoD(self.x, x, x.nbytes))
        for a in values:
            args = ((a, self.x, self.y, N), SAXPY_TYPES)
            check(cuda.cuLaunchKernel(self.saxpy, grid, 1, 1, 256, 1, 1, 0, self.stream, args, 0))
            covered = min(N, grid * 256)
            self.expected[:covered] += np.float32(a) * x[:covered]
        got = np.empty(N, dtype=np.float32)
        check(cuda.cuMemcpyDtoH(got, self.y, got.nbytes))
        return got

    def free(self) -> None:
        check(cuda.cuMemFree(self.x))
        check(cuda.cuMemFree(self.y))


def _inputs(step: int) -> np.ndarray:
    return ((np.arange(N) + step) % 7).astype(np.float32)  # small integers: exact sums


def test_every_step_gets_its_own_parameters_and_inputs(session: cricket_client.Connection) -> None:
    module = check(cuda.cuModuleLoadData(CUBIN))
    loop = Loop(check(cuda.cuModuleGetFunction(module, b"saxpy")))
    for step in range(40):
        values = [float((step + k) % 5) for k in range(LAUNCHES)]  # a parameter per step
        if step == 20:
            values = values[:7]  # fewer launches for a step
        grid = 2 if step in (25, 26, 27) else N // 256  # and another grid for three
        got = loop.step(values, _inputs(step), grid)
        assert np.array_equal(got, loop.expected), f"step {step}"
    loop.free()
    check(cuda.cuModuleUnload(module))


def test_a_module_loaded_again_serves_the_next_steps(session: cricket_client.Connection) -> None:
    module = check(cuda.cuModuleLoadData(CUBIN))
    loop = Loop(check(cuda.cuModuleGetFunction(module, b"saxpy")))
    values = [1.0] * LAUNCHES
    for step in range(5):
        assert np.array_equal(loop.step(values, _inputs(step)), loop.expected)
    old = loop.saxpy
    check(cuda.cuModuleUnload(module))
    module = check(cuda.cuModuleLoadData(CUBIN))
    loop.saxpy = check(cuda.cuModuleGetFunction(module, b"saxpy"))
    for step in range(5):
        assert np.array_equal(loop.step(values, _inputs(step)), loop.expected)
    args = ((1.0, loop.x, loop.y, N), SAXPY_TYPES)
    cuda.cuLaunchKernel(old, 4, 1, 1, 256, 1, 1, 0, 0, args, 0)  # the unloaded one
    assert cuda.cuCtxSynchronize() == (cuda.CUresult.CUDA_ERROR_INVALID_HANDLE,)
    loop.free()
    check(cuda.cuModuleUnload(module))


def test_a_capture_of_repeated_launches_records_kernel_nodes(
    session: cricket_client.Connection,
) -> None:
    module = check(cuda.cuModuleLoadData(CUBIN))
    stream = check(cuda.cuStreamCreate(0))
    loop = Loop(check(cuda.cuModuleGetFunction(module, b"saxpy")), stream)
    values = [2.0] * LAUNCHES
    for step in range(5):
        assert np.array_equal(loop.step(values, _inputs(step)), loop.expected)
    check(cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    for a in values:
        args = ((a, loop.x, loop.y, N), SAXPY_TYPES)
        check(cuda.cuLaunchKernel(loop.saxpy, 4, 1, 1, 256, 1, 1, 0, stream, args, 0))
    graph = check(cuda.cuStreamEndCapture(stream))
    nodes, count = check(cuda.cuGraphGetNodes(graph, 2 * LAUNCHES))
    assert count == LAUNCHES
    kinds = {check(cuda.cuGraphNodeGetType(node)) for node in nodes[:count]}
    assert kinds == {cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL}
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    loop.expected += np.float32(2.0 * LAUNCHES) * _inputs(4)  # x still holds step 4's input
    got = np.empty(N, dtype=np.float32)
    check(cuda.cuStreamSynchronize(stream))
    check(cuda.cuMemcpyDtoH(got, loop.y, got.nbytes))
    assert np.array_equal(got, loop.expected)
    for step in range(5, 8):  # and the loop goes on after the capture
        assert np.array_equal(loop.step(values, _inputs(step)), loop.expected)
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    loop.free()
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuModuleUnload(module))
