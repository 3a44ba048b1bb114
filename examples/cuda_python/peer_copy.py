"""Copies between two GPUs (after NVIDIA's simpleP2P): peer capability, peer access, and
cudaMemcpyPeer / cudaMemcpyPeerAsync from one device's memory to the other's. Needs two
devices; with fewer it says so and is waived.

    python peer_copy.py
"""

from __future__ import annotations

import ctypes
import sys

from common import check
from cuda.bindings import runtime

N = 1 << 20  # bytes


def main() -> int:
    count = check(runtime.cudaGetDeviceCount())
    print(f"CUDA-capable device count: {count}")
    if count < 2:
        print("Two or more GPUs with Peer-to-Peer access capability are required")
        print("Test WAIVED")
        return 0
    can01 = check(runtime.cudaDeviceCanAccessPeer(0, 1))
    can10 = check(runtime.cudaDeviceCanAccessPeer(1, 0))
    print(f"Peer access from GPU0 to GPU1: {'Yes' if can01 else 'No'}")
    print(f"Peer access from GPU1 to GPU0: {'Yes' if can10 else 'No'}")
    if can01 and can10:
        check(runtime.cudaSetDevice(0))
        check(runtime.cudaDeviceEnablePeerAccess(1, 0))
        check(runtime.cudaSetDevice(1))
        check(runtime.cudaDeviceEnablePeerAccess(0, 0))
        print("Peer access enabled both ways")

    check(runtime.cudaSetDevice(0))
    g0 = check(runtime.cudaMalloc(N))
    check(runtime.cudaSetDevice(1))
    g1 = check(runtime.cudaMalloc(N))
    stream = check(runtime.cudaStreamCreate())
    host = check(runtime.cudaMallocHost(N))
    buf = (ctypes.c_ubyte * N).from_address(host)
    for i in range(0, N, 4096):
        buf[i] = (i // 4096) % 251

    h2d = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    d2h = runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
    check(runtime.cudaMemcpy(g0, host, N, h2d))
    check(runtime.cudaMemcpyPeer(g1, 1, g0, 0, N))  # GPU0 -> GPU1
    check(runtime.cudaMemcpyPeerAsync(g0, 0, g1, 1, N, stream))  # and back, GPU1 -> GPU0
    check(runtime.cudaStreamSynchronize(stream))
    ctypes.memset(host, 0, N)
    check(runtime.cudaMemcpy(host, g0, N, d2h))
    wrong = sum(1 for i in range(0, N, 4096) if buf[i] != (i // 4096) % 251)
    print(f"cudaMemcpyPeer GPU0 -> GPU1 -> GPU0 of {N} bytes: {wrong} wrong")

    if can01 and can10:
        check(runtime.cudaSetDevice(0))
        check(runtime.cudaDeviceDisablePeerAccess(1))
        check(runtime.cudaSetDevice(1))
        check(runtime.cudaDeviceDisablePeerAccess(0))
    check(runtime.cudaFreeHost(host))
    check(runtime.cudaStreamDestroy(stream))
    check(runtime.cudaFree(g1))
    check(runtime.cudaSetDevice(0))
    check(runtime.cudaFree(g0))
    print("Test PASSED" if wrong == 0 else "Test FAILED")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
