"""Batch memory operation nodes of graph execs on the sim backend: the node's operations run
as cuStreamBatchMemOp runs them, in the node's place on the launch stream (an exec holding one
is replayed, not planned)."""

from __future__ import annotations

from collections.abc import Sequence

from cricket_server.graphs import NODE_BATCH_MEM_OP, ExecNode

from .graphs import ReplayExec

__all__ = ["SimGraphMemOps"]


class SimGraphMemOps:
    """Replay and exec updates of batch memory operation nodes (mixed into SimSession before
    ReplayGraphs)."""

    def _replay(
        self,
        nodes: Sequence[ExecNode],
        stream: object | None,
        host_in: Sequence[memoryview],
        out: list[bytes | memoryview],
    ) -> None:
        run: list[ExecNode] = []
        for node in nodes:
            if node.type != NODE_BATCH_MEM_OP:
                run.append(node)
                continue
            if run:
                super()._replay(run, stream, host_in, out)  # type: ignore[misc]
                run = []
            self.stream_mem_ops(stream, list(node.mem_ops))  # type: ignore[attr-defined]
        if run:
            super()._replay(run, stream, host_in, out)  # type: ignore[misc]

    def graph_exec_set_node(self, exec_: object, node: ExecNode) -> None:
        if node.type != NODE_BATCH_MEM_OP:
            super().graph_exec_set_node(exec_, node)  # type: ignore[misc]
            return
        assert isinstance(exec_, ReplayExec)
        for i, old in enumerate(exec_.nodes):
            if old.key == node.key:
                exec_.nodes[i] = ExecNode(old.key, node.type, old.deps, mem_ops=node.mem_ops)
                exec_.plan, exec_.replay = None, False
                return
