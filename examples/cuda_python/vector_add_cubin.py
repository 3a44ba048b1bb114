"""Vector addition from a prebuilt cubin, with nothing but cuda-python and the standard library
(no NVRTC, no numpy): the program for a client that has no CUDA toolkit at all. Memory and
the library through the runtime API, the launch through the driver API.

    python vector_add_cubin.py
    cricket-run --server HOST:PORT vector_add_cubin.py   # even where cuda-python is absent
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from pathlib import Path

from cuda.bindings import driver, runtime

CUBIN = Path(__file__).resolve().parent / "kernels" / "vector_add.sm_90.cubin"
N = 10_000


def check(result: tuple) -> object:
    err, *values = result
    if int(err) != 0:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else (tuple(values) or None)


def main() -> int:
    check(runtime.cudaSetDevice(0))
    library = check(runtime.cudaLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))
    kernel = check(runtime.cudaLibraryGetKernel(library, b"vector_add"))
    function = check(driver.cuKernelGetFunction(driver.CUkernel(int(kernel))))

    a = array("f", (float(i) for i in range(N)))
    b = array("f", (0.25 * i for i in range(N)))
    c = array("f", bytes(4 * N))
    nbytes = 4 * N
    d_a, d_b, d_c = (check(runtime.cudaMalloc(nbytes)) for _ in range(3))
    h2d = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    check(runtime.cudaMemcpy(d_a, a.buffer_info()[0], nbytes, h2d))
    check(runtime.cudaMemcpy(d_b, b.buffer_info()[0], nbytes, h2d))
    threads = 128
    blocks = (N + threads - 1) // threads
    args = ((d_a, d_b, d_c, N), (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))
    check(driver.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, 0, args, 0))
    check(runtime.cudaDeviceSynchronize())
    check(runtime.cudaMemcpy(
        c.buffer_info()[0], d_c, nbytes, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
    ))
    wrong = sum(1 for i in range(N) if c[i] != a[i] + b[i])
    print(f"vector_add of {N} floats from {CUBIN.name}: {wrong} wrong")
    print(f"c[1] = {c[1]}, c[{N - 1}] = {c[N - 1]}")
    for p in (d_a, d_b, d_c):
        check(runtime.cudaFree(p))
    check(runtime.cudaLibraryUnload(library))
    print("Test PASSED" if wrong == 0 else "Test FAILED")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
