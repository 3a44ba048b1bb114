"""Device attributes as a remote client sees them: the device's own values, except those
that promise memory shared between the client's host and the GPU, which a network cannot
keep coherent (managed memory, mapped host memory, pageable access, host-located device
memory): those read 0, truthfully for what the client can use, so that a program takes its
fallback path (explicit device memory and copies). The same view answers cuDeviceGetAttribute
and cudaGetDeviceProperties.
"""

from __future__ import annotations

from cricket_server.backends.base import Backend

# CUdevice_attribute -> its name (without CU_DEVICE_ATTRIBUTE_)
UNSHAREABLE: dict[int, str] = {
    19: "CAN_MAP_HOST_MEMORY",
    83: "MANAGED_MEMORY",
    86: "HOST_NATIVE_ATOMIC_SUPPORTED",
    88: "PAGEABLE_MEMORY_ACCESS",
    89: "CONCURRENT_MANAGED_ACCESS",
    91: "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM",
    100: "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES",
    101: "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST",
    141: "HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED",
    142: "HOST_NUMA_MEMORY_POOLS_SUPPORTED",
    144: "HOST_MEMORY_POOLS_SUPPORTED",
    145: "HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED",
    146: "HOST_ALLOC_DMA_BUF_SUPPORTED",
    147: "ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED",
}


def remote_attribute(backend: Backend, attrib: int, dev: int) -> int:
    """cuDeviceGetAttribute for a remote client (an unknown attribute fails as the device's)."""
    value = backend.device_attribute(attrib, dev)
    return 0 if attrib in UNSHAREABLE else value
