"""What backends take and give for device resources and green contexts, and the SM split rule
`sim` follows.

A resource here is an SM resource (CU_DEV_RESOURCE_TYPE_SM, the only type the server
takes): `sm_count` SMs, the minimum partition size and co-scheduling alignment of the split
(CUdevSmResource.minSmPartitionSize / smCoscheduledAlignment), and `obj`, the backend's own
resource (the driver's CUdevResource holds more than the visible fields, so the server keeps
it and clients name it by the id the session gave it).

The split rule (cuDevSmResourceSplitByCount, CUDA driver API reference, CUDA 12.4 to 12.9:
"On Compute Architecture 9.0+, the minimum count is 8 SMs and must be a multiple of 8"; 8.x:
at least 4, a multiple of 2; 7.x: at least 2, a multiple of 2; 6.x: at least 1; CUDA 13
reports the same values in minSmPartitionSize and smCoscheduledAlignment): each group gets
minCount SMs raised to the minimum and rounded up to the alignment; as many groups as fit in
the input are made (no more than asked for), the SMs left over are the remainder.
CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING lowers minimum and alignment to 2 (the rule of
7.x, SMs treated one by one in pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CUDA_ERROR_INVALID_VALUE, CudaError

__all__ = [
    "RESOURCE_TYPE_SM",
    "SPLIT_IGNORE_SM_COSCHEDULING",
    "SPLIT_MAX_POTENTIAL_CLUSTER_SIZE",
    "DevResource",
    "partition_rule",
    "split_by_count",
]

RESOURCE_TYPE_SM = 1
SPLIT_IGNORE_SM_COSCHEDULING = 0x1
SPLIT_MAX_POTENTIAL_CLUSTER_SIZE = 0x2
CUDA_ERROR_INVALID_RESOURCE_TYPE = 914
CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION = 915


@dataclass(frozen=True)
class DevResource:
    """An SM resource: its visible fields and the backend's object."""

    type: int
    sm_count: int
    min_partition: int
    alignment: int
    flags: int
    obj: object = None


def partition_rule(major: int) -> tuple[int, int]:
    """(minimum SMs, alignment) of a split on a device of compute capability `major`.x."""
    if major >= 9:
        return 8, 8
    if major == 8:
        return 4, 2
    if major == 7:
        return 2, 2
    return 1, 1


def split_by_count(
    sm_count: int, minimum: int, alignment: int, wanted: int, flags: int, min_count: int
) -> tuple[int, int, int]:
    """(groups, SMs a group, SMs left) for a split of `sm_count` SMs; `wanted` 0: as many as
    fit (the count query)."""
    call = "cuDevSmResourceSplitByCount"
    if flags & ~(SPLIT_IGNORE_SM_COSCHEDULING | SPLIT_MAX_POTENTIAL_CLUSTER_SIZE):
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: unknown flags {flags:#x}")
    if min_count > sm_count:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: minCount {min_count} is more than the {sm_count} SMs of the input",
        )
    if flags & SPLIT_IGNORE_SM_COSCHEDULING:
        minimum, alignment = min(minimum, 2), min(alignment, 2)
    size = max(min_count, minimum)
    size = -(-size // alignment) * alignment
    fit = sm_count // size if size else 0
    groups = fit if wanted == 0 else min(wanted, fit)
    return groups, size, sm_count - groups * size
