"""CRICKET_V1 procedures 860-869: a kernel node's launch attributes.

Mixed into `CricketService`; the work is `Session`'s (`cricket_server.session_kernel_node_attrs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rpc_spec import cricket_rpc as proto

__all__ = ["KernelNodeAttrProcedures"]


class KernelNodeAttrProcedures:
    """cuGraphKernelNodeGetAttribute, SetAttribute and CopyAttributes (`CricketService`
    supplies `_status`, `_result`)."""

    _status: Callable[..., int]
    _result: Callable[..., Any]

    def CU_GRAPH_KERNEL_NODE_GET_ATTRIBUTE(
        self, ctx: Any, node: int, attr: int
    ) -> proto.launch_attribute_result:
        def value(s: Any) -> proto.launch_attribute:
            attr_id, x, y, z = s.kernel_node_get_attribute(node, attr)
            return proto.launch_attribute(id=attr_id, x=x, y=y, z=z)

        return self._result(
            proto.launch_attribute_result, ctx, "cuGraphKernelNodeGetAttribute", value
        )

    def CU_GRAPH_KERNEL_NODE_SET_ATTRIBUTE(
        self, ctx: Any, node: int, attr: proto.launch_attribute
    ) -> int:
        return self._status(
            ctx, "cuGraphKernelNodeSetAttribute",
            lambda s: s.kernel_node_set_attribute(node, attr),
        )

    def CU_GRAPH_KERNEL_NODE_COPY_ATTRIBUTES(self, ctx: Any, dst: int, src: int) -> int:
        return self._status(
            ctx, "cuGraphKernelNodeCopyAttributes",
            lambda s: s.kernel_node_copy_attributes(dst, src),
        )
