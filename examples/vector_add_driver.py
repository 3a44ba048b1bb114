"""Vector addition with the CUDA driver API, written for cuda-python.

The same program runs on a local GPU or, through Cricket, on a remote one; only the import
line differs:

    from cuda.bindings import driver as cuda     # local GPU, cuda-python
    from cricket_client import driver as cuda    # remote GPU: REMOTE_GPU_ADDRESS=host:port

The kernel comes prebuilt (tests/kernels/test_kernels.fatbin, nvcc for sm_90), so the client
machine needs no CUDA toolkit.

    REMOTE_GPU_ADDRESS=gpu-node:28463 python examples/vector_add_driver.py [N]
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path
from typing import Any

import numpy as np

from cricket_client import driver as cuda  # local GPU: from cuda.bindings import driver as cuda

IMAGE = Path(__file__).resolve().parent.parent / "tests" / "kernels" / "test_kernels.fatbin"
BLOCK = 256


def check(result: tuple[Any, ...]) -> Any:
    """Raise on a failed driver call; return its outputs (None, one value or a tuple)."""
    err, *values = result
    if err != cuda.CUresult.CUDA_SUCCESS:
        _, name = cuda.cuGetErrorName(err)
        raise RuntimeError(f"CUDA driver call failed: {name.decode() if name else int(err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def vector_add(n: int, seed: int = 0) -> dict[str, Any]:
    """c = a + b on the GPU for n random floats; the result checked element by element."""
    check(cuda.cuInit(0))
    device = check(cuda.cuDeviceGet(0))
    name = check(cuda.cuDeviceGetName(256, device)).split(b"\0", 1)[0].decode()
    context = check(cuda.cuDevicePrimaryCtxRetain(device))
    check(cuda.cuCtxSetCurrent(context))
    module = check(cuda.cuModuleLoadData(IMAGE.read_bytes()))
    kernel = check(cuda.cuModuleGetFunction(module, b"vector_add"))
    stream = check(cuda.cuStreamCreate(0))

    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    d_a, d_b, d_c = (check(cuda.cuMemAlloc(a.nbytes)) for _ in range(3))

    check(cuda.cuMemcpyHtoDAsync(d_a, a, a.nbytes, stream))
    check(cuda.cuMemcpyHtoDAsync(d_b, b, b.nbytes, stream))
    args = ((d_a, d_b, d_c, n), (None, None, None, ctypes.c_int))
    grid = (n + BLOCK - 1) // BLOCK
    check(cuda.cuLaunchKernel(kernel, grid, 1, 1, BLOCK, 1, 1, 0, stream, args, 0))
    check(cuda.cuMemcpyDtoHAsync(c, d_c, c.nbytes, stream))
    check(cuda.cuStreamSynchronize(stream))

    expected = a + b
    wrong = np.flatnonzero(c != expected).tolist()  # every element compared

    for ptr in (d_a, d_b, d_c):
        check(cuda.cuMemFree(ptr))
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuModuleUnload(module))
    check(cuda.cuDevicePrimaryCtxRelease(device))
    return {"device": name, "n": n, "grid": grid, "block": BLOCK, "wrong": wrong}


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 1_000_000
    result = vector_add(n)
    if result["wrong"]:
        first = result["wrong"][0]
        print(f"FAILED: {len(result['wrong'])} of {n} elements wrong (first at index {first})")
        return 1
    print(f"vector_add on {result['device']}: all {n} elements correct")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
