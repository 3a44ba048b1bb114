"""The properties of every CUDA device (after NVIDIA's deviceQuery sample): one
cudaGetDeviceProperties per device, plus the driver version."""

from __future__ import annotations

import sys

from common import check
from cuda.bindings import runtime


def main() -> int:
    count = check(runtime.cudaGetDeviceCount())
    if count == 0:
        print("There are no available device(s) that support CUDA")
        return 1
    print(f"Detected {count} CUDA Capable device(s)")
    version = check(runtime.cudaDriverGetVersion())
    print(f"CUDA Driver Version: {version // 1000}.{(version % 100) // 10}")
    for dev in range(count):
        prop = check(runtime.cudaGetDeviceProperties(dev))
        print(f"\nDevice {dev}: \"{prop.name.decode()}\"")
        print(f"  CUDA Capability Major/Minor version number:    {prop.major}.{prop.minor}")
        print(f"  Total amount of global memory:                 {prop.totalGlobalMem} bytes")
        print(f"  Multiprocessors:                               {prop.multiProcessorCount}")
        print(f"  Total amount of constant memory:               {prop.totalConstMem} bytes")
        print(f"  Total amount of shared memory per block:       {prop.sharedMemPerBlock} bytes")
        print(f"  Total shared memory per multiprocessor:        {prop.sharedMemPerMultiprocessor} bytes")
        print(f"  Total number of registers available per block: {prop.regsPerBlock}")
        print(f"  Warp size:                                     {prop.warpSize}")
        print(f"  Maximum number of threads per multiprocessor:  {prop.maxThreadsPerMultiProcessor}")
        print(f"  Maximum number of threads per block:           {prop.maxThreadsPerBlock}")
        dims = prop.maxThreadsDim
        grid = prop.maxGridSize
        print(f"  Max dimension size of a thread block (x,y,z): ({dims[0]}, {dims[1]}, {dims[2]})")
        print(f"  Max dimension size of a grid size    (x,y,z): ({grid[0]}, {grid[1]}, {grid[2]})")
        print(f"  Maximum memory pitch:                          {prop.memPitch} bytes")
        print(f"  Memory bus width:                              {prop.memoryBusWidth}-bit")
        print(f"  L2 cache size:                                 {prop.l2CacheSize} bytes")
        print(f"  Concurrent copy and kernel execution:          "
              f"{'Yes' if prop.asyncEngineCount else 'No'} with {prop.asyncEngineCount} copy engine(s)")
        print(f"  Device has ECC support:                        {'Enabled' if prop.ECCEnabled else 'Disabled'}")
        print(f"  Device supports Unified Addressing (UVA):      {'Yes' if prop.unifiedAddressing else 'No'}")
        print(f"  Device supports Managed Memory:                {'Yes' if prop.managedMemory else 'No'}")
        print(f"  Supports Cooperative Kernel Launch:            {'Yes' if prop.cooperativeLaunch else 'No'}")
        print(f"  Device supports memory pools:                  {'Yes' if prop.memoryPoolsSupported else 'No'}")
        print(f"  Device PCI Domain ID / Bus ID / location ID:   "
              f"{prop.pciDomainID} / {prop.pciBusID} / {prop.pciDeviceID}")
        print(f"  Device UUID:                                   {prop.uuid.bytes.hex()}")
        attr = check(runtime.cudaDeviceGetAttribute(
            runtime.cudaDeviceAttr.cudaDevAttrMultiProcessorCount, dev
        ))
        if attr != prop.multiProcessorCount:
            print("  cudaDeviceGetAttribute and cudaGetDeviceProperties disagree")
            return 1
    print("\nResult = PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
