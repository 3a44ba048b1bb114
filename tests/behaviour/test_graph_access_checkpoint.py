"""What cuGraphRemoveDependencies, the typed node setters, an exec's event, flags and disabled
nodes change, and which node a clone's is made from, survive checkpoint, SIGKILL and
cricket-restart, and the same calls made after the checkpoint are replayed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda

N = 256
UPLOAD = int(cuda.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def memset_params(dst: Any, value: int) -> Any:
    p = cuda.CUDA_MEMSET_NODE_PARAMS()
    p.dst, p.value, p.elementSize, p.width, p.height = dst, value, 1, N, 1
    return p


def launch(exec_: Any, stream: Any) -> None:
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))


def build(stream: Any) -> tuple[Any, ...]:
    """A graph of two memsets of one buffer, `two` after `one` at first, then the edge turned
    round and `one`'s value changed to 4; an exec of it (flags UPLOAD) whose record node
    records `second` instead of `first`, with `one` turned off; a clone of the graph; an exec
    whose child-graph node does another graph's work."""
    a = check(cuda.cuMemAlloc(N))
    first, second = check(cuda.cuEventCreate(0)), check(cuda.cuEventCreate(0))
    graph = check(cuda.cuGraphCreate(0))
    one = check(cuda.cuGraphAddMemsetNode(graph, None, 0, memset_params(a, 1), None))
    two = check(cuda.cuGraphAddMemsetNode(graph, [one], 1, memset_params(a, 2), None))
    record = check(cuda.cuGraphAddEventRecordNode(graph, [two], 1, first))
    check(cuda.cuGraphRemoveDependencies(graph, [one, two], [two, record], None, 2))
    check(cuda.cuGraphAddDependencies(graph, [two, one], [one, record], None, 2))
    check(cuda.cuGraphMemsetNodeSetParams(one, memset_params(a, 4)))
    params = cuda.CUDA_GRAPH_INSTANTIATE_PARAMS()
    params.flags, params.hUploadStream = UPLOAD, stream
    exec_ = check(cuda.cuGraphInstantiateWithParams(graph, params))
    check(cuda.cuGraphExecEventRecordNodeSetEvent(exec_, record, second))
    check(cuda.cuGraphNodeSetEnabled(exec_, one, 0))
    clone = check(cuda.cuGraphClone(graph))
    # an exec whose child-graph node was given another graph's work (memset 8 instead of 1)
    b = check(cuda.cuMemAlloc(N))
    inner1, inner2, outer = (check(cuda.cuGraphCreate(0)) for _ in range(3))
    check(cuda.cuGraphAddMemsetNode(inner1, None, 0, memset_params(b, 1), None))
    check(cuda.cuGraphAddMemsetNode(inner2, None, 0, memset_params(b, 8), None))
    child = check(cuda.cuGraphAddChildGraphNode(outer, None, 0, inner1))
    child_exec = check(cuda.cuGraphInstantiate(outer, 0))
    check(cuda.cuGraphExecChildGraphNodeSetParams(child_exec, child, inner2))
    return a, graph, one, two, record, exec_, first, second, clone, b, child_exec


def check_state(built: tuple[Any, ...], stream: Any) -> None:
    a, graph, one, two, record, exec_, first, second, clone, b, child_exec = built
    check(cuda.cuMemsetD8(b, 0, N))
    launch(child_exec, stream)
    assert np.all(np.frombuffer(read(b, N), dtype=np.uint8) == 8)
    found = check(cuda.cuGraphNodeFindInClone(two, clone))
    assert int(check(cuda.cuGraphNodeGetContainingGraph(found))) == int(clone)
    assert [int(n) for n in check(cuda.cuGraphNodeGetDependentNodes(two, 1))[0]] == [int(one)]
    assert check(cuda.cuGraphNodeGetDependentNodes(one))[2] == 1
    assert check(cuda.cuGraphMemsetNodeGetParams(one)).value == 4
    assert int(check(cuda.cuGraphEventRecordNodeGetEvent(record))) == int(first)
    assert int(check(cuda.cuGraphExecGetFlags(exec_))) == UPLOAD
    assert check(cuda.cuGraphNodeGetEnabled(exec_, one)) == 0
    assert check(cuda.cuGraphNodeGetEnabled(exec_, two)) == 1
    check(cuda.cuMemsetD8(a, 0, N))
    start = check(cuda.cuEventCreate(0))
    check(cuda.cuEventRecord(start, stream))
    launch(exec_, stream)
    assert np.all(np.frombuffer(read(a, N), dtype=np.uint8) == 2)  # `one` (4) is off
    # the exec records `second`, never `first`
    assert check(cuda.cuEventElapsedTime(start, second)) >= 0
    assert cuda.cuEventElapsedTime(start, first)[0] != cuda.CUresult.CUDA_SUCCESS
    check(cuda.cuEventDestroy(start))


@pytest.mark.parametrize("after", [False, True], ids=["restored", "replayed"])
def test_changed_graphs_and_execs_come_back(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, after: bool
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        stream = check(cuda.cuStreamCreate(0))
        if after:
            cricket_client.checkpoint(tmp_path / "ckpt")
        built = build(stream)
        check_state(built, stream)
        if not after:
            cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        check_state(built, stream)
    finally:
        conn.close()
