"""CUlaunchConfig, CUlaunchAttribute, CUlaunchAttributeValue and CUstreamAttrValue (and the
runtime's cudaStreamAttrValue) as cuda-python names them, for cuLaunchKernelEx and the stream
attribute calls. Plain objects: only their fields travel, as (id, x, y, z) per attribute
(rpc_spec/cricket.x, launch_attribute); attributes that carry host pointers or events
(access policy window, programmatic and completion events, memory sync domain map) are
refused locally with CUDA_ERROR_NOT_SUPPORTED naming them.
"""

from __future__ import annotations

from typing import Any

from ._types import as_int

__all__ = [
    "CUlaunchAttribute",
    "CUlaunchAttributeValue",
    "CUlaunchConfig",
    "CUstreamAttrValue",
    "cudaStreamAttrValue",
    "LaunchAttributeError",
    "attribute_values",
    "SCALAR_FIELDS",
]

CLUSTER_DIMENSION = 4
PREFERRED_CLUSTER_DIMENSION = 11
# CUlaunchAttributeID -> the scalar field of CUlaunchAttributeValue it reads
SCALAR_FIELDS: dict[int, str] = {
    2: "cooperative",
    3: "syncPolicy",
    5: "clusterSchedulingPolicyPreference",
    6: "programmaticStreamSerializationAllowed",
    8: "priority",
    10: "memSyncDomain",
    14: "sharedMemCarveout",
}
_REFUSED = {
    1: "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW",
    7: "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT",
    9: "CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP",
    12: "CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT",
    13: "CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE",
}


class LaunchAttributeError(ValueError):
    """A launch attribute that cannot travel; the message names it."""


class _Dim3:
    """clusterDim / preferredClusterDim: x, y, z."""

    def __init__(self) -> None:
        self.x = 0
        self.y = 0
        self.z = 0

    def __repr__(self) -> str:
        return f"x : {self.x}\ny : {self.y}\nz : {self.z}"


class CUlaunchAttributeValue:
    """The union of every launch attribute's value (only the field of its id is read)."""

    def __init__(self) -> None:
        self.clusterDim = _Dim3()
        self.preferredClusterDim = _Dim3()
        self.cooperative = 0
        self.syncPolicy: Any = 0
        self.clusterSchedulingPolicyPreference: Any = 0
        self.programmaticStreamSerializationAllowed = 0
        self.priority = 0
        self.memSyncDomain: Any = 0
        self.sharedMemCarveout = 0
        self.accessPolicyWindow: Any = None
        self.programmaticEvent: Any = None
        self.launchCompletionEvent: Any = None
        self.memSyncDomainMap: Any = None
        self.deviceUpdatableKernelNode: Any = None


class CUstreamAttrValue(CUlaunchAttributeValue):
    pass


class cudaStreamAttrValue(CUlaunchAttributeValue):
    pass


class CUlaunchAttribute:
    def __init__(self) -> None:
        self.id: Any = 0
        self.value = CUlaunchAttributeValue()


class CUlaunchConfig:
    def __init__(self) -> None:
        self.gridDimX = 0
        self.gridDimY = 0
        self.gridDimZ = 0
        self.blockDimX = 0
        self.blockDimY = 0
        self.blockDimZ = 0
        self.sharedMemBytes = 0
        self.hStream: Any = 0
        self.attrs: list[CUlaunchAttribute] = []
        self.numAttrs = 0


def attribute_values(attr_id: int, value: Any) -> tuple[int, int, int]:
    """(x, y, z) of one attribute's value; LaunchAttributeError for one that cannot travel."""
    if attr_id in (CLUSTER_DIMENSION, PREFERRED_CLUSTER_DIMENSION):
        dim = value.clusterDim if attr_id == CLUSTER_DIMENSION else value.preferredClusterDim
        return int(dim.x), int(dim.y), int(dim.z)
    field = SCALAR_FIELDS.get(attr_id)
    if field is not None:
        return as_int(getattr(value, field)), 0, 0
    if attr_id == 0:
        return 0, 0, 0
    name = _REFUSED.get(attr_id, f"launch attribute {attr_id}")
    raise LaunchAttributeError(
        f"{name} is not supported remotely (it names host memory or events of this process)"
    )
