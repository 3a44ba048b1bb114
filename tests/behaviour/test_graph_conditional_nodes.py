"""Conditional graph nodes: cuGraphAddNode returns the body graphs in the caller's
params.conditional.phGraph_out (as cuda-python does), the bodies belong to the node, and a
launch runs the body the handle's default value selects (IF, SWITCH, WHILE)."""

from __future__ import annotations

import numpy as np
import pytest
from behaviour_helpers import BACKEND, check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 256
COND = cuda.CUgraphConditionalNodeType
ASSIGN_DEFAULT = cuda.CU_GRAPH_COND_ASSIGN_DEFAULT


def conditional(graph: object, kind: object, size: int, default: int, deps: list[object] = ()):  # type: ignore[assignment]
    """(node, body graphs) of a new conditional node whose handle assigns `default`."""
    ctx = check(cuda.cuCtxGetCurrent())
    handle = check(cuda.cuGraphConditionalHandleCreate(graph, ctx, default, ASSIGN_DEFAULT))
    params = cuda.CUgraphNodeParams()
    params.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = handle
    params.conditional.type = kind
    params.conditional.size = size
    params.conditional.ctx = ctx
    assert [int(g) for g in params.conditional.phGraph_out] == [0] * size
    node = check(cuda.cuGraphAddNode(graph, list(deps), None, len(deps), params))
    bodies = list(params.conditional.phGraph_out)
    assert len(bodies) == size and all(int(b) for b in bodies)
    return node, bodies


def set_word(graph: object, dst: int, value: int, deps: list[object] = ()) -> object:  # type: ignore[assignment]
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst, ms.value, ms.elementSize, ms.width, ms.height = dst, value, 4, N, 1
    return check(cuda.cuGraphAddMemsetNode(graph, list(deps), len(deps), ms, check(cuda.cuCtxGetCurrent())))


def run(graph: object, out: int) -> int:
    """Launch an exec of `graph` once (out reset to 0 first); the first word of `out`."""
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuMemsetD32(out, 0, N))
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    host = np.zeros(N, dtype=np.uint32)
    check(cuda.cuMemcpyDtoH(host, out, host.nbytes))
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuStreamDestroy(stream))
    assert np.all(host == host[0])
    return int(host[0])


@pytest.mark.parametrize(("default", "expected"), [(1, 11), (0, 22)])
def test_if_runs_the_body_the_default_value_selects(
    session: cricket_client.Connection, default: int, expected: int
) -> None:
    out = check(cuda.cuMemAlloc(4 * N))
    graph = check(cuda.cuGraphCreate(0))
    _, (then, else_) = conditional(graph, COND.CU_GRAPH_COND_TYPE_IF, 2, default)
    set_word(then, out, 11)
    set_word(else_, out, 22)
    assert run(graph, out) == expected


@pytest.mark.parametrize(("default", "expected"), [(2, 102), (0, 100), (7, 0)])
def test_switch_runs_body_of_the_value_and_none_past_the_last(
    session: cricket_client.Connection, default: int, expected: int
) -> None:
    out = check(cuda.cuMemAlloc(4 * N))
    graph = check(cuda.cuGraphCreate(0))
    _, bodies = conditional(graph, COND.CU_GRAPH_COND_TYPE_SWITCH, 3, default)
    for i, body in enumerate(bodies):
        set_word(body, out, 100 + i)
    assert run(graph, out) == expected


def test_a_while_that_starts_at_zero_never_runs_and_nested_bodies_run(
    session: cricket_client.Connection,
) -> None:
    out = check(cuda.cuMemAlloc(4 * N))
    graph = check(cuda.cuGraphCreate(0))
    first = set_word(graph, out, 5)
    loop, (body,) = conditional(graph, COND.CU_GRAPH_COND_TYPE_WHILE, 1, 0, [first])
    set_word(body, out, 6)
    _, (inner,) = conditional(graph, COND.CU_GRAPH_COND_TYPE_IF, 1, 1, [loop])
    _, (innermost,) = conditional(inner, COND.CU_GRAPH_COND_TYPE_IF, 1, 1)
    set_word(innermost, out, 7)
    assert run(graph, out) == 7


