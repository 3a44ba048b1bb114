"""Vector addition: the kernel compiled at run time with NVRTC, memory through the runtime API,
the launch through the driver API (after NVIDIA's cuda-python vectorAddDrv example).

    python vector_add_nvrtc.py              # local GPU
    cricket-run --server HOST:PORT vector_add_nvrtc.py   # remote GPU, unmodified
"""

from __future__ import annotations

import sys

import numpy as np
from common import check, compile_cubin, device_arch, load_kernel
from cuda.bindings import driver, runtime

SOURCE = """
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def main() -> int:
    n = 50_000
    print(f"[Vector addition of {n} elements]")
    check(runtime.cudaSetDevice(0))
    module, kernel = load_kernel(compile_cubin(SOURCE, "vector_add.cu", device_arch()), "vector_add")

    rng = np.random.default_rng(1234)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    nbytes = a.nbytes
    d_a, d_b, d_c = (check(runtime.cudaMalloc(nbytes)) for _ in range(3))
    h2d = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    check(runtime.cudaMemcpy(d_a, a.ctypes.data, nbytes, h2d))
    check(runtime.cudaMemcpy(d_b, b.ctypes.data, nbytes, h2d))

    threads = 256
    blocks = (n + threads - 1) // threads
    print(f"CUDA kernel launch with {blocks} blocks of {threads} threads")
    args = [np.array([int(p)], dtype=np.uint64) for p in (d_a, d_b, d_c)]
    args.append(np.array([n], dtype=np.int32))
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    check(driver.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, 0, params.ctypes.data, 0))
    check(runtime.cudaDeviceSynchronize())
    check(runtime.cudaMemcpy(c.ctypes.data, d_c, nbytes, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost))

    error = float(np.max(np.abs(c - (a + b))))
    print(f"max |c - (a + b)| = {error}")
    print(f"checksum = {float(np.sum(c, dtype=np.float64)):.3f}")
    for p in (d_a, d_b, d_c):
        check(runtime.cudaFree(p))
    check(driver.cuModuleUnload(module))
    passed = error == 0.0
    print("Test PASSED" if passed else "Test FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
