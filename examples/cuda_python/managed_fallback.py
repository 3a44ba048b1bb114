"""A program that prefers managed (unified) memory and falls back to explicit copies where
the device does not offer it, as NVIDIA's samples check `managedMemory` before they use it.
The path taken goes to stderr; stdout is the same on either path.

    python managed_fallback.py
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from pathlib import Path

from common import check
from cuda.bindings import driver, runtime

CUBIN = Path(__file__).resolve().parent / "kernels" / "vector_add.sm_90.cubin"
N = 10_000
THREADS = 128


def main() -> int:
    check(runtime.cudaSetDevice(0))
    prop = check(runtime.cudaGetDeviceProperties(0))
    managed = bool(prop.managedMemory)
    print(f"Device 0: {prop.name.decode()}")
    library = check(runtime.cudaLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))
    kernel = check(runtime.cudaLibraryGetKernel(library, b"vector_add"))
    function = check(driver.cuKernelGetFunction(driver.CUkernel(int(kernel))))
    a = array("f", (float(i) for i in range(N)))
    b = array("f", (0.5 * i for i in range(N)))
    nbytes = 4 * N
    if managed:
        print("managed memory: cudaMallocManaged, no copies", file=sys.stderr)
        flags = runtime.cudaMemAttachGlobal
        d_a, d_b, d_c = (check(runtime.cudaMallocManaged(nbytes, flags)) for _ in range(3))
        ctypes.memmove(d_a, a.buffer_info()[0], nbytes)
        ctypes.memmove(d_b, b.buffer_info()[0], nbytes)
    else:
        print("no managed memory: cudaMalloc and explicit copies", file=sys.stderr)
        d_a, d_b, d_c = (check(runtime.cudaMalloc(nbytes)) for _ in range(3))
        h2d = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
        check(runtime.cudaMemcpy(d_a, a.buffer_info()[0], nbytes, h2d))
        check(runtime.cudaMemcpy(d_b, b.buffer_info()[0], nbytes, h2d))
    args = ((d_a, d_b, d_c, N), (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))
    blocks = (N + THREADS - 1) // THREADS
    check(driver.cuLaunchKernel(function, blocks, 1, 1, THREADS, 1, 1, 0, 0, args, 0))
    check(runtime.cudaDeviceSynchronize())
    c = array("f", bytes(nbytes))
    if managed:
        ctypes.memmove(c.buffer_info()[0], d_c, nbytes)
    else:
        d2h = runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
        check(runtime.cudaMemcpy(c.buffer_info()[0], d_c, nbytes, d2h))
    wrong = sum(1 for i in range(N) if c[i] != a[i] + b[i])
    print(f"vector_add of {N} floats: {wrong} wrong; c[{N - 1}] = {c[N - 1]}")
    for p in (d_a, d_b, d_c):
        check(runtime.cudaFree(p))
    check(runtime.cudaLibraryUnload(library))
    print("Test PASSED" if wrong == 0 else "Test FAILED")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
