"""A kernel node's launch attributes (procedures 860-869): cuGraphKernelNodeGetAttribute,
SetAttribute and CopyAttributes, and the runtime forms.

The attributes set are the session's, kept with the node (`GraphNodeRecord.attrs`, copied into
clones and execs, checkpointed with the node) and given to the real node when an exec is made.
A value is set only once the backend took it (on cuda the driver checks it on a node of a
scratch graph), and an attribute is read as the backend's node answers it, so values never
set read as the device's defaults.
"""

from __future__ import annotations

from typing import Any

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.graphs import NODE_KERNEL, ExecNode, GraphNodeRecord
from cricket_server.session_graphs import SessionGraphs

__all__ = ["SessionKernelNodeAttrs"]


class SessionKernelNodeAttrs(SessionGraphs):
    """The kernel-node attribute calls of `Session`."""

    def _kernel_node(self, call: str, handle: int) -> GraphNodeRecord:
        node = self._node(call, handle)
        if node.type != NODE_KERNEL:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: node {handle:#x} is not a kernel node"
            )
        return node

    def _attr_node(self, call: str, node: GraphNodeRecord, attrs: dict[int, Any]) -> ExecNode:
        """The backend's view of kernel node `node` with launch attributes `attrs`."""
        exec_node = self._resolver(call)(node, node.handle, (), [])
        return ExecNode(
            exec_node.key, exec_node.type, (), kernel=exec_node.kernel,
            attrs=tuple((a, *v) for a, v in sorted(attrs.items())),
        )

    def kernel_node_get_attribute(self, handle: int, attr_id: int) -> tuple[int, int, int, int]:
        call = "cuGraphKernelNodeGetAttribute"
        self.current(call)
        node = self._kernel_node(call, handle)
        x, y, z = self.bsession.kernel_node_attribute(
            self._attr_node(call, node, node.attrs), attr_id, call
        )
        return attr_id, x, y, z

    def kernel_node_set_attribute(self, handle: int, attr: Any) -> None:
        call = "cuGraphKernelNodeSetAttribute"
        self.current(call)
        node = self._kernel_node(call, handle)
        attr_id, value = int(attr.id), (int(attr.x), int(attr.y), int(attr.z))
        attrs = {**node.attrs, attr_id: value}
        # the backend takes it (or refuses, naming it) before the node keeps it
        self.bsession.kernel_node_attribute(self._attr_node(call, node, attrs), attr_id, call)
        node.attrs = attrs

    def kernel_node_copy_attributes(self, dst: int, src: int) -> None:
        call = "cuGraphKernelNodeCopyAttributes"
        self.current(call)
        target, source = self._kernel_node(call, dst), self._kernel_node(call, src)
        if target.ctx != source.ctx:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: nodes {dst:#x} and {src:#x} belong to different contexts",
            )
        target.attrs = dict(source.attrs)
