"""CUDA graphs on the sim backend: an exec is its nodes in topological order, and a launch
queues each on the stream with the backend's own calls (launch, copies, memset, events), so
the stream's order respects every dependency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cricket_server.backends.base import BackendSession
from cricket_server.graphs import (
    NODE_EVENT_RECORD,
    NODE_KERNEL,
    NODE_MEMCPY,
    NODE_MEMSET,
    NODE_WAIT_EVENT,
    ExecNode,
)

__all__ = ["ReplayGraphs", "ReplayExec"]


@dataclass
class ReplayExec:
    nodes: list[ExecNode] = field(default_factory=list)


class ReplayGraphs(BackendSession):
    """Graph execs that replay their nodes on the launch stream (mixed into SimSession)."""

    def graph_instantiate(self, nodes: Sequence[ExecNode]) -> object:
        return ReplayExec(list(nodes))

    def graph_exec_set_node(self, exec_: object, node: ExecNode) -> None:
        assert isinstance(exec_, ReplayExec)
        for i, old in enumerate(exec_.nodes):
            if old.key == node.key:
                exec_.nodes[i] = ExecNode(
                    old.key, node.type, old.deps, node.kernel, node.copy, node.set, node.event
                )
                return

    def graph_launch(
        self, exec_: object, stream: object | None, host_in: Sequence[memoryview]
    ) -> list[bytes | memoryview]:
        assert isinstance(exec_, ReplayExec)
        out: list[bytes | memoryview] = []
        for node in exec_.nodes:
            if node.type == NODE_KERNEL and node.kernel is not None:
                func, grid, block, shared, params = node.kernel
                self.launch(func, grid, block, shared, stream, memoryview(params))
            elif node.type == NODE_MEMCPY and node.copy is not None:
                dst_host, dst, src_host, src, size = node.copy
                if src_host:
                    self.memcpy_htod(dst, host_in[src], stream if stream is not None else None)
                elif dst_host:
                    out.append(bytes(self.memcpy_dtoh(src, size, stream)))
                else:
                    self.memcpy_dtod(dst, src, size, stream)
            elif node.type == NODE_MEMSET and node.set is not None:
                dst, pitch, value, width, count, height = node.set
                for row in range(height):
                    self.memset(dst + row * pitch, value, width, count, stream)
            elif node.type == NODE_EVENT_RECORD:
                self.event_record(node.event, stream)
            elif node.type == NODE_WAIT_EVENT:
                self.stream_wait_event(stream, node.event, 0)
        return out
