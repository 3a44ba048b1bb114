"""Graph memory nodes and conditional nodes of `cricket_client.runtime`, over the driver forms
of `cricket_client.driver_graph_mem_cond` (what CUDA returns in the caller's params is
written back the same way). cudaGraphConditionalHandleCreate_v2 takes an execution context,
which is a device's primary context here (the graph's context is used). Re-exported by
`cricket_client.runtime`; cudaGraphAddNode's alloc, free and conditional arms come here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from . import driver_graph_mem_cond as dm
from . import driver_graph_nodes as dn
from . import runtime_graphs as rg
from ._enums import CUgraphNodeType
from ._runtime_enums import (
    cudaGraphConditionalNodeType,
    cudaMemAllocationType,
    cudaMemLocationType,
)
from ._types import Handle, as_int
from ._types_vmm import cudaMemPoolProps
from .plain_types import (
    CUDA_CONDITIONAL_NODE_PARAMS,
    CUgraphNodeParams,
    ValueStruct,
    cudaExecutionContext_t,
)

__all__ = [
    "cudaGraphConditionalHandle",
    "cudaMemAllocNodeParams",
    "cudaMemFreeNodeParams",
    "cudaConditionalNodeParams",
    "cudaGraphAddMemAllocNode",
    "cudaGraphAddMemFreeNode",
    "cudaGraphMemAllocNodeGetParams",
    "cudaGraphMemFreeNodeGetParams",
    "cudaDeviceGetGraphMemAttribute",
    "cudaDeviceSetGraphMemAttribute",
    "cudaDeviceGraphMemTrim",
    "cudaGraphConditionalHandleCreate",
    "cudaGraphConditionalHandleCreate_v2",
]


class cudaGraphConditionalHandle(Handle):
    _hex = False
    __slots__ = ()


class cudaMemAllocNodeParams(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "poolProps": cudaMemPoolProps, "accessDescs": [], "accessDescCount": 0, "bytesize": 0,
        "dptr": 0,
    }  # fmt: skip


class cudaMemFreeNodeParams(ValueStruct):
    FIELDS: ClassVar[dict[str, Any]] = {"dptr": 0}


class cudaConditionalNodeParams(CUDA_CONDITIONAL_NODE_PARAMS):
    FIELDS: ClassVar[dict[str, Any]] = {
        "handle": cudaGraphConditionalHandle(0), "type": cudaGraphConditionalNodeType(0),
        "size": 0, "phGraph_out": [], "ctx": cudaExecutionContext_t(0),
    }  # fmt: skip
    GRAPH: ClassVar[type[Handle]] = rg.cudaGraph_t


def _driver_alloc(p: Any) -> Any:
    out: Any = dm.CUDA_MEM_ALLOC_NODE_PARAMS()
    out.poolProps.location.type = int(p.poolProps.location.type)
    out.poolProps.location.id = int(p.poolProps.location.id)
    out.poolProps.allocType = int(p.poolProps.allocType)
    out.bytesize = p.bytesize
    return out


def cudaGraphAddMemAllocNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, nodeParams: Any
) -> tuple[Any, Any]:
    """Sets nodeParams.dptr to the allocation's address, as CUDA does."""

    def add() -> tuple[Any, ...]:
        if not hasattr(nodeParams, "poolProps"):
            return dm.cuGraphAddMemAllocNode(graph, pDependencies, numDependencies, None)
        params = _driver_alloc(nodeParams)
        err, node = dm.cuGraphAddMemAllocNode(graph, pDependencies, numDependencies, params)
        if not err:
            nodeParams.dptr = int(params.dptr)
        return err, rg._wrap(rg.cudaGraphNode_t, node)

    return rg._run(add, 1)


def cudaGraphAddMemFreeNode(
    graph: Any, pDependencies: Sequence[Any] | None, numDependencies: int, dptr: Any
) -> tuple[Any, Any]:
    def add() -> tuple[Any, ...]:
        err, node = dm.cuGraphAddMemFreeNode(graph, pDependencies, numDependencies, dptr)
        return err, rg._wrap(rg.cudaGraphNode_t, node)

    return rg._run(add, 1)


def cudaGraphMemAllocNodeGetParams(node: Any) -> tuple[Any, Any]:
    def get() -> tuple[Any, ...]:
        err, p = dm._params_of("cudaGraphMemAllocNodeGetParams", node, dm.MEM_ALLOC)
        if err:
            return err, None
        out = dm.alloc_node_params(
            p, cudaMemAllocNodeParams(), cudaMemLocationType.cudaMemLocationTypeDevice,
            cudaMemAllocationType.cudaMemAllocationTypePinned,
        )  # fmt: skip
        return 0, out

    return rg._run(get, 1)


def cudaGraphMemFreeNodeGetParams(node: Any) -> tuple[Any, Any]:
    def get() -> tuple[Any, ...]:
        err, dptr = dm.cuGraphMemFreeNodeGetParams(node)
        return err, None if err else int(dptr)

    return rg._run(get, 1)


def cudaDeviceGetGraphMemAttribute(device: int, attr: Any) -> tuple[Any, Any]:
    return rg._run(lambda: dm.cuDeviceGetGraphMemAttribute(device, int(attr)), 1)


def cudaDeviceSetGraphMemAttribute(device: int, attr: Any, value: Any) -> tuple[Any]:
    return rg._run(lambda: dm.cuDeviceSetGraphMemAttribute(device, int(attr), value), 0)  # type: ignore[return-value]


def cudaDeviceGraphMemTrim(device: int) -> tuple[Any]:
    return rg._run(lambda: dm.cuDeviceGraphMemTrim(device), 0)  # type: ignore[return-value]


def cudaGraphConditionalHandleCreate(
    graph: Any, defaultLaunchValue: int, flags: int
) -> tuple[Any, Any]:
    def create() -> tuple[Any, ...]:
        err, handle = dm.cuGraphConditionalHandleCreate(graph, None, defaultLaunchValue, flags)
        return err, None if err else cudaGraphConditionalHandle(int(handle))

    return rg._run(create, 1)


def cudaGraphConditionalHandleCreate_v2(
    graph: Any, ctx: Any, defaultLaunchValue: int, flags: int
) -> tuple[Any, Any]:
    return cudaGraphConditionalHandleCreate(graph, defaultLaunchValue, flags)


def add_conditional(
    graph: Any, pDependencies: Any, numDependencies: int, conditional: Any
) -> tuple[Any, Any]:
    """cudaGraphAddNode's conditional arm: phGraph_out gets the body graphs."""

    def add() -> tuple[Any, ...]:
        params: Any = CUgraphNodeParams()
        params.type = CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
        params.conditional.handle = as_int(conditional.handle)
        params.conditional.type = int(conditional.type)
        params.conditional.size = int(conditional.size)
        err, node = dn.cuGraphAddNode(graph, pDependencies, None, numDependencies, params)
        if not err:
            conditional.phGraph_out = [
                rg.cudaGraph_t(int(g)) for g in params.conditional.phGraph_out
            ]
        return err, rg._wrap(rg.cudaGraphNode_t, node)

    return rg._run(add, 1)
