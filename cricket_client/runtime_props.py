"""cudaDeviceProp: cuda-python's field names, each filled from a device attribute.

`PROPERTY_ATTRIBUTES` maps every field to the cudaDeviceAttr names it reads (one, or several
for the list fields such as maxThreadsDim); name, uuid and totalGlobalMem come from their own
queries, and the Windows-only luid fields read as zero. `device_properties(conn, dev)` asks the
server for all of it in one call (RT_DEVICE_GET_PROPERTIES) and fills a `cudaDeviceProp`.
An attribute the server's device does not know reads as 0, as an older driver leaves it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._enums import CUdevice_attribute
from ._runtime_enums import cudaDeviceAttr
from .runtime_types import Struct, cudaUUID_t

__all__ = ["cudaDeviceProp", "PROPERTY_ATTRIBUTES", "UNSIGNED_FIELDS", "properties_from"]

A = "cudaDevAttr"
PROPERTY_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "sharedMemPerBlock": ("MaxSharedMemoryPerBlock",),
    "regsPerBlock": ("MaxRegistersPerBlock",),
    "warpSize": ("WarpSize",),
    "memPitch": ("MaxPitch",),
    "maxThreadsPerBlock": ("MaxThreadsPerBlock",),
    "maxThreadsDim": ("MaxBlockDimX", "MaxBlockDimY", "MaxBlockDimZ"),
    "maxGridSize": ("MaxGridDimX", "MaxGridDimY", "MaxGridDimZ"),
    "totalConstMem": ("TotalConstantMemory",),
    "major": ("ComputeCapabilityMajor",),
    "minor": ("ComputeCapabilityMinor",),
    "textureAlignment": ("TextureAlignment",),
    "texturePitchAlignment": ("TexturePitchAlignment",),
    "multiProcessorCount": ("MultiProcessorCount",),
    "integrated": ("Integrated",),
    "canMapHostMemory": ("CanMapHostMemory",),
    "maxTexture1D": ("MaxTexture1DWidth",),
    "maxTexture1DMipmap": ("MaxTexture1DMipmappedWidth",),
    "maxTexture2D": ("MaxTexture2DWidth", "MaxTexture2DHeight"),
    "maxTexture2DMipmap": ("MaxTexture2DMipmappedWidth", "MaxTexture2DMipmappedHeight"),
    "maxTexture2DLinear": (
        "MaxTexture2DLinearWidth",
        "MaxTexture2DLinearHeight",
        "MaxTexture2DLinearPitch",
    ),
    "maxTexture2DGather": ("MaxTexture2DGatherWidth", "MaxTexture2DGatherHeight"),
    "maxTexture3D": ("MaxTexture3DWidth", "MaxTexture3DHeight", "MaxTexture3DDepth"),
    "maxTexture3DAlt": ("MaxTexture3DWidthAlt", "MaxTexture3DHeightAlt", "MaxTexture3DDepthAlt"),
    "maxTextureCubemap": ("MaxTextureCubemapWidth",),
    "maxTexture1DLayered": ("MaxTexture1DLayeredWidth", "MaxTexture1DLayeredLayers"),
    "maxTexture2DLayered": (
        "MaxTexture2DLayeredWidth",
        "MaxTexture2DLayeredHeight",
        "MaxTexture2DLayeredLayers",
    ),
    "maxTextureCubemapLayered": ("MaxTextureCubemapLayeredWidth", "MaxTextureCubemapLayeredLayers"),
    "maxSurface1D": ("MaxSurface1DWidth",),
    "maxSurface2D": ("MaxSurface2DWidth", "MaxSurface2DHeight"),
    "maxSurface3D": ("MaxSurface3DWidth", "MaxSurface3DHeight", "MaxSurface3DDepth"),
    "maxSurface1DLayered": ("MaxSurface1DLayeredWidth", "MaxSurface1DLayeredLayers"),
    "maxSurface2DLayered": (
        "MaxSurface2DLayeredWidth",
        "MaxSurface2DLayeredHeight",
        "MaxSurface2DLayeredLayers",
    ),
    "maxSurfaceCubemap": ("MaxSurfaceCubemapWidth",),
    "maxSurfaceCubemapLayered": ("MaxSurfaceCubemapLayeredWidth", "MaxSurfaceCubemapLayeredLayers"),
    "surfaceAlignment": ("SurfaceAlignment",),
    "concurrentKernels": ("ConcurrentKernels",),
    "ECCEnabled": ("EccEnabled",),
    "pciBusID": ("PciBusId",),
    "pciDeviceID": ("PciDeviceId",),
    "pciDomainID": ("PciDomainId",),
    "tccDriver": ("TccDriver",),
    "asyncEngineCount": ("AsyncEngineCount",),
    "unifiedAddressing": ("UnifiedAddressing",),
    "memoryBusWidth": ("GlobalMemoryBusWidth",),
    "l2CacheSize": ("L2CacheSize",),
    "persistingL2CacheMaxSize": ("MaxPersistingL2CacheSize",),
    "maxThreadsPerMultiProcessor": ("MaxThreadsPerMultiProcessor",),
    "streamPrioritiesSupported": ("StreamPrioritiesSupported",),
    "globalL1CacheSupported": ("GlobalL1CacheSupported",),
    "localL1CacheSupported": ("LocalL1CacheSupported",),
    "sharedMemPerMultiprocessor": ("MaxSharedMemoryPerMultiprocessor",),
    "regsPerMultiprocessor": ("MaxRegistersPerMultiprocessor",),
    "managedMemory": ("ManagedMemory",),
    "isMultiGpuBoard": ("IsMultiGpuBoard",),
    "multiGpuBoardGroupID": ("MultiGpuBoardGroupID",),
    "hostNativeAtomicSupported": ("HostNativeAtomicSupported",),
    "pageableMemoryAccess": ("PageableMemoryAccess",),
    "concurrentManagedAccess": ("ConcurrentManagedAccess",),
    "computePreemptionSupported": ("ComputePreemptionSupported",),
    "canUseHostPointerForRegisteredMem": ("CanUseHostPointerForRegisteredMem",),
    "cooperativeLaunch": ("CooperativeLaunch",),
    "sharedMemPerBlockOptin": ("MaxSharedMemoryPerBlockOptin",),
    "pageableMemoryAccessUsesHostPageTables": ("PageableMemoryAccessUsesHostPageTables",),
    "directManagedMemAccessFromHost": ("DirectManagedMemAccessFromHost",),
    "maxBlocksPerMultiProcessor": ("MaxBlocksPerMultiprocessor",),
    "accessPolicyMaxWindowSize": ("MaxAccessPolicyWindowSize",),
    "reservedSharedMemPerBlock": ("ReservedSharedMemoryPerBlock",),
    "hostRegisterSupported": ("HostRegisterSupported",),
    "sparseCudaArraySupported": ("SparseCudaArraySupported",),
    "hostRegisterReadOnlySupported": ("HostRegisterReadOnlySupported",),
    "timelineSemaphoreInteropSupported": ("TimelineSemaphoreInteropSupported",),
    "memoryPoolsSupported": ("MemoryPoolsSupported",),
    "gpuDirectRDMASupported": ("GPUDirectRDMASupported",),
    "gpuDirectRDMAFlushWritesOptions": ("GPUDirectRDMAFlushWritesOptions",),
    "gpuDirectRDMAWritesOrdering": ("GPUDirectRDMAWritesOrdering",),
    "memoryPoolSupportedHandleTypes": ("MemoryPoolSupportedHandleTypes",),
    "deferredMappingCudaArraySupported": ("DeferredMappingCudaArraySupported",),
    "ipcEventSupported": ("IpcEventSupport",),
    "clusterLaunch": ("ClusterLaunch",),
    "unifiedFunctionPointers": ("UnifiedFunctionPointers",),
    "deviceNumaConfig": ("NumaConfig",),
    "deviceNumaId": ("NumaId",),
    "mpsEnabled": ("MpsEnabled",),
    "hostNumaId": ("HostNumaId",),
    "gpuPciDeviceID": ("GpuPciDeviceId",),
    "gpuPciSubsystemID": ("GpuPciSubsystemId",),
    "hostNumaMultinodeIpcSupported": ("HostNumaMultinodeIpcSupported",),
}

# Fields cuda-python declares unsigned (size_t or unsigned int): a negative wire int wraps back.
UNSIGNED_FIELDS = frozenset({
    "sharedMemPerBlock", "memPitch", "totalConstMem", "textureAlignment",
    "texturePitchAlignment", "surfaceAlignment", "sharedMemPerMultiprocessor",
    "sharedMemPerBlockOptin", "reservedSharedMemPerBlock", "gpuDirectRDMAFlushWritesOptions",
    "memoryPoolSupportedHandleTypes", "gpuPciDeviceID", "gpuPciSubsystemID",
})  # fmt: skip

# Attributes the driver has and cudaDeviceAttr lacks.
_DRIVER_ONLY = {
    "UnifiedFunctionPointers": CUdevice_attribute.CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS,
}


def _attribute(name: str) -> int:
    member = cudaDeviceAttr.__members__.get(A + name)
    return int(member if member is not None else _DRIVER_ONLY[name])


# The attributes asked of the server, in this order.
ATTRIBUTES: tuple[int, ...] = tuple(
    _attribute(name) for names in PROPERTY_ATTRIBUTES.values() for name in names
)


class cudaDeviceProp(Struct):
    uuid: Any
    FIELDS: ClassVar[dict[str, Any]] = {
        "name": b"",
        "uuid": None,
        "luid": bytes(8),
        "luidDeviceNodeMask": 0,
        "totalGlobalMem": 0,
        **{f: [0] * len(n) if len(n) > 1 else 0 for f, n in PROPERTY_ATTRIBUTES.items()},
    }

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.uuid is None:
            self.uuid = cudaUUID_t()


def properties_from(name: str, uuid: bytes, total_mem: int, values: list[int]) -> cudaDeviceProp:
    """A cudaDeviceProp from the server's answer; `values` in the order of ATTRIBUTES."""
    if len(values) != len(ATTRIBUTES):
        raise ValueError(f"cudaGetDeviceProperties: {len(values)} values for {len(ATTRIBUTES)}")
    fields: dict[str, Any] = {"name": name.encode(), "uuid": cudaUUID_t(uuid), "totalGlobalMem": total_mem}
    it = iter(values)
    for field, names in PROPERTY_ATTRIBUTES.items():
        got = [next(it) for _ in names]
        if field in UNSIGNED_FIELDS:
            got = [v % 2**32 for v in got]
        fields[field] = got if len(names) > 1 else got[0]
    return cudaDeviceProp(**fields)
