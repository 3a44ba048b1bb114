"""Timing a reduction with the GPU's clock (after NVIDIA's cuda-python clock_nvrtc example).

Each block reduces the same input to its minimum in shared memory and records clock64() at
its start and end. The results and that every block's clock moved forward are printed; the
clock counts themselves vary from run to run and go to stderr.
"""

from __future__ import annotations

import sys

import numpy as np
from common import check, compile_cubin, device_arch, load_kernel
from cuda.bindings import driver, runtime

SOURCE = """
extern "C" __global__ void timedReduction(const float *input, float *output, long long *timer)
{
    extern __shared__ float shared[];
    const int tid = threadIdx.x;
    const int bid = blockIdx.x;
    if (tid == 0) timer[bid] = clock64();
    shared[tid] = input[tid];
    shared[tid + blockDim.x] = input[tid + blockDim.x];
    for (int d = blockDim.x; d > 0; d /= 2) {
        __syncthreads();
        if (tid < d) {
            float f0 = shared[tid];
            float f1 = shared[tid + d];
            if (f1 < f0) shared[tid] = f1;
        }
    }
    if (tid == 0) output[bid] = shared[0];
    __syncthreads();
    if (tid == 0) timer[bid + gridDim.x] = clock64();
}
"""

NUM_BLOCKS = 64
NUM_THREADS = 256


def main() -> int:
    print("CUDA Clock sample")
    check(runtime.cudaSetDevice(0))
    module, kernel = load_kernel(
        compile_cubin(SOURCE, "clock.cu", device_arch()), "timedReduction"
    )
    hinput = np.arange(2 * NUM_THREADS, 0, -1, dtype=np.float32) - 1  # 511 ... 0
    timer = np.zeros(2 * NUM_BLOCKS, dtype=np.int64)
    output = np.zeros(NUM_BLOCKS, dtype=np.float32)
    d_input = check(runtime.cudaMalloc(hinput.nbytes))
    d_output = check(runtime.cudaMalloc(output.nbytes))
    d_timer = check(runtime.cudaMalloc(timer.nbytes))
    check(runtime.cudaMemcpy(
        d_input, hinput.ctypes.data, hinput.nbytes, runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    ))

    args = [np.array([int(p)], dtype=np.uint64) for p in (d_input, d_output, d_timer)]
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    shared = 4 * 2 * NUM_THREADS
    check(driver.cuLaunchKernel(
        kernel, NUM_BLOCKS, 1, 1, NUM_THREADS, 1, 1, shared, 0, params.ctypes.data, 0
    ))
    check(runtime.cudaDeviceSynchronize())
    d2h = runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
    check(runtime.cudaMemcpy(timer.ctypes.data, d_timer, timer.nbytes, d2h))
    check(runtime.cudaMemcpy(output.ctypes.data, d_output, output.nbytes, d2h))

    elapsed = timer[NUM_BLOCKS:] - timer[:NUM_BLOCKS]
    print(f"{NUM_BLOCKS} blocks of {NUM_THREADS} threads, minimum found by each: "
          f"{sorted(set(output.tolist()))}")
    print(f"every block's clock moved forward: {bool(np.all(elapsed > 0))}")
    print(f"Average clocks/block = {float(np.mean(elapsed)):.1f}", file=sys.stderr)
    for p in (d_input, d_output, d_timer):
        check(runtime.cudaFree(p))
    check(driver.cuModuleUnload(module))
    passed = bool(np.all(output == 0.0) and np.all(elapsed > 0))
    print("Test PASSED" if passed else "Test FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
