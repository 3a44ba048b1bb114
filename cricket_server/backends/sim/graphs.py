"""CUDA graphs on the sim backend: an exec is its nodes in topological order, and a launch
queues each on the stream with the backend's own calls (launch, copies, memset, events), so
the stream's order respects every dependency.

Conditional nodes decide with their handle's value at each launch: the default value when the
handle assigns it (CU_GRAPH_COND_ASSIGN_DEFAULT), else 0, since sim kernels cannot set a
condition. IF runs body 0 when the value is non-zero (body 1, if any, when it is zero), SWITCH
runs body[value] (none past the last), WHILE runs while it is non-zero, so a WHILE whose value
starts non-zero could never end here and is refused at instantiation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    BackendSession,
    CudaError,
)
from cricket_server.backends.sim.graph_plan import GraphPlan, check_plan, plan_exec
from cricket_server.graphs import (
    COND_ASSIGN_DEFAULT,
    COND_IF,
    COND_SWITCH,
    COND_WHILE,
    NODE_CONDITIONAL,
    NODE_EVENT_RECORD,
    NODE_KERNEL,
    NODE_MEMCPY,
    NODE_MEMSET,
    NODE_WAIT_EVENT,
    ExecNode,
)

__all__ = ["NODE_ATTRIBUTES", "ReplayGraphs", "ReplayExec"]

# CUlaunchAttributeID a kernel node takes on sim -> the range of its values: cooperative,
# cluster dimensions, cluster scheduling policy, priority, memory sync domain, preferred
# cluster dimensions, preferred shared memory carveout (-1: the default)
NODE_ATTRIBUTES = {
    2: (0, 1), 4: (0, 8), 5: (0, 2), 8: (-(1 << 31), (1 << 31) - 1), 10: (0, 1), 11: (0, 16),
    14: (-1, 100),
}  # fmt: skip
_CLUSTER_DIMS = (4, 11)


@dataclass
class ReplayExec:
    nodes: list[ExecNode] = field(default_factory=list)
    disabled: set[object] = field(default_factory=set)  # keys of nodes turned off
    plan: GraphPlan | None = None  # made at the first launch (`graph_plan`); None: not yet
    replay: bool = False  # the nodes need the replay (no plan)
    last: Any = None  # the stream item that ends its latest launch


class ReplayGraphs(BackendSession):
    """Graph execs that replay their nodes on the launch stream (mixed into SimSession)."""

    def graph_instantiate(self, nodes: Sequence[ExecNode]) -> object:
        _check_conditionals(nodes)
        return ReplayExec(list(nodes))

    def graph_exec_set_node(self, exec_: object, node: ExecNode) -> None:
        assert isinstance(exec_, ReplayExec)
        for i, old in enumerate(exec_.nodes):
            if old.key == node.key:
                exec_.nodes[i] = ExecNode(
                    old.key, node.type, old.deps, node.kernel, node.copy, node.set, node.event
                )
                exec_.plan, exec_.replay = None, False
                return

    def graph_exec_set_enabled(self, exec_: object, key: object, enabled: bool) -> None:
        assert isinstance(exec_, ReplayExec)
        if enabled:
            exec_.disabled.discard(key)
        else:
            exec_.disabled.add(key)
        exec_.plan, exec_.replay = None, False

    def graph_debug_dot(self, nodes: Sequence[ExecNode], flags: int) -> str:
        """The graph as sim keeps it: one DOT node per exec node (child graphs flattened),
        labelled with its type and what it does, and its dependencies as edges."""
        return dot_text(nodes)

    def graph_upload(self, exec_: object, stream: object | None) -> None:
        """Nothing to upload: a sim exec is its node list."""
        assert isinstance(exec_, ReplayExec)

    def kernel_node_attribute(
        self, node: ExecNode, attr_id: int, call: str
    ) -> tuple[int, int, int]:
        """The value set, else 0s (the defaults of a node never given one); the attributes
        a kernel node takes (`NODE_ATTRIBUTES`), with values in their range."""
        if attr_id not in NODE_ATTRIBUTES:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: launch attribute {attr_id} is not one a kernel node takes on sim",
            )
        for a, x, y, z in node.attrs:
            low, high = NODE_ATTRIBUTES[a]
            if not all(low <= v <= high for v in ((x, y, z) if a in _CLUSTER_DIMS else (x,))):
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: {(x, y, z) if a in _CLUSTER_DIMS else x} is not a value of "
                    f"launch attribute {a} (from {low} to {high})",
                )
        values = {a: (x, y, z) for a, x, y, z in node.attrs}
        return values.get(attr_id, (0, 0, 0))

    def graph_launch(
        self, exec_: object, stream: object | None, host_in: Sequence[memoryview]
    ) -> list[bytes | memoryview]:
        """Launch `exec_` on `stream`, after its previous launch (CUDA orders the launches of
        one exec, whatever their streams)."""
        assert isinstance(exec_, ReplayExec)
        target = self._stream(stream, "cuGraphLaunch")  # type: ignore[attr-defined]
        target.context.check()
        prev = exec_.last
        after = [prev] if prev is not None and not prev.done.is_set() else []
        if not exec_.replay:
            plan = exec_.plan
            if plan is None or plan.context is not target.context:
                nodes = [n for n in exec_.nodes if n.key not in exec_.disabled]
                plan = exec_.plan = plan_exec(self, nodes, target.context)
                exec_.replay = plan is None
            if plan is not None:
                return self._run_plan(exec_, plan, target, host_in, after)
        if after:  # the replay's first item waits for the previous launch
            target.submit(_nothing, after)
        out: list[bytes | memoryview] = []
        nodes = [n for n in exec_.nodes if n.key not in exec_.disabled]
        self._replay(nodes, stream, host_in, out)
        exec_.last = target.tail
        return out

    def _run_plan(
        self,
        exec_: ReplayExec,
        plan: GraphPlan,
        target: Any,
        host_in: Sequence[memoryview],
        after: list[Any],
    ) -> list[bytes | memoryview]:
        """The planned exec as one item of `target` (after the items in `after`); waits for
        it when it copies to host memory (those bytes are the answer)."""
        check_plan(self, plan)
        data = [bytes(v) for v in host_in]  # the item outlives the caller's buffer
        steps = plan.steps
        out: list[Any] = [b""] * plan.outputs

        def run() -> None:
            for step in steps:
                step(data, out)

        if not plan.outputs:
            exec_.last = target.submit(run, after)
            return []
        for work in after:
            work.done.wait()
        target.run(run)
        exec_.last = target.tail
        target.context.check()
        return out

    def _replay(
        self,
        nodes: Sequence[ExecNode],
        stream: object | None,
        host_in: Sequence[memoryview],
        out: list[bytes | memoryview],
    ) -> None:
        for node in nodes:
            if node.type == NODE_CONDITIONAL and node.conditional is not None:
                for body in _bodies_run(node.conditional):
                    self._replay(body, stream, host_in, out)
            elif node.type == NODE_KERNEL and node.kernel is not None:
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


def _nothing() -> None:
    """A stream item that only orders: it runs once the items it waits for are done."""


def _value(conditional: tuple) -> int:  # type: ignore[type-arg]
    _, _, default, flags, _ = conditional
    return int(default) if flags & COND_ASSIGN_DEFAULT else 0


def _bodies_run(conditional: tuple) -> list[tuple[ExecNode, ...]]:  # type: ignore[type-arg]
    """The bodies a conditional node runs this launch, in order."""
    kind, bodies, value = conditional[1], conditional[4], _value(conditional)
    if kind == COND_IF:
        if value:
            return [bodies[0]]
        return [bodies[1]] if len(bodies) > 1 else []
    if kind == COND_SWITCH:
        return [bodies[value]] if value < len(bodies) else []
    return []  # COND_WHILE: its value is 0 here (instantiation refused a non-zero one)


def _check_conditionals(nodes: Sequence[ExecNode]) -> None:
    for node in nodes:
        if node.type != NODE_CONDITIONAL or node.conditional is None:
            continue
        if node.conditional[1] == COND_WHILE and _value(node.conditional):
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"cuGraphInstantiate: the WHILE conditional node {node.key!r} starts with a "
                "non-zero value; on the sim backend no kernel can set it to 0, so it would "
                "never end",
            )
        for body in node.conditional[4]:
            _check_conditionals(body)


_DOT_NAMES = {
    NODE_KERNEL: "KERNEL", NODE_MEMCPY: "MEMCPY", NODE_MEMSET: "MEMSET", NODE_WAIT_EVENT:
    "EVENT_WAIT", NODE_EVENT_RECORD: "EVENT_RECORD", NODE_CONDITIONAL: "CONDITIONAL",
    12: "BATCH_MEM_OP",
}  # fmt: skip


def _dot_id(key: object) -> str:
    parts = key if isinstance(key, tuple) else (key,)
    return "node_" + "_".join(f"{int(p):x}" if isinstance(p, int) else str(p) for p in parts)


def _dot_side(host: bool, value: int) -> str:
    return f"client host memory {value}" if host else f"{value:#x}"


def _dot_label(node: ExecNode) -> str:
    name = _DOT_NAMES.get(node.type, "EMPTY")
    if node.kernel is not None:
        _, grid, block, shared, params = node.kernel
        return f"{name}\\ngrid {grid} block {block}\\nshared {shared} params {len(params)} bytes"
    if node.copy is not None:
        dst_host, dst, src_host, src, size = node.copy
        return f"{name}\\n{size} bytes {_dot_side(src_host, src)} -> {_dot_side(dst_host, dst)}"
    if node.set is not None:
        dst, pitch, value, element, width, height = node.set
        return f"{name}\\n{dst:#x} value {value:#x} ({element} B) {width}x{height} pitch {pitch}"
    return name


def dot_text(nodes: Sequence[ExecNode]) -> str:
    """A DOT digraph of `nodes` and their dependencies."""
    lines = ["digraph cricket_graph {"]
    for node in nodes:
        lines.append(f'  {_dot_id(node.key)} [shape=box label="{_dot_label(node)}"];')
    for node in nodes:
        lines += [f"  {_dot_id(d)} -> {_dot_id(node.key)};" for d in node.deps]
    lines.append("}")
    return "\n".join(lines) + "\n"
