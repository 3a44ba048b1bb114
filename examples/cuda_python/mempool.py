"""Memory pools and stream-ordered allocation (after NVIDIA's streamOrderedAllocation sample,
its post-synchronization part, and the memory pool APIs): the device's default pool keeps its
memory with a high release threshold, an explicitly created pool serves
cudaMallocFromPoolAsync, and the pools' attributes report what is in use.

    python mempool.py
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from pathlib import Path

from cuda.bindings import driver, runtime

CUBIN = Path(__file__).resolve().parent / "kernels" / "vector_add.sm_90.cubin"
N = 1 << 18
ITERATIONS = 8


def check(result: tuple) -> object:
    err, *values = result
    if int(err) != 0:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else (tuple(values) or None)


def attribute(pool: object, attr: runtime.cudaMemPoolAttr) -> int:
    return int(check(runtime.cudaMemPoolGetAttribute(pool, attr)))


def main() -> int:
    print("Memory pools and stream-ordered allocation")
    check(runtime.cudaSetDevice(0))
    supported = check(runtime.cudaDeviceGetAttribute(
        runtime.cudaDeviceAttr.cudaDevAttrMemoryPoolsSupported, 0
    ))
    if not supported:
        print("Waiving execution as device does not support Memory Pools")
        return 0
    library = check(runtime.cudaLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))
    kernel = check(runtime.cudaLibraryGetKernel(library, b"vector_add"))
    function = check(driver.cuKernelGetFunction(driver.CUkernel(int(kernel))))
    stream = check(runtime.cudaStreamCreateWithFlags(runtime.cudaStreamNonBlocking))

    attr = runtime.cudaMemPoolAttr
    default_pool = check(runtime.cudaDeviceGetDefaultMemPool(0))
    threshold = driver.cuuint64_t(0xFFFFFFFFFFFFFFFF)
    check(runtime.cudaMemPoolSetAttribute(default_pool, attr.cudaMemPoolAttrReleaseThreshold, threshold))
    kept = attribute(default_pool, attr.cudaMemPoolAttrReleaseThreshold)
    print(f"Release threshold of the default pool: {kept:#x}")

    nbytes = 4 * N
    a = array("f", (float(i % 100) for i in range(N)))
    b = array("f", (2.0 * (i % 50) for i in range(N)))
    c = array("f", bytes(nbytes))
    h2d = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    threads = 256
    blocks = (N + threads - 1) // threads
    for _ in range(ITERATIONS):
        d_a, d_b, d_c = (check(runtime.cudaMallocAsync(nbytes, stream)) for _ in range(3))
        check(runtime.cudaMemcpyAsync(d_a, a.buffer_info()[0], nbytes, h2d, stream))
        check(runtime.cudaMemcpyAsync(d_b, b.buffer_info()[0], nbytes, h2d, stream))
        args = ((d_a, d_b, d_c, N), (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))
        check(driver.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream, args, 0))
        check(runtime.cudaFreeAsync(d_a, stream))
        check(runtime.cudaFreeAsync(d_b, stream))
        check(runtime.cudaMemcpyAsync(
            c.buffer_info()[0], d_c, nbytes, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream
        ))
        check(runtime.cudaFreeAsync(d_c, stream))
    check(runtime.cudaStreamSynchronize(stream))
    wrong = sum(1 for i in range(N) if c[i] != a[i] + b[i])
    print(f"{ITERATIONS} rounds of alloc, add, free in one stream: {wrong} of {N} sums wrong")
    used = attribute(default_pool, attr.cudaMemPoolAttrUsedMemCurrent)
    high = attribute(default_pool, attr.cudaMemPoolAttrUsedMemHigh)
    print(f"Default pool after the frees: {used} bytes in use; "
          f"high-water mark covers three vectors: {high >= 3 * nbytes}")

    props = runtime.cudaMemPoolProps()
    props.allocType = runtime.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.type = runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    props.location.id = 0
    pool = check(runtime.cudaMemPoolCreate(props))
    sizes = [1 << 20, 3 << 10, 5 << 20]
    ptrs = [check(runtime.cudaMallocFromPoolAsync(n, pool, stream)) for n in sizes]
    for ptr, n in zip(ptrs, sizes, strict=True):
        check(runtime.cudaMemsetAsync(ptr, 7, n, stream))
    check(runtime.cudaStreamSynchronize(stream))
    used = attribute(pool, attr.cudaMemPoolAttrUsedMemCurrent)
    reserved = attribute(pool, attr.cudaMemPoolAttrReservedMemCurrent)
    print(f"Created pool: {len(ptrs)} allocations of {sum(sizes)} bytes; "
          f"at least that much in use: {used >= sum(sizes)}; reserved covers it: {reserved >= used}")
    for ptr in ptrs:
        check(runtime.cudaFreeAsync(ptr, stream))
    check(runtime.cudaStreamSynchronize(stream))
    check(runtime.cudaMemPoolTrimTo(pool, 0))
    print(f"After the frees and a trim: {attribute(pool, attr.cudaMemPoolAttrUsedMemCurrent)} "
          "bytes in use")
    check(runtime.cudaMemPoolDestroy(pool))
    check(runtime.cudaStreamDestroy(stream))
    check(runtime.cudaLibraryUnload(library))
    print("Result = PASS" if wrong == 0 else "Result = FAIL")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
