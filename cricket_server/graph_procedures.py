"""CRICKET_V1 procedures 400-449 and 681-699: CUDA graphs, stream capture, graph memory and
conditional nodes.

Mixed into `CricketService`; every procedure runs through its `_run` (counted for replay,
errors as CUresults, kept for GET_ERROR_MESSAGE). The work is `Session`'s
(`cricket_server.session_graphs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from cricket_server.backends.base import CUDA_SUCCESS
from cricket_server.launch_batch import GraphLaunch
from cricket_server.session import Session
from rpc_spec import cricket_rpc as proto

__all__ = ["GraphProcedures"]

T = TypeVar("T")


class GraphProcedures:
    """The graph procedures of `CricketService` (which supplies `_run`, `_status`,
    `_result`)."""

    _run: Callable[..., tuple[int, Any]]
    _status: Callable[..., int]
    _result: Callable[..., Any]

    def CU_GRAPH_CREATE(self, ctx: Any, flags: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuGraphCreate", lambda s: s.graph_create(flags)
        )

    def CU_GRAPH_DESTROY(self, ctx: Any, graph: int) -> int:
        return self._status(ctx, "cuGraphDestroy", lambda s: s.graph_destroy(graph))

    def CU_GRAPH_ADD_NODE(
        self, ctx: Any, graph: int, deps: list[int], params: proto.graph_node_params
    ) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuGraphAddNode",
            lambda s: s.graph_add_node(graph, deps, params),
        )

    def CU_GRAPH_GET_NODES(self, ctx: Any, graph: int) -> proto.graph_nodes_result:
        return self._result(
            proto.graph_nodes_result, ctx, "cuGraphGetNodes", lambda s: s.graph_nodes(graph)
        )

    def CU_GRAPH_GET_ROOT_NODES(self, ctx: Any, graph: int) -> proto.graph_nodes_result:
        return self._result(
            proto.graph_nodes_result, ctx, "cuGraphGetRootNodes",
            lambda s: s.graph_root_nodes(graph),
        )

    def CU_GRAPH_GET_EDGES(self, ctx: Any, graph: int) -> proto.graph_edges_result:
        def edges(s: Session) -> proto.graph_edges:
            froms, tos = s.graph_edges(graph)
            return proto.graph_edges(from_nodes=froms, to_nodes=tos)

        return self._result(proto.graph_edges_result, ctx, "cuGraphGetEdges", edges)

    def CU_GRAPH_CLONE(self, ctx: Any, graph: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuGraphClone", lambda s: s.graph_clone(graph)
        )

    def CU_GRAPH_ADD_DEPENDENCIES(
        self, ctx: Any, graph: int, froms: list[int], tos: list[int]
    ) -> int:
        return self._status(
            ctx, "cuGraphAddDependencies", lambda s: s.graph_add_dependencies(graph, froms, tos)
        )

    def CU_GRAPH_DESTROY_NODE(self, ctx: Any, node: int) -> int:
        return self._status(ctx, "cuGraphDestroyNode", lambda s: s.graph_destroy_node(node))

    def CU_GRAPH_NODE_GET_TYPE(self, ctx: Any, node: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuGraphNodeGetType", lambda s: s.node_type(node)
        )

    def CU_GRAPH_NODE_GET_DEPENDENCIES(self, ctx: Any, node: int) -> proto.graph_nodes_result:
        return self._result(
            proto.graph_nodes_result, ctx, "cuGraphNodeGetDependencies",
            lambda s: s.node_dependencies(node),
        )

    def CU_GRAPH_NODE_GET_PARAMS(self, ctx: Any, node: int) -> proto.graph_node_params_result:
        return self._result(
            proto.graph_node_params_result, ctx, "cuGraphNodeGetParams",
            lambda s: s.node_params(node),
        )

    def CU_GRAPH_NODE_SET_PARAMS(
        self, ctx: Any, node: int, params: proto.graph_node_params
    ) -> int:
        return self._status(
            ctx, "cuGraphNodeSetParams", lambda s: s.node_set_params(node, params)
        )

    def CU_GRAPH_INSTANTIATE(self, ctx: Any, graph: int, flags: int) -> proto.graph_exec_result:
        def made(s: Session) -> proto.graph_exec_made:
            handle, host = s.graph_instantiate(graph, flags)
            return proto.graph_exec_made(
                exec=handle,
                host_copies=[
                    proto.graph_host_copy(slot=c.slot, size=c.size, to_device=c.to_device)
                    for c in host
                ],
            )

        return self._result(proto.graph_exec_result, ctx, "cuGraphInstantiate", made)

    def CU_GRAPH_EXEC_DESTROY(self, ctx: Any, exec_: int) -> int:
        return self._status(ctx, "cuGraphExecDestroy", lambda s: s.graph_exec_destroy(exec_))

    def CU_GRAPH_LAUNCH(self, ctx: Any, exec_: int, stream: int, host_in: Any) -> int:
        return self._status(
            ctx, "cuGraphLaunch", lambda s: s.graph_launch(exec_, stream, memoryview(host_in))
        )

    def CU_GRAPH_LAUNCH_BATCH(self, ctx: Any, launches: list[GraphLaunch]) -> int:
        return self._run(
            ctx, "cuGraphLaunch", Session.graph_launch_batch, launches, calls=len(launches)
        )[0]

    def CU_GRAPH_LAUNCH_SYNC(
        self, ctx: Any, exec_: int, stream: int, host_in: Any
    ) -> proto.mem_result:
        code, data = self._run(
            ctx, "cuGraphLaunch", lambda s: s.graph_launch(exec_, stream, memoryview(host_in))
        )
        return proto.mem_result(code, data if code == CUDA_SUCCESS else None)

    def CU_GRAPH_EXEC_NODE_SET_PARAMS(
        self, ctx: Any, exec_: int, node: int, params: proto.graph_node_params
    ) -> int:
        return self._status(
            ctx, "cuGraphExecKernelNodeSetParams",
            lambda s: s.graph_exec_node_set_params(exec_, node, params),
        )

    def CU_GRAPH_EXEC_UPDATE(self, ctx: Any, exec_: int, graph: int) -> int:
        return self._status(
            ctx, "cuGraphExecUpdate", lambda s: s.graph_exec_update(exec_, graph)
        )

    def CU_STREAM_BEGIN_CAPTURE(self, ctx: Any, stream: int, mode: int) -> int:
        return self._status(
            ctx, "cuStreamBeginCapture", lambda s: s.stream_begin_capture(stream, mode)
        )

    def CU_STREAM_BEGIN_CAPTURE_TO_GRAPH(
        self, ctx: Any, stream: int, graph: int, deps: list[int], mode: int
    ) -> int:
        return self._status(
            ctx,
            "cuStreamBeginCaptureToGraph",
            lambda s: s.stream_begin_capture_to_graph(stream, graph, deps, mode),
        )

    def CU_STREAM_UPDATE_CAPTURE_DEPENDENCIES(
        self, ctx: Any, stream: int, deps: list[int], flags: int
    ) -> int:
        return self._status(
            ctx,
            "cuStreamUpdateCaptureDependencies",
            lambda s: s.stream_update_capture_dependencies(stream, deps, flags),
        )

    def CU_STREAM_END_CAPTURE(self, ctx: Any, stream: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuStreamEndCapture", lambda s: s.stream_end_capture(stream)
        )

    def CU_STREAM_CAPTURE_PROHIBIT(self, ctx: Any, stream: int, which: int) -> int:
        return self._status(
            ctx, "cuStreamCaptureProhibit", lambda s: s.stream_capture_prohibit(stream, which)
        )

    def CU_STREAM_GET_CAPTURE_INFO(self, ctx: Any, stream: int) -> proto.capture_info_result:
        def info(s: Session) -> proto.capture_info:
            status, seq, graph, deps = s.stream_capture_info(stream)
            return proto.capture_info(status=status, id=seq, graph=graph, dependencies=deps)

        return self._result(proto.capture_info_result, ctx, "cuStreamGetCaptureInfo", info)

    def CU_STREAM_CAPTURE_HOST_COPY(
        self, ctx: Any, stream: int, params: proto.graph_memcpy_params
    ) -> int:
        return self._status(
            ctx, "cuMemcpyAsync", lambda s: s.capture_host_copy(stream, params)
        )

    # -- graph memory and conditional nodes: procedures 681-699 -----------------------------
    def CU_GRAPH_CONDITIONAL_HANDLE_CREATE(
        self, ctx: Any, graph: int, default: int, flags: int
    ) -> proto.u64_result:
        return self._result(
            proto.u64_result, ctx, "cuGraphConditionalHandleCreate",
            lambda s: s.graph_conditional_handle_create(graph, default, flags),
        )

    def CU_DEVICE_GET_GRAPH_MEM_ATTRIBUTE(self, ctx: Any, dev: int, attr: int) -> proto.u64_result:
        return self._result(
            proto.u64_result, ctx, "cuDeviceGetGraphMemAttribute",
            lambda s: s.device_get_graph_mem_attribute(dev, attr),
        )

    def CU_DEVICE_SET_GRAPH_MEM_ATTRIBUTE(self, ctx: Any, dev: int, attr: int, value: int) -> int:
        return self._status(
            ctx, "cuDeviceSetGraphMemAttribute",
            lambda s: s.device_set_graph_mem_attribute(dev, attr, value),
        )

    def CU_DEVICE_GRAPH_MEM_TRIM(self, ctx: Any, dev: int) -> int:
        return self._status(ctx, "cuDeviceGraphMemTrim", lambda s: s.device_graph_mem_trim(dev))
