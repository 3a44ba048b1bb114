"""Batch memory operation nodes (cuGraphAddBatchMemOpNode, cuGraphBatchMemOpNodeGetParams/
SetParams, cuGraphExecBatchMemOpNodeSetParams, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP through
cuGraphAddNode/cuGraphAddNode_v3/cuGraphNodeGetParams): writes and waits run in the node's
place at every launch, in clones and execs, changed as CUDA lets an exec change them, refused
where CUDA refuses them, and back after checkpoint, SIGKILL and cricket-restart."""

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

OP = cuda.CUstreamBatchMemOpType
WAIT_EQ = cuda.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_EQ
INVALID = cuda.CUresult.CUDA_ERROR_INVALID_VALUE


def write32(ptr: int, value: int) -> cuda.CUstreamBatchMemOpParams:
    m = cuda.CUstreamBatchMemOpParams()
    m.operation = m.writeValue.operation = OP.CU_STREAM_MEM_OP_WRITE_VALUE_32
    m.writeValue.address, m.writeValue.value = ptr, value
    return m


def write64(ptr: int, value: int) -> cuda.CUstreamBatchMemOpParams:
    m = cuda.CUstreamBatchMemOpParams()
    m.operation = m.writeValue.operation = OP.CU_STREAM_MEM_OP_WRITE_VALUE_64
    m.writeValue.address, m.writeValue.value64 = ptr, value
    return m


def wait32(ptr: int, value: int) -> cuda.CUstreamBatchMemOpParams:
    m = cuda.CUstreamBatchMemOpParams()
    m.operation = m.waitValue.operation = OP.CU_STREAM_MEM_OP_WAIT_VALUE_32
    m.waitValue.address, m.waitValue.value, m.waitValue.flags = ptr, value, WAIT_EQ
    return m


def flush() -> cuda.CUstreamBatchMemOpParams:
    m = cuda.CUstreamBatchMemOpParams()
    m.operation = m.flushRemoteWrites.operation = OP.CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES
    return m


def flushes() -> list[cuda.CUstreamBatchMemOpParams]:
    """A flush of remote writes where the device can (CUDA refuses it elsewhere: the H200)."""
    attr = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES
    can = check(cuda.cuDeviceGetAttribute(attr, check(cuda.cuDeviceGet(0))))
    return [flush()] if can else []


def node_params(*ops: cuda.CUstreamBatchMemOpParams) -> cuda.CUDA_BATCH_MEM_OP_NODE_PARAMS:
    p = cuda.CUDA_BATCH_MEM_OP_NODE_PARAMS()
    p.ctx = check(cuda.cuCtxGetCurrent())
    p.count = len(ops)
    p.paramArray = list(ops)
    return p


def u32(ptr: int, i: int = 0) -> int:
    return int(np.frombuffer(read(ptr, 16), dtype=np.uint32)[i])


def u64(ptr: int) -> int:
    return int(np.frombuffer(read(ptr, 8), dtype=np.uint64)[0])


def launch(exec_: Any, stream: Any) -> None:
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))


def build(flag: int, out: int) -> tuple[Any, Any, Any]:
    """(graph, first node, second node): flag := 1; then wait flag == 1, out := 64-bit value,
    flush."""
    graph = check(cuda.cuGraphCreate(0))
    first = check(cuda.cuGraphAddBatchMemOpNode(graph, None, 0, node_params(write32(flag, 1))))
    second = check(cuda.cuGraphAddBatchMemOpNode(
        graph, [first], 1, node_params(wait32(flag, 1), write64(out, 0x1122334455667788), *flushes())
    ))  # fmt: skip
    return graph, first, second


