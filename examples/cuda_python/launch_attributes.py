"""Kernel launches with launch attributes (after NVIDIA's cluster and priority samples):
cuLaunchKernelEx with a thread block cluster and a stream priority, a cooperative launch,
and the occupancy queries a program makes before choosing its launch shape.

    python launch_attributes.py
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from pathlib import Path

from common import check, load_kernel
from cuda.bindings import driver

CUBIN = Path(__file__).resolve().parent / "kernels" / "vector_add.sm_90.cubin"
N = 1 << 14
THREADS = 128


def attribute(attr_id: driver.CUlaunchAttributeID, **fields: object) -> driver.CUlaunchAttribute:
    attr = driver.CUlaunchAttribute()
    attr.id = attr_id
    for name, value in fields.items():
        if name == "cluster":
            dim = attr.value.clusterDim
            dim.x, dim.y, dim.z = value  # type: ignore[misc]
        else:
            setattr(attr.value, name, value)
    return attr


def config(blocks: int, stream: driver.CUstream, attrs: list) -> driver.CUlaunchConfig:
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = blocks, 1, 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = THREADS, 1, 1
    cfg.sharedMemBytes = 0
    cfg.hStream = stream
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    return cfg


def main() -> int:
    check(driver.cuInit(0))
    device = check(driver.cuDeviceGet(0))
    context = check(driver.cuDevicePrimaryCtxRetain(device))
    check(driver.cuCtxSetCurrent(context))
    attr = driver.CUdevice_attribute
    clusters = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, device))
    cooperative = check(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, device)
    )
    print(f"Cluster launch supported: {'Yes' if clusters else 'No'}")
    print(f"Cooperative launch supported: {'Yes' if cooperative else 'No'}")
    module, kernel = load_kernel(CUBIN.read_bytes(), "vector_add")

    least, greatest = check(driver.cuCtxGetStreamPriorityRange())
    stream = check(driver.cuStreamCreateWithPriority(
        driver.CUstream_flags.CU_STREAM_NON_BLOCKING, greatest
    ))
    print(f"Stream priorities: {least} (least) to {greatest} (greatest); "
          f"stream priority {check(driver.cuStreamGetPriority(stream))}")

    blocks = N // THREADS
    cluster = attribute(driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                        cluster=(2, 1, 1))
    active = check(driver.cuOccupancyMaxActiveClusters(kernel, config(blocks, stream, [cluster])))
    print(f"Clusters of 2 blocks that can be active at once: {'some' if active > 0 else 'none'}")
    smem = check(driver.cuOccupancyAvailableDynamicSMemPerBlock(kernel, 4, THREADS))
    print(f"Dynamic shared memory with 4 blocks per SM: {'available' if smem > 0 else 'none'}")

    a = array("f", (float(i) for i in range(N)))
    b = array("f", (2.0 * i for i in range(N)))
    c = array("f", bytes(4 * N))
    nbytes = 4 * N
    d_a, d_b, d_c = (check(driver.cuMemAlloc(nbytes)) for _ in range(3))
    check(driver.cuMemcpyHtoD(d_a, a.buffer_info()[0], nbytes))
    check(driver.cuMemcpyHtoD(d_b, b.buffer_info()[0], nbytes))
    args = ((d_a, d_b, d_c, N), (None, None, None, ctypes.c_int))

    launches = [
        ("cluster of 2 on a high-priority stream", [
            cluster,
            attribute(driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PRIORITY, priority=greatest),
        ]),
        ("cooperative", [
            attribute(driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE, cooperative=1),
        ]),
    ]
    failed = 0
    for what, attrs in launches:
        check(driver.cuMemsetD8Async(d_c, 0, nbytes, stream))
        check(driver.cuLaunchKernelEx(config(blocks, stream, attrs), kernel, args, 0))
        check(driver.cuMemcpyDtoHAsync(c.buffer_info()[0], d_c, nbytes, stream))
        check(driver.cuStreamSynchronize(stream))
        wrong = sum(1 for i in range(N) if c[i] != a[i] + b[i])
        failed += wrong
        print(f"cuLaunchKernelEx ({what}): {wrong} wrong of {N}")

    for ptr in (d_a, d_b, d_c):
        check(driver.cuMemFree(ptr))
    check(driver.cuStreamDestroy(stream))
    check(driver.cuModuleUnload(module))
    check(driver.cuDevicePrimaryCtxRelease(device))
    print("Test PASSED" if failed == 0 else "Test FAILED")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
