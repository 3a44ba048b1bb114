"""The structured SM split (cuDevSmResourceSplit) on the cuda backend. The call is CUDA
13.1's: a server whose cuda-python or driver lacks it answers CUDA_ERROR_NOT_SUPPORTED naming
it."""

from __future__ import annotations

from typing import Any

from ..base import not_supported
from ..sm_groups import SmGroupParams
from ._driver import call, driver
from .dev_resources import _resource

__all__ = ["CudaSmGroups", "missing"]


def missing(name: str) -> Any:
    """A CudaError (CUDA_ERROR_NOT_SUPPORTED) saying this server's CUDA lacks `name`."""
    return not_supported(name, "this server's cuda-python or driver does not have it")


class CudaSmGroups:
    """The structured-split method of `CudaSession`."""

    _state: Any

    def sm_split_groups(
        self, res: Any, params: list[SmGroupParams], flags: int
    ) -> tuple[list[Any], Any, list[SmGroupParams]]:
        fn = getattr(driver, "cuDevSmResourceSplit", None)
        kind = getattr(driver, "CU_DEV_SM_RESOURCE_GROUP_PARAMS", None)
        if fn is None or kind is None:
            raise missing("cuDevSmResourceSplit")
        self._state()
        given = []
        for p in params:
            g = kind()
            g.smCount, g.coscheduledSmCount = p.sm_count, p.coscheduled
            g.preferredCoscheduledSmCount, g.flags = p.preferred, p.flags
            if hasattr(g, "localityDomainId"):
                g.localityDomainId = p.locality
            elif p.locality:  # bindings older than the field: it cannot be passed on
                raise not_supported(
                    "cuDevSmResourceSplit",
                    "a localityDomainId needs a newer cuda-python on the server",
                )
            given.append(g)
        try:
            result, remainder = call(fn, len(given), res.obj, flags, given)
        except RuntimeError as exc:  # the bindings have it, the driver does not
            raise missing("cuDevSmResourceSplit") from exc
        made = [_resource(r) for r in list(result or [])[: len(given)]]
        out = []
        for i, (g, p) in enumerate(zip(given, params, strict=True)):
            # a discovered count: written back by the driver, else the group's
            count = int(g.smCount) or (made[i].sm_count if i < len(made) else 0)
            out.append(SmGroupParams(count, p.coscheduled, p.preferred, p.flags, p.locality))
        return made, _resource(remainder), out
