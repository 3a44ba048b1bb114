"""Vector addition in memory of the virtual memory management API (after NVIDIA's
vectorAddMMAP sample): each vector is a reserved address range backed by physical
allocations (cuMemCreate) mapped into it (cuMemMap) and made accessible (cuMemSetAccess); the
result vector is two physical allocations mapped back to back, as a growing buffer would be.

    python vmm.py
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from pathlib import Path

from cuda.bindings import driver

CUBIN = Path(__file__).resolve().parent / "kernels" / "vector_add.sm_90.cubin"
N = 1 << 20


def check(result: tuple) -> object:
    err, *values = result
    if int(err) != 0:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else (tuple(values) or None)


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class VirtualBuffer:
    """A reserved range of `size` bytes backed by `chunks` physical allocations."""

    def __init__(self, size: int, chunks: int, prop: driver.CUmemAllocationProp, gran: int):
        self.size = round_up(size, gran * chunks)
        self.chunk = self.size // chunks
        self.ptr = check(driver.cuMemAddressReserve(self.size, 0, 0, 0))
        self.handles = []
        for i in range(chunks):
            handle = check(driver.cuMemCreate(self.chunk, prop, 0))
            check(driver.cuMemMap(int(self.ptr) + i * self.chunk, self.chunk, 0, handle, 0))
            self.handles.append(handle)
        access = driver.CUmemAccessDesc()
        access.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = prop.location.id
        access.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        check(driver.cuMemSetAccess(self.ptr, self.size, [access], 1))

    def free(self) -> None:
        check(driver.cuMemUnmap(self.ptr, self.size))
        for handle in self.handles:
            check(driver.cuMemRelease(handle))
        check(driver.cuMemAddressFree(self.ptr, self.size))


def main() -> int:
    print("Vector addition in memory of the virtual memory management API")
    check(driver.cuInit(0))
    device = check(driver.cuDeviceGet(0))
    context = check(driver.cuDevicePrimaryCtxRetain(device))
    check(driver.cuCtxSetCurrent(context))

    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    gran = check(driver.cuMemGetAllocationGranularity(
        prop, driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
    ))
    print(f"Minimum allocation granularity: {gran // 1024} KiB")

    nbytes = 4 * N
    a, b = (VirtualBuffer(nbytes, 1, prop, gran) for _ in range(2))
    c = VirtualBuffer(nbytes, 2, prop, gran)
    print(f"Vectors of {N} floats; the result in {len(c.handles)} physical allocations "
          f"of {c.chunk // 1024} KiB mapped back to back")
    props = check(driver.cuMemGetAllocationPropertiesFromHandle(c.handles[1]))
    print(f"Allocation type {props.type.name} on device {props.location.id}")
    location = driver.CUmemLocation()
    location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    location.id = 0
    flags = check(driver.cuMemGetAccess(location, int(c.ptr) + c.chunk))
    print(f"Access of device 0 to the second half: {driver.CUmemAccess_flags(flags).name}")

    h_a = array("f", (float(i % 1000) for i in range(N)))
    h_b = array("f", (0.5 * (i % 777) for i in range(N)))
    h_c = array("f", bytes(nbytes))
    check(driver.cuMemcpyHtoD(a.ptr, h_a.buffer_info()[0], nbytes))
    check(driver.cuMemcpyHtoD(b.ptr, h_b.buffer_info()[0], nbytes))

    module = check(driver.cuModuleLoadData(CUBIN.read_bytes()))
    kernel = check(driver.cuModuleGetFunction(module, b"vector_add"))
    threads = 256
    blocks = (N + threads - 1) // threads
    args = (
        (int(a.ptr), int(b.ptr), int(c.ptr), N),
        (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int),
    )
    check(driver.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, 0, args, 0))
    check(driver.cuCtxSynchronize())
    check(driver.cuMemcpyDtoH(h_c.buffer_info()[0], c.ptr, nbytes))
    wrong = sum(1 for i in range(N) if h_c[i] != h_a[i] + h_b[i])
    print(f"{wrong} of {N} sums wrong; c[{N - 1}] = {h_c[N - 1]}")

    check(driver.cuModuleUnload(module))
    for buffer in (a, b, c):
        buffer.free()
    check(driver.cuDevicePrimaryCtxRelease(device))
    print("Result = PASS" if wrong == 0 else "Result = FAIL")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
