"""The structured SM split rule sim follows (cuDevSmResourceSplit): co-scheduled groups,
discovery, backfill, and the refusals that name the group."""

from __future__ import annotations

import pytest

from cricket_server.backends.base import CudaError
from cricket_server.backends.dev_resources import CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION
from cricket_server.backends.sm_groups import (
    GROUP_BACKFILL,
    GROUP_LOCALITY,
    SmGroupParams,
    split_groups,
)

INVALID_VALUE = 1


def test_groups_in_order_and_the_remainder() -> None:
    sizes, left, out = split_groups(132, 8, [SmGroupParams(16), SmGroupParams(32, 16)], 0)
    assert (sizes, left) == ([16, 32], 84)
    assert [p.sm_count for p in out] == [16, 32]


def test_discovery_takes_whole_coscheduled_groups_of_what_is_left() -> None:
    sizes, left, out = split_groups(132, 8, [SmGroupParams(16), SmGroupParams(0)], 0)
    assert sizes == [16, 112] and left == 4
    assert out[1].sm_count == 112  # written back, as the driver fills it in
    sizes, left, _ = split_groups(132, 8, [SmGroupParams(0, 0, 0, GROUP_BACKFILL)], 0)
    assert (sizes, left) == ([132], 0)


def test_backfill_lets_a_count_leave_the_coscheduled_multiple() -> None:
    with pytest.raises(CudaError) as refused:
        split_groups(132, 8, [SmGroupParams(10)], 0)
    assert refused.value.code == INVALID_VALUE and "groupParams[0].smCount 10" in str(refused.value)
    assert split_groups(132, 8, [SmGroupParams(10, 0, 0, GROUP_BACKFILL)], 0)[0] == [10]


@pytest.mark.parametrize(
    ("params", "flags", "code", "words"),
    [
        ([SmGroupParams(16)], 1, INVALID_VALUE, "flags 0x1"),
        ([], 0, INVALID_VALUE, "nbGroups is 0"),
        ([SmGroupParams(16, 64)], 0, INVALID_VALUE, "coscheduledSmCount 64"),
        (
            [SmGroupParams(128), SmGroupParams(8)],
            0,
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
            "groupParams[1]",
        ),
        (
            [SmGroupParams(16, 0, 0, GROUP_LOCALITY, 3)],
            0,
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
            "locality domain 3",
        ),
        ([SmGroupParams(0, 0, 0, 0x10)], 0, INVALID_VALUE, "flags 0x10"),
    ],
)
def test_refusals_name_what_is_wrong(
    params: list[SmGroupParams], flags: int, code: int, words: str
) -> None:
    with pytest.raises(CudaError) as refused:
        split_groups(132, 8, params, flags)
    assert refused.value.code == code
    assert "cuDevSmResourceSplit" in str(refused.value) and words in str(refused.value)


def test_devices_before_compute_capability_9_pair_their_sms() -> None:
    assert split_groups(80, 2, [SmGroupParams(0)], 0)[0] == [80]
    with pytest.raises(CudaError, match="coscheduledSmCount 4"):
        split_groups(80, 2, [SmGroupParams(8, 4)], 0)
