"""The structured SM split (cuDevSmResourceSplit) on the sim backend: the rule of
`cricket_server.backends.sm_groups` over the device's SMs."""

from __future__ import annotations

from cricket_server.backends.dev_resources import RESOURCE_TYPE_SM, DevResource
from cricket_server.backends.sm_groups import SmGroupParams, split_groups

__all__ = ["SimSmGroups"]


class SimSmGroups:
    """The structured-split method of `SimSession`."""

    def sm_split_groups(
        self, res: DevResource, params: list[SmGroupParams], flags: int
    ) -> tuple[list[DevResource], DevResource, list[SmGroupParams]]:
        sizes, left, out = split_groups(res.sm_count, res.alignment, params, flags)
        groups = [
            DevResource(
                RESOURCE_TYPE_SM,
                n,
                res.min_partition,
                p.coscheduled or max(res.alignment, 2),
                0,
                res.obj,
            )  # fmt: skip
            for n, p in zip(sizes, out, strict=True)
        ]
        remainder = DevResource(
            RESOURCE_TYPE_SM if left else 0, left, res.min_partition, res.alignment, 0, res.obj
        )
        return groups, remainder, out
