"""The structured SM split (cuDevSmResourceSplit) that `sim` follows, and what backends take
and give for it.

Each group's parameters are read in order (CUDA driver API reference, CUDA 13.1+):
`coscheduledSmCount` 0 takes the device's default (8 from compute capability 9.0, else 2;
the input resource's co-scheduling alignment), at most 32 from 9.0 and 2 before, even;
`smCount` 0 discovers the count (the SMs left, rounded down to whole co-scheduled groups, or
to pairs with CU_DEV_SM_RESOURCE_GROUP_BACKFILL), else it is even, at least 2, at most the
input's SMs, and a multiple of the co-scheduled count unless BACKFILL; a group that ends with
no SMs, fewer than its co-scheduled count or more than are left is
CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION. A locality domain (flag
CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID) must be domain 0 or ANY: the modelled device has
one. The SMs left are the remainder (type CU_DEV_RESOURCE_TYPE_INVALID when none is left).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .base import CUDA_ERROR_INVALID_VALUE, CudaError
from .dev_resources import CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION

__all__ = ["SmGroupParams", "GROUP_BACKFILL", "GROUP_LOCALITY", "split_groups"]

GROUP_BACKFILL, GROUP_LOCALITY, GROUP_SUPPLEMENTAL = 0x1, 0x2, 0x4
LOCALITY_ANY = 0xFFFFFFFF
CALL = "cuDevSmResourceSplit"


@dataclass(frozen=True)
class SmGroupParams:
    """One CU_DEV_SM_RESOURCE_GROUP_PARAMS."""

    sm_count: int = 0
    coscheduled: int = 0
    preferred: int = 0
    flags: int = 0
    locality: int = 0


def _invalid(message: str) -> CudaError:
    return CudaError(CUDA_ERROR_INVALID_VALUE, f"{CALL}: {message}")


def _config(message: str) -> CudaError:
    return CudaError(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, f"{CALL}: {message}")


def split_groups(
    sm_count: int, alignment: int, params: list[SmGroupParams], flags: int
) -> tuple[list[int], int, list[SmGroupParams]]:
    """(SMs of each group, SMs left, the parameters with discovered counts filled in) of a
    split of `sm_count` SMs whose default co-scheduled count is `alignment`."""
    if flags:
        raise _invalid(f"flags {flags:#x} (must be 0)")
    if not params:
        raise _invalid("nbGroups is 0")
    default = max(alignment, 2)
    most = 32 if default >= 8 else 2
    left, sizes, out = sm_count, [], []
    for i, p in enumerate(params):
        where = f"groupParams[{i}]"
        if p.flags & ~(GROUP_BACKFILL | GROUP_LOCALITY | GROUP_SUPPLEMENTAL):
            raise _invalid(f"{where}.flags {p.flags:#x} are not CUdevSmResourceGroup_flags")
        if p.flags & GROUP_LOCALITY and p.locality not in (0, LOCALITY_ANY):
            raise _config(f"{where}: locality domain {p.locality} (the device has domain 0)")
        cos = p.coscheduled or default
        if cos > most or cos % 2:
            raise _invalid(f"{where}.coscheduledSmCount {cos} (even, at most {most})")
        backfill = bool(p.flags & GROUP_BACKFILL)
        n = p.sm_count
        if n == 0:
            n = left - left % 2 if backfill else left - left % cos
        elif n < 2 or n > sm_count or n % 2 or (not backfill and n % cos):
            raise _invalid(
                f"{where}.smCount {n} (even, 2 to {sm_count}, a multiple of {cos} "
                "without CU_DEV_SM_RESOURCE_GROUP_BACKFILL)"
            )
        if n == 0 or n < cos or n > left:
            raise _config(f"{where}: {n} SMs of co-scheduled groups of {cos}, {left} SMs left")
        left -= n
        sizes.append(n)
        out.append(replace(p, sm_count=n))
    return sizes, left, out
