"""Overlapping work in several streams, timed with events (after NVIDIA's simpleStreams).

The array is split among the streams; each stream initializes its part on the device, runs a
kernel that adds a factor to every element `niterations` times and copies its part back into
page-locked host memory (cudaMallocHost). Events time the whole (stderr only: timings vary).
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np
from common import check, compile_cubin, device_arch, load_kernel
from cuda.bindings import driver, runtime

SOURCE = """
extern "C" __global__ void init_array(int *g_data, const int *factor, int num_iterations)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < num_iterations; i++) g_data[idx] += *factor;
}
"""

NSTREAMS = 4
N = 1 << 20
NITERATIONS = 10
FACTOR = 5
THREADS = 512


def main() -> int:
    print(f"simpleStreams: {NSTREAMS} streams, {N} ints, {NITERATIONS} iterations")
    check(runtime.cudaSetDevice(0))
    module, kernel = load_kernel(compile_cubin(SOURCE, "streams.cu", device_arch()), "init_array")
    nbytes = N * 4
    h_a = check(runtime.cudaMallocHost(nbytes))
    host = np.ctypeslib.as_array((ctypes.c_int * N).from_address(h_a))
    host[:] = -1
    d_a = check(runtime.cudaMalloc(nbytes))
    d_c = check(runtime.cudaMalloc(4))
    factor = np.array([FACTOR], dtype=np.int32)
    check(runtime.cudaMemcpy(d_c, factor.ctypes.data, 4, runtime.cudaMemcpyKind.cudaMemcpyHostToDevice))

    streams = [check(runtime.cudaStreamCreate()) for _ in range(NSTREAMS)]
    start, stop = check(runtime.cudaEventCreate()), check(runtime.cudaEventCreate())
    check(runtime.cudaEventRecord(start, 0))
    part = N // NSTREAMS
    blocks = part // THREADS
    for i, stream in enumerate(streams):
        chunk = d_a + i * part * 4
        check(runtime.cudaMemsetAsync(chunk, 0, part * 4, stream))
        args = [
            np.array([chunk], dtype=np.uint64),
            np.array([int(d_c)], dtype=np.uint64),
            np.array([NITERATIONS], dtype=np.int32),
        ]
        params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
        check(driver.cuLaunchKernel(
            kernel, blocks, 1, 1, THREADS, 1, 1, 0, stream, params.ctypes.data, 0
        ))
        check(runtime.cudaMemcpyAsync(
            h_a + i * part * 4, chunk, part * 4, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream
        ))
    check(runtime.cudaEventRecord(stop, 0))
    check(runtime.cudaEventSynchronize(stop))
    print(f"{NSTREAMS} streams took {check(runtime.cudaEventElapsedTime(start, stop)):.3f} ms",
          file=sys.stderr)

    expected = FACTOR * NITERATIONS
    passed = bool(np.all(host == expected))
    print(f"every element equals {FACTOR} * {NITERATIONS} = {expected}: {passed}")
    for stream in streams:
        check(runtime.cudaStreamDestroy(stream))
    for event in (start, stop):
        check(runtime.cudaEventDestroy(event))
    del host
    check(runtime.cudaFreeHost(h_a))
    for p in (d_a, d_c):
        check(runtime.cudaFree(p))
    check(driver.cuModuleUnload(module))
    print("Test PASSED" if passed else "Test FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
