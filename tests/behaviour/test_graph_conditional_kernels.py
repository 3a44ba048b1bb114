"""A WHILE conditional node ended by a kernel (cuda backend): the kernel gets the session's
conditional handle as an argument and calls cudaGraphSetConditional on the device; the server
gives it the real handle of the exec, so the loop runs exactly as many times as the kernel
says. sim kernels cannot set a condition, so this runs on the GPU machine only."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from behaviour_helpers import BACKEND, check

import cricket_client
from cricket_client import driver as cuda

pytestmark = pytest.mark.skipif(BACKEND != "cuda", reason="a kernel sets the condition")

# cudaGraphSetConditional is declared by the toolkit's cuda_device_runtime_api.h and resolved
# by the driver when the module loads; declared here so NVRTC needs no include path.
SOURCE = r"""
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);

extern "C" __global__ void count_down(unsigned long long handle, int *left, int *runs)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *runs += 1;
        *left -= 1;
        if (*left <= 0) cudaGraphSetConditional(handle, 0);
    }
}
"""


def compile_cubin() -> bytes:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    logs = []
    for options in ([b"--gpu-architecture=sm_90"], [b"--gpu-architecture=sm_90", b"-rdc=true"]):
        err, prog = nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"count_down.cu", 0, [], [])
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetCUBINSize(prog)
            cubin = b" " * size
            nvrtc.nvrtcGetCUBIN(prog, cubin)
            return cubin
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        logs.append(log.decode(errors="replace"))
    pytest.fail("NVRTC could not compile the count_down kernel:\n" + "\n".join(logs))


@pytest.mark.parametrize("times", [1, 5])
def test_a_kernel_ends_a_while_loop(session: cricket_client.Connection, times: int) -> None:
    module = check(cuda.cuModuleLoadData(compile_cubin()))
    kernel = check(cuda.cuModuleGetFunction(module, b"count_down"))
    counters = check(cuda.cuMemAlloc(8))
    left, runs = int(counters), int(counters) + 4
    graph = check(cuda.cuGraphCreate(0))
    ctx = check(cuda.cuCtxGetCurrent())
    handle = check(cuda.cuGraphConditionalHandleCreate(graph, ctx, 1, cuda.CU_GRAPH_COND_ASSIGN_DEFAULT))
    params = cuda.CUgraphNodeParams()
    params.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = handle
    params.conditional.type = cuda.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_WHILE
    params.conditional.size = 1
    params.conditional.ctx = ctx
    check(cuda.cuGraphAddNode(graph, None, None, 0, params))
    (body,) = params.conditional.phGraph_out
    k = cuda.CUDA_KERNEL_NODE_PARAMS()
    k.func, k.gridDimX, k.gridDimY, k.gridDimZ = kernel, 1, 1, 1
    k.blockDimX, k.blockDimY, k.blockDimZ = 32, 1, 1
    k.kernelParams = ((int(handle), left, runs), (ctypes.c_uint64, None, None))
    check(cuda.cuGraphAddKernelNode(body, None, 0, k))
    stream = check(cuda.cuStreamCreate(0))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    for _ in range(2):  # each launch starts again from the default value
        check(cuda.cuMemcpyHtoD(counters, np.array([times, 0], dtype=np.int32), 8))
        check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        out = np.zeros(2, dtype=np.int32)
        check(cuda.cuMemcpyDtoH(out, counters, 8))
        assert out.tolist() == [0, times]
