"""CUDA graphs on the `cuda` backend: each exec is a real CUgraph built from the session's
nodes (cuGraphAdd*Node) and instantiated (cuGraphInstantiate); a launch is one cuGraphLaunch.

Client host memory in memcpy nodes becomes page-locked memory of the exec's own, planned
when it is made: when every host side is the source of a root memcpy node, each launch copies
its bytes ahead of the graph, into a ring of slots (`graph_inputs`), and queued launches never
wait; else the nodes read page-locked stages (`graph_staging`): a launch copies the bytes the
client sent into the stage once the launch before it is done with it, launches, and, when the
exec copies to host memory, waits for this launch and returns those bytes. Launches of execs
of the first kind or without host memory can be made by the C loop of launch batches
(`fast_launch`), which shares their `LaunchState`.

Conditional nodes are the driver's: each exec creates a real conditional handle per node
(cuGraphConditionalHandleCreate on the real graph that holds the node, with the session
handle's default value and flags) and fills the body graphs the driver returns. A kernel sets
a condition with cudaGraphSetConditional(handle, value) and gets the handle as an argument
from the program, which knows the session's value: in the packed arguments of the exec's
kernel nodes, each 8-byte aligned word equal to a session handle of the exec becomes the real
handle (session handles are distinctive 64-bit values, see `session_graph_nodes`). Memory
alloc and free nodes are empty nodes here: their memory is the session heap's.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base import CUDA_ERROR_INVALID_VALUE, BackendSession, CudaError
from ._driver import call, driver
from .graph_inputs import AheadInputs, LaunchState
from .graph_staging import HostStaging
from .kernel_node_attrs import (
    apply_attributes,
    attribute_id,
    check_attribute,
    value_xyz,
)

__all__ = ["CudaExec", "CudaGraphs"]

_KERNEL, _MEMCPY, _MEMSET, _EMPTY, _WAIT, _RECORD, _CONDITIONAL = 0, 1, 2, 5, 6, 7, 13


@dataclass
class CudaExec:
    graph: Any  # the CUgraph it was instantiated from (kept for node updates)
    exec: Any  # CUgraphExec
    nodes: dict[object, Any]  # ExecNode key -> CUgraphNode
    staging: HostStaging | None = None  # client host memory of memcpy nodes (pinned)
    ahead: AheadInputs | None = None  # or: root input copies made ahead of each launch
    launch_state: LaunchState = field(default_factory=LaunchState)  # shared with the C loop
    handles: dict[int, int] = field(default_factory=dict)  # session -> real conditional handle


class CudaGraphs(BackendSession):
    """The graph methods of `CudaSession` (which supplies `_state`, `_stream`, `_layouts`)."""

    _execs: dict[int, CudaExec]

    def _graph_execs(self) -> dict[int, CudaExec]:
        execs = self.__dict__.get("_execs")
        if execs is None:
            execs = self._execs = {}
        return execs

    def graph_instantiate(self, nodes: Sequence[Any]) -> object:
        state = self._state()  # type: ignore[attr-defined]
        graph = call(driver.cuGraphCreate, 0)
        made = CudaExec(graph, None, {})
        try:
            made.ahead = AheadInputs.plan(nodes, made.launch_state)
            if made.ahead is None:
                made.staging = HostStaging.plan(nodes)
            self._populate(made, graph, nodes, state.context.handle)
            made.exec = call(driver.cuGraphInstantiate, graph, 0)
            made.launch_state.exec = int(made.exec)
            if made.staging is not None:
                made.staging.nodes = made.nodes
        except BaseException:
            self._free_exec(made)
            raise
        self._graph_execs()[id(made)] = made
        return made

    def _populate(self, made: CudaExec, graph: Any, nodes: Sequence[Any], ctx: Any) -> None:
        """Add `nodes` to the real `graph` (a conditional's bodies recursively); the real
        handles of this level's conditionals are made first, for the kernels that set them."""
        for node in nodes:
            if node.type == _CONDITIONAL:
                handle, _, default, flags, _ = node.conditional
                real = call(driver.cuGraphConditionalHandleCreate, graph, ctx, default, flags)
                made.handles[handle] = int(real)
        for node in nodes:
            deps = [made.nodes[k] for k in node.deps]
            if node.type == _CONDITIONAL:
                made.nodes[node.key] = self._add_conditional(made, graph, deps, node, ctx)
            else:
                made.nodes[node.key] = self._add_node(made, graph, deps, node, ctx)

    def _add_conditional(
        self, made: CudaExec, graph: Any, deps: list[Any], node: Any, ctx: Any
    ) -> Any:
        handle, kind, _, _, bodies = node.conditional
        p = driver.CUgraphNodeParams()
        p.type = driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
        p.conditional.handle = driver.CUgraphConditionalHandle(made.handles[handle])
        p.conditional.type = driver.CUgraphConditionalNodeType(kind)
        p.conditional.size = len(bodies)
        p.conditional.ctx = ctx
        added = call(driver.cuGraphAddNode, graph, deps, None, len(deps), p)
        for body_graph, body in zip(p.conditional.phGraph_out, bodies, strict=True):
            self._populate(made, body_graph, body, ctx)
        return added

    def _add_node(self, made: CudaExec, graph: Any, deps: list[Any], node: Any, ctx: Any) -> Any:
        n = len(deps)
        if node.type == _KERNEL:
            params = self._kernel_params(node, made.handles)
            added = call(driver.cuGraphAddKernelNode, graph, deps, n, params)
            apply_attributes(added, node.attrs, "cuGraphInstantiate")
            return added
        if node.type == _MEMCPY:
            dst_host, dst, src_host, src, size = node.copy
            if made.ahead is not None and node.key in made.ahead.keys:  # copied by the launch
                return call(driver.cuGraphAddEmptyNode, graph, deps, n)
            if (src_host or dst_host) and made.staging is not None:  # stage 0's host memory
                p = made.staging.stages[0].params[node.key]
            else:
                p = driver.CUDA_MEMCPY3D()
                p.srcMemoryType = p.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
                p.srcDevice, p.dstDevice = driver.CUdeviceptr(src), driver.CUdeviceptr(dst)
                p.WidthInBytes, p.Height, p.Depth = size, 1, 1
            return call(driver.cuGraphAddMemcpyNode, graph, deps, n, p, ctx)
        if node.type == _MEMSET:
            return call(driver.cuGraphAddMemsetNode, graph, deps, n, self._memset_params(node), ctx)
        if node.type == _RECORD:
            return call(driver.cuGraphAddEventRecordNode, graph, deps, n, node.event)
        if node.type == _WAIT:
            return call(driver.cuGraphAddEventWaitNode, graph, deps, n, node.event)
        return call(driver.cuGraphAddEmptyNode, graph, deps, n)

    def _kernel_params(self, node: Any, handles: dict[int, int]) -> Any:
        func, grid, block, shared, params = node.kernel
        params = _real_handles(params, handles)
        p = driver.CUDA_KERNEL_NODE_PARAMS()
        p.func = func
        p.gridDimX, p.gridDimY, p.gridDimZ = grid
        p.blockDimX, p.blockDimY, p.blockDimZ = block
        p.sharedMemBytes = shared
        # the driver copies the parameters when the node is added or set
        p.kernelParams = self._layouts.buffer(func).fill(memoryview(params))  # type: ignore[attr-defined]
        p.extra = 0
        return p

    @staticmethod
    def _memset_params(node: Any) -> Any:
        dst, pitch, value, width, count, height = node.set
        p = driver.CUDA_MEMSET_NODE_PARAMS()
        p.dst = driver.CUdeviceptr(dst)
        p.pitch = pitch
        p.value = value
        p.elementSize = width
        p.width = count
        p.height = height
        return p

    def graph_exec_set_node(self, exec_: object, node: Any) -> None:
        made = self._exec_of(exec_)
        state = self._state()  # type: ignore[attr-defined]
        target = made.nodes.get(node.key)
        if target is None:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, "cuGraphExecKernelNodeSetParams: no such node")
        if node.type == _KERNEL:
            params = self._kernel_params(node, made.handles)
            call(driver.cuGraphExecKernelNodeSetParams, made.exec, target, params)
        elif node.type == _MEMSET:
            call(
                driver.cuGraphExecMemsetNodeSetParams,
                made.exec, target, self._memset_params(node), state.context.handle,
            )
        elif node.type == _MEMCPY:
            dst_host, dst, src_host, src, size = node.copy  # device sides only (the session's rule)
            p = driver.CUDA_MEMCPY3D()
            p.srcMemoryType = p.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
            p.srcDevice, p.dstDevice = driver.CUdeviceptr(src), driver.CUdeviceptr(dst)
            p.WidthInBytes, p.Height, p.Depth = size, 1, 1
            call(driver.cuGraphExecMemcpyNodeSetParams, made.exec, target, p, state.context.handle)
        elif node.type == _RECORD:
            call(driver.cuGraphExecEventRecordNodeSetEvent, made.exec, target, node.event)
        elif node.type == _WAIT:
            call(driver.cuGraphExecEventWaitNodeSetEvent, made.exec, target, node.event)

    def graph_exec_set_enabled(self, exec_: object, key: object, enabled: bool) -> None:
        made = self._exec_of(exec_)
        self._state()  # type: ignore[attr-defined]
        target = made.nodes.get(key)
        if target is None:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, "cuGraphNodeSetEnabled: no such node")
        ahead = made.ahead
        if ahead is not None and key in ahead.keys:  # an empty node: the launches copy
            ahead.set_enabled(key, enabled)
            return
        call(driver.cuGraphNodeSetEnabled, made.exec, target, 1 if enabled else 0)

    def graph_debug_dot(self, nodes: Sequence[Any], flags: int) -> str:
        """The driver's DOT text of a real graph of `nodes`, built as for an exec (and freed)."""
        state = self._state()  # type: ignore[attr-defined]
        made = CudaExec(call(driver.cuGraphCreate, 0), None, {})
        try:
            made.staging = HostStaging.plan(nodes)
            self._populate(made, made.graph, nodes, state.context.handle)
            with tempfile.TemporaryDirectory(prefix="cricket-dot-") as folder:
                path = os.path.join(folder, "graph.dot")
                call(driver.cuGraphDebugDotPrint, made.graph, path.encode(), flags)
                with open(path, encoding="utf-8", errors="replace") as f:
                    return f.read()
        finally:
            self._free_exec(made)

    def kernel_node_attribute(
        self, node: Any, attr_id: int, call_name: str
    ) -> tuple[int, int, int]:
        """Asked of the driver: the node with its attributes set on a scratch graph."""
        self._state()  # type: ignore[attr-defined]
        check_attribute(call_name, attr_id)
        graph = call(driver.cuGraphCreate, 0)
        try:
            real = call(
                driver.cuGraphAddKernelNode, graph, [], 0, self._kernel_params(node, {})
            )
            apply_attributes(real, node.attrs, call_name)
            value = call(
                driver.cuGraphKernelNodeGetAttribute, real, attribute_id(call_name, attr_id),
                what=call_name,
            )
            return value_xyz(attr_id, value)
        finally:
            call(driver.cuGraphDestroy, graph)

    def graph_upload(self, exec_: object, stream: object | None) -> None:
        made = self._exec_of(exec_)
        self._state()  # type: ignore[attr-defined]
        call(driver.cuGraphUpload, made.exec, self._stream(stream))  # type: ignore[attr-defined]

    def graph_launch(
        self, exec_: object, stream: object | None, host_in: Sequence[memoryview]
    ) -> list[bytes | memoryview]:
        made = self._exec_of(exec_)
        state = self._state()  # type: ignore[attr-defined]
        hstream = self._stream(stream)  # type: ignore[attr-defined]
        staging = made.staging
        if staging is None:
            if made.ahead is not None:
                made.ahead.copy_in(host_in, hstream)
            call(driver.cuGraphLaunch, made.exec, hstream)
            return []
        stage = staging.prepare(made.exec, state.context.handle)
        staging.fill(host_in)
        call(driver.cuGraphLaunch, made.exec, hstream)
        staging.launched(stage, hstream)
        return [staging.results(stage)] if staging.out_total else []

    def graph_exec_destroy(self, exec_: object) -> None:
        made = self._exec_of(exec_)
        self._state()  # type: ignore[attr-defined]
        self._graph_execs().pop(id(made), None)
        self._free_exec(made)

    def _fast_exec_state(self, exec_: object) -> int | None:
        """The address of an exec's LaunchState for the C loop, or None where the Python path
        launches it: page-locked stages, or an input copy turned off (the loop skips none)."""
        made = self._exec_of(exec_)
        if made.staging is not None or (made.ahead is not None and made.ahead.disabled):
            return None
        return ctypes.addressof(made.launch_state)

    def _exec_of(self, exec_: object) -> CudaExec:
        if isinstance(exec_, CudaExec) and id(exec_) in self._graph_execs():
            return exec_
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"cuGraphLaunch: {exec_!r} is not a live exec")

    @staticmethod
    def _free_exec(made: CudaExec) -> None:
        """Destroy what an exec holds; raises the first failure after trying everything."""
        errors: list[CudaError] = []
        if made.staging is not None:  # waits for the launches that use it
            errors += made.staging.free()
            made.staging = None
        if made.ahead is not None:
            errors += made.ahead.free()
            made.ahead = None
        steps: list[tuple[Any, Any]] = []
        if made.exec is not None:
            steps.append((driver.cuGraphExecDestroy, made.exec))
        steps.append((driver.cuGraphDestroy, made.graph))
        for fn, arg in steps:
            try:
                call(fn, arg)
            except CudaError as e:
                errors.append(e)
        if errors:
            raise errors[0]

    def close_graphs(self) -> list[CudaError]:
        """Destroy every exec (before the contexts go); the failures."""
        errors: list[CudaError] = []
        if self._graph_execs():
            self._state()  # type: ignore[attr-defined]
        for made in list(self._graph_execs().values()):
            try:
                self._free_exec(made)
            except CudaError as e:
                errors.append(e)
        self._graph_execs().clear()
        return errors


def _real_handles(params: bytes, handles: dict[int, int]) -> bytes:
    """Packed kernel arguments with each 8-byte aligned session conditional handle replaced by
    the exec's real one."""
    if not handles:
        return params
    data = bytearray(params)
    for offset in range(0, len(data) - 7, 8):
        real = handles.get(int.from_bytes(data[offset : offset + 8], "little"))
        if real is not None:
            data[offset : offset + 8] = real.to_bytes(8, "little")
    return bytes(data)
