"""A kernel node's launch attributes in `cricket_client.runtime` (re-exported there):
cudaGraphKernelNodeGetAttribute, cudaGraphKernelNodeSetAttribute and
cudaGraphKernelNodeCopyAttributes, the runtime forms of `cricket_client.driver_graph_attrs`
(the attribute ids and value fields are the driver's)."""

from __future__ import annotations

from typing import Any

from . import driver_graph_attrs as da
from ._runtime_enums import (
    cudaClusterSchedulingPolicy,
    cudaLaunchMemSyncDomain,
    cudaSynchronizationPolicy,
)
from .launch_types import CUlaunchAttributeValue
from .runtime_graphs import _run

__all__ = [
    "cudaKernelNodeAttrValue",
    "cudaGraphKernelNodeCopyAttributes",
    "cudaGraphKernelNodeGetAttribute",
    "cudaGraphKernelNodeSetAttribute",
]

_ENUM_FIELDS = {
    "syncPolicy": cudaSynchronizationPolicy,
    "clusterSchedulingPolicyPreference": cudaClusterSchedulingPolicy,
    "memSyncDomain": cudaLaunchMemSyncDomain,
}


class cudaKernelNodeAttrValue(CUlaunchAttributeValue):
    """A kernel node attribute's value (only the field of its id is read or filled)."""


def cudaGraphKernelNodeGetAttribute(hNode: Any, attr: Any) -> tuple[Any, Any]:
    err, value = _run(lambda: da.cuGraphKernelNodeGetAttribute(hNode, int(attr)), 1)
    if value is None:
        return err, None
    out = cudaKernelNodeAttrValue()
    for field, kind in _ENUM_FIELDS.items():  # the runtime's enums in place of the driver's
        driver_value = getattr(value, field)
        try:
            setattr(value, field, kind(int(driver_value)))
        except ValueError:
            pass
    out.__dict__.update(value.__dict__)
    return err, out


def cudaGraphKernelNodeSetAttribute(hNode: Any, attr: Any, value: Any) -> tuple[Any]:
    return _run(lambda: da.cuGraphKernelNodeSetAttribute(hNode, int(attr), value), 0)  # type: ignore[return-value]


def cudaGraphKernelNodeCopyAttributes(hDst: Any, hSrc: Any) -> tuple[Any]:
    return _run(lambda: da.cuGraphKernelNodeCopyAttributes(hDst, hSrc), 0)  # type: ignore[return-value]
