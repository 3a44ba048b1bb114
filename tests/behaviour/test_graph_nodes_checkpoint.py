"""Graph memory and conditional nodes across checkpoint, SIGKILL and cricket-restart: the
allocation of an alloc node is back at the same address with its bytes, execs relaunch with
the same results, conditional handles and body graphs come back, and the graph memory
attributes count the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from behaviour_helpers import check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda

N = 1024
ATTR = cuda.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def memset_node(graph: object, dst: int, value: int, deps: list[object]) -> object:
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst, ms.value, ms.elementSize, ms.width, ms.height = dst, value, 4, N, 1
    ctx = check(cuda.cuCtxGetCurrent())
    return check(cuda.cuGraphAddMemsetNode(graph, deps, len(deps), ms, ctx))


def copy_node(graph: object, dst: int, src: int, deps: list[object]) -> object:
    cp = cuda.CUDA_MEMCPY3D()
    cp.srcMemoryType = cp.dstMemoryType = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
    cp.srcDevice, cp.dstDevice = src, dst
    cp.WidthInBytes, cp.Height, cp.Depth = 4 * N, 1, 1
    ctx = check(cuda.cuCtxGetCurrent())
    return check(cuda.cuGraphAddMemcpyNode(graph, deps, len(deps), cp, ctx))


def words(ptr: int) -> np.ndarray:
    return np.frombuffer(read(ptr, 4 * N), dtype=np.uint32)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_memory_and_conditional_nodes_come_back_at_the_same_addresses(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    server = start_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    try:
        stream = check(cuda.cuStreamCreate(0))
        out = check(cuda.cuMemAlloc(4 * N))
        # an allocation the graph keeps (no free node): alloc -> memset 5 -> copy to out
        graph = check(cuda.cuGraphCreate(0))
        params = cuda.CUDA_MEM_ALLOC_NODE_PARAMS()
        params.poolProps.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        params.poolProps.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        params.bytesize = 4 * N
        alloc = check(cuda.cuGraphAddMemAllocNode(graph, None, 0, params))
        dptr = int(params.dptr)
        fill = memset_node(graph, dptr, 5, [alloc])
        # then an IF (default 1) whose body sets out to 9 after the copy
        copied = copy_node(graph, out, dptr, [fill])
        ctx = check(cuda.cuCtxGetCurrent())
        handle = check(cuda.cuGraphConditionalHandleCreate(
            graph, ctx, 1, cuda.CU_GRAPH_COND_ASSIGN_DEFAULT))  # fmt: skip
        cond = cuda.CUgraphNodeParams()
        cond.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
        cond.conditional.handle, cond.conditional.size = handle, 1
        cond.conditional.type = cuda.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_IF
        check(cuda.cuGraphAddNode(graph, [copied], None, 1, cond))
        (body,) = cond.conditional.phGraph_out
        memset_node(body, out, 9, [])
        exec_ = check(cuda.cuGraphInstantiate(graph, 0))
        check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        assert np.all(words(dptr) == 5) and np.all(words(out) == 9)
        used = int(check(cuda.cuDeviceGetGraphMemAttribute(0, ATTR)))

        cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt", isolation=isolation)
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        # the allocation is where it was, with its bytes; the node says the same address
        assert np.all(words(dptr) == 5)
        assert int(check(cuda.cuGraphMemAllocNodeGetParams(alloc)).dptr) == dptr
        assert int(check(cuda.cuDeviceGetGraphMemAttribute(0, ATTR))) == used
        # the exec relaunches with the same results
        check(cuda.cuMemsetD32(dptr, 0, N))
        check(cuda.cuMemsetD32(out, 0, N))
        check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        assert np.all(words(dptr) == 5) and np.all(words(out) == 9)
        # the body graph and the handle are back: a new node in the body, a new exec
        check(cuda.cuGraphExecDestroy(exec_))
        (bnode,), count = check(cuda.cuGraphGetNodes(body, 1))
        assert count == 1
        memset_node(body, out, 12, [bnode])
        again = check(cuda.cuGraphInstantiate(graph, 0))
        check(cuda.cuGraphLaunch(again, stream))
        check(cuda.cuStreamSynchronize(stream))
        assert np.all(words(out) == 12)
        cond2 = cuda.CUgraphNodeParams()
        cond2.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
        cond2.conditional.handle, cond2.conditional.size = handle, 1
        err, _ = cuda.cuGraphAddNode(graph, None, None, 0, cond2)
        assert err == cuda.CUresult.CUDA_SUCCESS  # the handle is known again
    finally:
        conn.close()


def test_memory_and_conditional_nodes_made_after_the_checkpoint_are_replayed(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a crash, the calls since the checkpoint are replayed: the alloc node gets the same
    address, the conditional handle the same value, the body graph the same handle."""
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        stream = check(cuda.cuStreamCreate(0))
        out = check(cuda.cuMemAlloc(4 * N))
        cricket_client.checkpoint(tmp_path / "ckpt")

        graph = check(cuda.cuGraphCreate(0))
        params = cuda.CUDA_MEM_ALLOC_NODE_PARAMS()
        params.poolProps.location.type = cuda.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        params.poolProps.allocType = cuda.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        params.bytesize = 4 * N
        alloc = check(cuda.cuGraphAddMemAllocNode(graph, None, 0, params))
        fill = memset_node(graph, int(params.dptr), 3, [alloc])
        copied = copy_node(graph, out, int(params.dptr), [fill])
        ctx = check(cuda.cuCtxGetCurrent())
        handle = check(cuda.cuGraphConditionalHandleCreate(
            graph, ctx, 0, cuda.CU_GRAPH_COND_ASSIGN_DEFAULT))  # fmt: skip
        cond = cuda.CUgraphNodeParams()
        cond.type = cuda.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
        cond.conditional.handle, cond.conditional.size = handle, 2
        cond.conditional.type = cuda.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_IF
        check(cuda.cuGraphAddNode(graph, [copied], None, 1, cond))
        then, otherwise = cond.conditional.phGraph_out
        memset_node(then, out, 8, [])
        memset_node(otherwise, out, 4, [])
        exec_ = check(cuda.cuGraphInstantiate(graph, 0))
        check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        check(cuda.cuStreamSynchronize(stream))  # reconnects and replays
        assert int(check(cuda.cuGraphMemAllocNodeGetParams(alloc)).dptr) == int(params.dptr)
        assert np.all(words(int(params.dptr)) == 3) and np.all(words(out) == 4)
        assert check(cuda.cuGraphGetNodes(otherwise))[1] == 1
        check(cuda.cuMemsetD32(out, 0, N))
        check(cuda.cuGraphLaunch(exec_, stream))
        check(cuda.cuStreamSynchronize(stream))
        assert np.all(words(out) == 4)
    finally:
        conn.close()