def test_writes_and_waits_run_at_every_launch(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    mem = check(cuda.cuMemAlloc(64))
    flag, out = int(mem), int(mem) + 8
    graph, first, second = build(flag, out)
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    for _ in range(2):
        check(cuda.cuMemsetD8(mem, 0, 64))
        launch(exec_, stream)
        assert u32(flag) == 1 and u64(out) == 0x1122334455667788
    # the node reads back as it was set
    got = check(cuda.cuGraphBatchMemOpNodeGetParams(second))
    expected = [1, 5] + [3] * len(flushes())
    assert got.count == len(expected)
    assert [int(m.operation) for m in got.paramArray] == expected
    assert int(got.paramArray[0].waitValue.address) == flag
    assert int(got.paramArray[1].writeValue.value64) == 0x1122334455667788
    assert int(got.paramArray[0].waitValue.flags) == int(WAIT_EQ)
    assert (
        check(cuda.cuGraphNodeGetType(second))
        == cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
    )
    # a clone runs the same operations
    clone = check(cuda.cuGraphClone(graph))
    check(cuda.cuMemsetD8(mem, 0, 64))
    cloned = check(cuda.cuGraphInstantiate(clone, 0))
    launch(cloned, stream)
    assert u64(out) == 0x1122334455667788
    for e in (exec_, cloned):
        check(cuda.cuGraphExecDestroy(e))
    for g in (graph, clone):
        check(cuda.cuGraphDestroy(g))
    check(cuda.cuMemFree(mem))


def test_node_and_exec_parameters_change(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    mem = check(cuda.cuMemAlloc(64))
    flag, out = int(mem), int(mem) + 8
    graph, first, second = build(flag, out)
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    # the exec's node: a new value and address (allowed)
    check(cuda.cuGraphExecBatchMemOpNodeSetParams(exec_, first, node_params(write32(flag + 4, 1))))
    check(cuda.cuGraphExecBatchMemOpNodeSetParams(exec_, second, node_params(
        wait32(flag + 4, 1), write64(out, 7), *flushes())))  # fmt: skip
    check(cuda.cuMemsetD8(mem, 0, 64))
    launch(exec_, stream)
    assert (u32(flag), u32(flag, 1), u64(out)) == (0, 1, 7)
    # the graph's node is unchanged by the exec's
    assert (
        int(check(cuda.cuGraphBatchMemOpNodeGetParams(first)).paramArray[0].writeValue.address)
        == flag
    )
    # what an exec cannot change: the count, an operation's type
    assert cuda.cuGraphExecBatchMemOpNodeSetParams(
        exec_, first, node_params(write32(flag, 1), write32(flag, 2))
    ) == (INVALID,)
    assert "count cannot change" in cricket_client.last_error_message()
    assert cuda.cuGraphExecBatchMemOpNodeSetParams(exec_, first, node_params(write64(out, 1))) == (
        INVALID,
    )
    assert "types cannot change" in cricket_client.last_error_message()
    # the graph's node takes anything valid; a new exec runs it
    check(
        cuda.cuGraphBatchMemOpNodeSetParams(
            first, node_params(write32(flag, 1), write32(flag + 4, 9))
        )
    )
    again = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuMemsetD8(mem, 0, 64))
    launch(again, stream)
    assert (u32(flag), u32(flag, 1), u64(out)) == (1, 9, 0x1122334455667788)
    for e in (exec_, again):
        check(cuda.cuGraphExecDestroy(e))
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuMemFree(mem))


def test_the_polymorphic_calls_and_add_node_v3(session: cricket_client.Connection) -> None:
    stream = check(cuda.cuStreamCreate(0))
    mem = check(cuda.cuMemAlloc(16))
    graph = check(cuda.cuGraphCreate(0))
    p = cuda.CUgraphNodeParams()
    p.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
    p.memOp = node_params(write32(int(mem), 5))
    first = check(cuda.cuGraphAddNode(graph, None, None, 0, p))
    p.memOp = node_params(write32(int(mem) + 4, 6))
    second = check(cuda.cuGraphAddNode_v3(graph, [first], [cuda.CUgraphEdgeData()], 1, p))
    got = check(cuda.cuGraphNodeGetParams(second))
    assert got.type == cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
    assert int(got.memOp.paramArray[0].writeValue.value) == 6
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuMemsetD8(mem, 0, 16))
    launch(exec_, stream)
    assert (u32(int(mem)), u32(int(mem), 1)) == (5, 6)
    # edge data other than default edges is refused naming the call
    port = cuda.CUgraphEdgeData()
    port.from_port = 1
    err, node = cuda.cuGraphAddNode_v3(graph, [first], [port], 1, p)
    assert (err, node) == (cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED, None)
    assert "cuGraphAddNode_v3" in cricket_client.last_error_message()
    check(cuda.cuGraphExecDestroy(exec_))
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuMemFree(mem))


def test_operations_cuda_refuses(session: cricket_client.Connection) -> None:
    mem = check(cuda.cuMemAlloc(16))
    graph = check(cuda.cuGraphCreate(0))
    cases = [
        (node_params(), "count is 0"),
        (node_params(write32(int(mem) + 2, 1)), "not 4-byte aligned"),
        (node_params(write32(int(mem) + 4096, 1)), ""),  # outside the session's memory
    ]
    for params, why in cases:
        assert cuda.cuGraphAddBatchMemOpNode(graph, None, 0, params) == (INVALID, None)
        assert why in cricket_client.last_error_message()
    short = node_params(write32(int(mem), 1))
    short.count = 2
    assert cuda.cuGraphAddBatchMemOpNode(graph, None, 0, short) == (INVALID, None)
    flagged = node_params(write32(int(mem), 1))
    flagged.flags = 1
    assert cuda.cuGraphAddBatchMemOpNode(graph, None, 0, flagged) == (INVALID, None)
    check(cuda.cuGraphDestroy(graph))
    check(cuda.cuMemFree(mem))


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def test_graphs_and_execs_with_mem_op_nodes_come_back(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        stream = check(cuda.cuStreamCreate(0))
        mem = check(cuda.cuMemAlloc(64))
        flag, out = int(mem), int(mem) + 8
        graph, first, second = build(flag, out)
        exec_ = check(cuda.cuGraphInstantiate(graph, 0))
        check(cuda.cuGraphExecBatchMemOpNodeSetParams(exec_, second, node_params(
            wait32(flag, 1), write64(out, 42), *flushes())))  # fmt: skip

        cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        check(cuda.cuMemsetD8(mem, 0, 64))
        launch(exec_, stream)  # the exec as it was changed
        assert (u32(flag), u64(out)) == (1, 42)
        got = check(cuda.cuGraphBatchMemOpNodeGetParams(second))
        assert int(got.paramArray[1].writeValue.value64) == 0x1122334455667788  # the graph's
        again = check(cuda.cuGraphInstantiate(graph, 0))
        check(cuda.cuMemsetD8(mem, 0, 64))
        launch(again, stream)
        assert u64(out) == 0x1122334455667788
    finally:
        conn.close()
