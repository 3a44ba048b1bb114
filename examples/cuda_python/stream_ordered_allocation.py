"""Stream-ordered allocation: cudaMallocAsync and cudaFreeAsync around a kernel, all in one
stream (after NVIDIA's streamOrderedAllocation sample, its basic part)."""

from __future__ import annotations

import sys

import numpy as np
from common import check, compile_cubin, device_arch, load_kernel
from cuda.bindings import driver, runtime

SOURCE = """
extern "C" __global__ void vectorAddGPU(const float *a, const float *b, float *c, int n)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) c[idx] = a[idx] + b[idx];
}
"""

N = 1 << 20


def main() -> int:
    print("Starting basicStreamOrderedAllocation()")
    check(runtime.cudaSetDevice(0))
    pools = check(runtime.cudaDeviceGetAttribute(
        runtime.cudaDeviceAttr.cudaDevAttrMemoryPoolsSupported, 0
    ))
    if not pools:
        print("Waiving execution as device does not support Memory Pools")
        return 0
    module, kernel = load_kernel(
        compile_cubin(SOURCE, "stream_ordered.cu", device_arch()), "vectorAddGPU"
    )
    rng = np.random.default_rng(7)
    a = rng.random(N, dtype=np.float32)
    b = rng.random(N, dtype=np.float32)
    c = np.zeros(N, dtype=np.float32)
    nbytes = a.nbytes
    stream = check(runtime.cudaStreamCreateWithFlags(runtime.cudaStreamNonBlocking))
    d_a, d_b, d_c = (check(runtime.cudaMallocAsync(nbytes, stream)) for _ in range(3))
    h2d = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    check(runtime.cudaMemcpyAsync(d_a, a.ctypes.data, nbytes, h2d, stream))
    check(runtime.cudaMemcpyAsync(d_b, b.ctypes.data, nbytes, h2d, stream))
    threads = 256
    blocks = (N + threads - 1) // threads
    args = [np.array([int(p)], dtype=np.uint64) for p in (d_a, d_b, d_c)]
    args.append(np.array([N], dtype=np.int32))
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    check(driver.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, stream, params.ctypes.data, 0))
    for p in (d_a, d_b):
        check(runtime.cudaFreeAsync(p, stream))
    check(runtime.cudaMemcpyAsync(
        c.ctypes.data, d_c, nbytes, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream
    ))
    check(runtime.cudaFreeAsync(d_c, stream))
    check(runtime.cudaStreamSynchronize(stream))
    check(runtime.cudaStreamDestroy(stream))
    check(driver.cuModuleUnload(module))

    passed = bool(np.array_equal(c, a + b))
    print(f"{N} sums compared with the host's: {'equal' if passed else 'DIFFERENT'}")
    print("PASSED" if passed else "FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
