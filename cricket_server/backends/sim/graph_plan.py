"""A sim exec's launch planned once: its nodes as one work item of the launch stream.

Replaying an exec node by node (`ReplayGraphs._replay`) checks each kernel's configuration,
splits its arguments and queues one stream item per node at every launch. An exec made of
kernel, memcpy, memset and empty nodes only (the graphs a decoding loop captures) is planned
instead the first time it is launched (and again after a node of it changes): the kernels
checked and their arguments split once, and a launch queues the whole exec as one item that
runs the nodes in their order. Per launch there remain the checks CUDA makes at a launch (the
context's sticky error, loaded functions, that the copies' memory is still allocated).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_HANDLE,
    CudaError,
)
from cricket_server.backends.sim.devmem import KernelMemory
from cricket_server.backends.sim.kernels import Launch, host_kernel_and_args
from cricket_server.backends.sim.streams import Context
from cricket_server.graphs import NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, ExecNode

__all__ = ["GraphPlan", "check_plan", "plan_exec"]

_EMPTY = 5
_PLANNED = frozenset({NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, _EMPTY})
_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32}


@dataclass
class GraphPlan:
    """What a launch runs: `steps(host_in, out)` callables in node order, and the checks."""

    context: Context
    steps: list[Callable[[list[bytes], list[Any]], None]]
    functions: list[Any]  # SimFunctions whose modules must still be loaded
    spans: list[tuple[int, int, str]]  # (address, size, what) still allocated at each launch
    outputs: int  # device-to-host copies


def plan_exec(session: Any, nodes: Sequence[ExecNode], context: Context) -> GraphPlan | None:
    """The plan of `nodes` on `session` (a SimSession), or None when a node needs the replay
    (event, conditional, child or memory nodes). Raises what the first launch would."""
    if any(n.type not in _PLANNED for n in nodes):
        return None
    memory = session.memory
    plan = GraphPlan(context, [], [], [], 0)
    for node in nodes:
        if node.type == NODE_KERNEL and node.kernel is not None:
            plan.steps.append(_kernel_step(session, node, context, plan))
        elif node.type == NODE_MEMCPY and node.copy is not None:
            dst_host, dst, src_host, src, size = node.copy
            if src_host:
                plan.spans.append((dst, size, "cuMemcpyHtoD: destination"))
                plan.steps.append(_htod(memory, dst, src))
            elif dst_host:
                plan.spans.append((src, size, "cuMemcpyDtoH: source"))
                plan.steps.append(_dtoh(memory, src, size, dst))
                plan.outputs += 1
            elif size:
                plan.spans.append((src, size, "cuMemcpyDtoD: source"))
                plan.spans.append((dst, size, "cuMemcpyDtoD: destination"))
                plan.steps.append(_dtod(memory, dst, src, size))
        elif node.type == NODE_MEMSET and node.set is not None:
            dst, pitch, value, width, count, height = node.set
            if width not in _DTYPES or dst % width:
                return None  # the replay names the error
            for row in range(height):
                plan.spans.append((dst + row * pitch, width * count, f"cuMemsetD{8 * width}"))
            plan.steps.append(_memset(memory, dst, pitch, value, width, count, height))
    return plan


def check_plan(session: Any, plan: GraphPlan) -> None:
    """What CUDA checks at each launch: functions loaded, memory still allocated."""
    for fn in plan.functions:
        if not fn.module.loaded:
            raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"cuGraphLaunch: {fn!r} is not loaded")
    check = session.memory.check
    for address, size, what in plan.spans:
        check(address, size, what)


def _kernel_step(
    session: Any, node: ExecNode, context: Context, plan: GraphPlan
) -> Callable[[list[bytes], list[Any]], None]:
    call = "cuLaunchKernel"
    assert node.kernel is not None
    func, grid, block, shared, params = node.kernel
    fn = session._function(func, call)
    session._check_launch(fn, grid, block, shared, call)
    name = fn.info.name
    host, args = host_kernel_and_args(name, fn.info.params, bytes(params), call)
    spec = Launch(
        (grid[0], grid[1], grid[2]), (block[0], block[1], block[2]), shared, dict(fn.module.globals),
        context.cancelled,
    )
    accessor = KernelMemory(session.memory, name)
    plan.functions.append(fn)

    def step(host_in: list[bytes], out: list[Any]) -> None:
        host(spec, args, accessor)

    return step


def _htod(memory: Any, dst: int, index: int) -> Callable[[list[bytes], list[Any]], None]:
    def step(host_in: list[bytes], out: list[Any]) -> None:
        memory.write(dst, host_in[index], what="cuMemcpyHtoD")

    return step


def _dtoh(memory: Any, src: int, size: int, index: int) -> Callable[[list[bytes], list[Any]], None]:
    def step(host_in: list[bytes], out: list[Any]) -> None:
        out[index] = memory.span(src, size, what="cuMemcpyDtoH").data.toreadonly() if size else b""

    return step


def _dtod(memory: Any, dst: int, src: int, size: int) -> Callable[[list[bytes], list[Any]], None]:
    def step(host_in: list[bytes], out: list[Any]) -> None:
        memory.write(dst, memory.read(src, size, what="cuMemcpyDtoD"), what="cuMemcpyDtoD")

    return step


def _memset(
    memory: Any, dst: int, pitch: int, value: int, width: int, count: int, height: int
) -> Callable[[list[bytes], list[Any]], None]:
    call = f"cuMemsetD{8 * width}"
    dtype = _DTYPES[width]
    element = dtype(value & ((1 << (8 * width)) - 1))

    def step(host_in: list[bytes], out: list[Any]) -> None:
        if not count:
            return
        for row in range(height):
            at = dst + row * pitch
            view = memory.span(at, width * count, what=call)
            if view.flags.writeable:
                view.view(dtype)[:] = element
            else:
                memory.write(at, np.full(count, element, dtype=dtype), what=call)

    return step
