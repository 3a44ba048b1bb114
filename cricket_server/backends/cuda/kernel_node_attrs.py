"""A kernel node's launch attributes on the cuda backend: the session's (id, x, y, z) as the
driver's CUkernelNodeAttrID and CUkernelNodeAttrValue, and back.

The fields are cuLaunchKernelEx's (`launch_ex`): cluster dimensions in x, y, z; every other
attribute the session carries is one scalar in x.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..base import CUDA_ERROR_INVALID_VALUE, CudaError
from ._driver import call, driver, enum_value
from .launch_ex import _CLUSTER, _SCALARS

__all__ = [
    "apply_attributes", "attribute_id", "check_attribute", "node_attribute_value", "value_xyz",
]


def check_attribute(call_name: str, attr_id: int) -> None:
    """Refuse an attribute whose value cannot travel as (x, y, z) (host memory, events)."""
    if attr_id not in _CLUSTER and attr_id not in _SCALARS:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call_name}: launch attribute {attr_id} is not one a kernel node takes remotely",
        )


def node_attribute_value(call_name: str, attr_id: int, x: int, y: int, z: int) -> Any:
    """The CUkernelNodeAttrValue of attribute `attr_id` with (x, y, z)."""
    check_attribute(call_name, attr_id)
    value = driver.CUkernelNodeAttrValue()
    if attr_id in _CLUSTER:
        dim = value.clusterDim if attr_id == _CLUSTER[0] else value.preferredClusterDim
        dim.x, dim.y, dim.z = x, y, z
    elif attr_id in _SCALARS:
        name, convert = _SCALARS[attr_id]
        try:
            setattr(value, name, convert(x))
        except ValueError:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call_name}: {x} is not a value of {name}"
            ) from None
    return value


def value_xyz(attr_id: int, value: Any) -> tuple[int, int, int]:
    """(x, y, z) of the driver's value of attribute `attr_id`."""
    if attr_id in _CLUSTER:
        dim = value.clusterDim if attr_id == _CLUSTER[0] else value.preferredClusterDim
        return int(dim.x), int(dim.y), int(dim.z)
    return int(getattr(value, _SCALARS[attr_id][0])), 0, 0


def attribute_id(call_name: str, attr_id: int) -> Any:
    return enum_value(driver.CUkernelNodeAttrID, attr_id, call_name)


def apply_attributes(
    node: Any, attrs: Iterable[tuple[int, int, int, int]], call_name: str
) -> None:
    """Set the launch attributes `attrs` ((id, x, y, z) each) on the real kernel node."""
    for attr_id, x, y, z in attrs:
        call(
            driver.cuGraphKernelNodeSetAttribute,
            node,
            attribute_id(call_name, attr_id),
            node_attribute_value(call_name, attr_id, x, y, z),
            what=call_name,
        )