@pytest.mark.skipif(BACKEND != "sim", reason="sim kernels cannot end a WHILE loop")
def test_sim_refuses_a_while_that_would_never_end(session: cricket_client.Connection) -> None:
    graph = check(cuda.cuGraphCreate(0))
    conditional(graph, COND.CU_GRAPH_COND_TYPE_WHILE, 1, 1)
    err, exec_ = cuda.cuGraphInstantiate(graph, 0)
    assert (err, exec_) == (cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED, None)
    assert "never end" in cricket_client.last_error_message()


def test_bodies_belong_to_the_node_and_clones_get_their_own(
    session: cricket_client.Connection,
) -> None:
    out = check(cuda.cuMemAlloc(4 * N))
    graph = check(cuda.cuGraphCreate(0))
    _, (then,) = conditional(graph, COND.CU_GRAPH_COND_TYPE_IF, 1, 1)
    set_word(then, out, 31)
    clone = check(cuda.cuGraphClone(graph))
    check(cuda.cuGraphDestroy(graph))
    err, *_ = cuda.cuGraphGetNodes(then)  # the body went with its graph
    assert err != cuda.CUresult.CUDA_SUCCESS
    assert run(clone, out) == 31  # the clone's node has a copy of the body
    check(cuda.cuGraphDestroy(clone))


def test_conditional_parameters_are_checked(session: cricket_client.Connection) -> None:
    graph = check(cuda.cuGraphCreate(0))
    other = check(cuda.cuGraphCreate(0))
    ctx = check(cuda.cuCtxGetCurrent())
    err, _ = cuda.cuGraphConditionalHandleCreate(graph, ctx, 0, 8)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    handle = check(cuda.cuGraphConditionalHandleCreate(other, ctx, 0, 0))
    params = cuda.CUgraphNodeParams()
    params.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = handle
    params.conditional.type = COND.CU_GRAPH_COND_TYPE_IF
    params.conditional.size = 1
    err, node = cuda.cuGraphAddNode(graph, None, None, 0, params)  # another graph's handle
    assert (err, node) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    params.conditional.type = COND.CU_GRAPH_COND_TYPE_WHILE
    params.conditional.size = 2
    err, node = cuda.cuGraphAddNode(other, None, None, 0, params)  # a WHILE has one body
    assert (err, node) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    assert [int(g) for g in params.conditional.phGraph_out] == [0, 0]


def test_runtime_conditional_node(session: cricket_client.Connection) -> None:
    ok = cudart.cudaError_t.cudaSuccess
    out = check(cuda.cuMemAlloc(4 * N))
    err, graph = cudart.cudaGraphCreate(0)
    assert err == ok
    err, handle = cudart.cudaGraphConditionalHandleCreate(
        graph, 1, cudart.cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault
    )
    assert err == ok
    params = cudart.cudaGraphNodeParams()
    params.type = cudart.cudaGraphNodeType.cudaGraphNodeTypeConditional
    params.conditional.handle = handle
    params.conditional.type = cudart.cudaGraphConditionalNodeType.cudaGraphCondTypeIf
    params.conditional.size = 1
    err, node = cudart.cudaGraphAddNode(graph, None, None, 0, params)
    assert err == ok
    (body,) = params.conditional.phGraph_out
    assert isinstance(body, cudart.cudaGraph_t) and int(body) != 0
    set_word(body, out, 41)
    assert run(graph, out) == 41
    err, ctx = cudart.cudaDeviceGetExecutionCtx(0)
    assert err == ok
    err, handle2 = cudart.cudaGraphConditionalHandleCreate_v2(graph, ctx, 0, 0)
    assert err == ok and int(handle2) != int(handle)
