"""A kernel node's launch attributes (cuGraphKernelNodeGetAttribute, SetAttribute,
CopyAttributes and the runtime forms): values set read back, a copy takes every attribute of
its source, clones and execs keep them, a graph with them runs, attributes holding host memory
are refused with the reason, and the attributes survive checkpoint, SIGKILL and
cricket-restart (and are replayed when set after the checkpoint)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

N = 1024
BLOCK = 256
KERNELS = Path(__file__).resolve().parents[1] / "kernels" / "test_kernels.sm_90.cubin"
ATTR = cuda.CUkernelNodeAttrID
PRIORITY = ATTR.CU_LAUNCH_ATTRIBUTE_PRIORITY
COOPERATIVE = ATTR.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
SYNC_DOMAIN = ATTR.CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN
CLUSTER = ATTR.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION


@pytest.fixture
def saxpy(kernels: Any) -> Any:
    return check(cuda.cuModuleGetFunction(kernels, b"saxpy"))


def kernel_node(graph: Any, saxpy: Any, dx: Any, dy: Any, deps: list[Any] | None = None) -> Any:
    p = cuda.CUDA_KERNEL_NODE_PARAMS()
    p.func = saxpy
    p.gridDimX, p.gridDimY, p.gridDimZ = N // BLOCK, 1, 1
    p.blockDimX, p.blockDimY, p.blockDimZ = BLOCK, 1, 1
    p.sharedMemBytes = 0
    p.kernelParams = ((2.0, dx, dy, N), (ctypes.c_float, None, None, ctypes.c_int))
    p.extra = 0
    return check(cuda.cuGraphAddKernelNode(graph, deps, len(deps or []), p))


def value(**fields: Any) -> Any:
    v = cuda.CUkernelNodeAttrValue()
    for name, x in fields.items():
        setattr(v, name, x)
    return v


def ones(n: int = N) -> Any:
    ptr = check(cuda.cuMemAlloc(4 * n))
    check(cuda.cuMemcpyHtoD(ptr, np.ones(n, dtype=np.float32), 4 * n))
    return ptr


def test_attributes_set_read_back(session: cricket_client.Connection, saxpy: Any) -> None:
    graph = check(cuda.cuGraphCreate(0))
    node = kernel_node(graph, saxpy, ones(), ones())
    check(cuda.cuGraphKernelNodeSetAttribute(node, PRIORITY, value(priority=-1)))
    check(cuda.cuGraphKernelNodeSetAttribute(node, COOPERATIVE, value(cooperative=1)))
    domain = cuda.CUlaunchMemSyncDomain.CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
    check(cuda.cuGraphKernelNodeSetAttribute(node, SYNC_DOMAIN, value(memSyncDomain=domain)))
    assert check(cuda.cuGraphKernelNodeGetAttribute(node, PRIORITY)).priority == -1
    assert check(cuda.cuGraphKernelNodeGetAttribute(node, COOPERATIVE)).cooperative == 1
    got = check(cuda.cuGraphKernelNodeGetAttribute(node, SYNC_DOMAIN)).memSyncDomain
    assert int(got) == int(domain)
    check(cuda.cuGraphKernelNodeSetAttribute(node, PRIORITY, value(priority=0)))
    assert check(cuda.cuGraphKernelNodeGetAttribute(node, PRIORITY)).priority == 0


def test_a_copy_takes_every_attribute_of_its_source(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    graph = check(cuda.cuGraphCreate(0))
    dx, dy = ones(), ones()
    src, dst, fresh = (kernel_node(graph, saxpy, dx, dy) for _ in range(3))
    default = check(cuda.cuGraphKernelNodeGetAttribute(fresh, COOPERATIVE)).cooperative
    check(cuda.cuGraphKernelNodeSetAttribute(src, PRIORITY, value(priority=-1)))
    check(cuda.cuGraphKernelNodeSetAttribute(dst, COOPERATIVE, value(cooperative=1)))
    check(cuda.cuGraphKernelNodeCopyAttributes(dst, src))
    assert check(cuda.cuGraphKernelNodeGetAttribute(dst, PRIORITY)).priority == -1
    # what src never set is src's default, on dst too
    assert check(cuda.cuGraphKernelNodeGetAttribute(dst, COOPERATIVE)).cooperative == default
    assert check(cuda.cuGraphKernelNodeGetAttribute(src, PRIORITY)).priority == -1


def test_clones_keep_them_and_a_graph_with_them_runs(
    session: cricket_client.Connection, saxpy: Any
) -> None:
    graph = check(cuda.cuGraphCreate(0))
    dx, dy = ones(), ones()
    first = kernel_node(graph, saxpy, dx, dy)
    second = kernel_node(graph, saxpy, dx, dy, [first])
    check(cuda.cuGraphKernelNodeSetAttribute(first, PRIORITY, value(priority=-1)))
    check(cuda.cuGraphKernelNodeSetAttribute(second, COOPERATIVE, value(cooperative=1)))
    clone = check(cuda.cuGraphClone(graph))
    twin = check(cuda.cuGraphNodeFindInClone(first, clone))
    assert check(cuda.cuGraphKernelNodeGetAttribute(twin, PRIORITY)).priority == -1
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuGraphLaunch(exec_, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert np.all(np.frombuffer(read(dy, 4 * N), dtype=np.float32) == 5.0)  # 1 + 2 + 2


def test_clusters_on_a_kernel_node(session: cricket_client.Connection, saxpy: Any) -> None:
    graph = check(cuda.cuGraphCreate(0))
    dy = ones()
    node = kernel_node(graph, saxpy, ones(), dy)
    v = cuda.CUkernelNodeAttrValue()
    v.clusterDim.x, v.clusterDim.y, v.clusterDim.z = 2, 1, 1
    check(cuda.cuGraphKernelNodeSetAttribute(node, CLUSTER, v))
    got = check(cuda.cuGraphKernelNodeGetAttribute(node, CLUSTER)).clusterDim
    assert (got.x, got.y, got.z) == (2, 1, 1)
    exec_ = check(cuda.cuGraphInstantiate(graph, 0))
    check(cuda.cuGraphLaunch(exec_, 0))
    check(cuda.cuCtxSynchronize())
    assert np.all(np.frombuffer(read(dy, 4 * N), dtype=np.float32) == 3.0)


def test_refused_nodes_and_attributes(session: cricket_client.Connection, saxpy: Any) -> None:
    graph = check(cuda.cuGraphCreate(0))
    node = kernel_node(graph, saxpy, ones(), ones())
    ms = cuda.CUDA_MEMSET_NODE_PARAMS()
    ms.dst, ms.value, ms.elementSize, ms.width, ms.height = ones(), 0, 4, N, 1
    memset = check(cuda.cuGraphAddMemsetNode(graph, None, 0, ms, None))
    err, _ = cuda.cuGraphKernelNodeGetAttribute(memset, PRIORITY)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    assert "not a kernel node" in cricket_client.last_error_message()
    err = cuda.cuGraphKernelNodeCopyAttributes(memset, node)[0]
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    window = ATTR.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
    err = cuda.cuGraphKernelNodeSetAttribute(node, window, cuda.CUkernelNodeAttrValue())[0]
    assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED
    assert "ACCESS_POLICY_WINDOW" in cricket_client.last_error_message()


def test_runtime_forms(rt: cricket_client.Connection, kernels: Any) -> None:
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    graph = check(cudart.cudaGraphCreate(0))
    a, b = kernel_node(graph, saxpy, ones(), ones()), kernel_node(graph, saxpy, ones(), ones())
    attr = cudart.cudaLaunchAttributeID.cudaLaunchAttributePriority
    v = cudart.cudaKernelNodeAttrValue()
    v.priority = -1
    assert cudart.cudaGraphKernelNodeSetAttribute(a, attr, v)[0] == cudart.cudaError_t.cudaSuccess
    err, got = cudart.cudaGraphKernelNodeGetAttribute(a, attr)
    assert err == cudart.cudaError_t.cudaSuccess and got.priority == -1
    assert cudart.cudaGraphKernelNodeCopyAttributes(b, a)[0] == cudart.cudaError_t.cudaSuccess
    assert cudart.cudaGraphKernelNodeGetAttribute(b, attr)[1].priority == -1


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


@pytest.mark.parametrize("after", [False, True], ids=["restored", "replayed"])
def test_attributes_come_back_after_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, after: bool
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        module = check(cuda.cuModuleLoadData(KERNELS.read_bytes()))
        saxpy = check(cuda.cuModuleGetFunction(module, b"saxpy"))
        if after:
            cricket_client.checkpoint(tmp_path / "ckpt")
        graph = check(cuda.cuGraphCreate(0))
        dx, dy = ones(), ones()
        node = kernel_node(graph, saxpy, dx, dy)
        other = kernel_node(graph, saxpy, dx, dy, [node])
        check(cuda.cuGraphKernelNodeSetAttribute(node, PRIORITY, value(priority=-1)))
        check(cuda.cuGraphKernelNodeCopyAttributes(other, node))
        exec_ = check(cuda.cuGraphInstantiate(graph, 0))
        if not after:
            cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        for n in (node, other):
            assert check(cuda.cuGraphKernelNodeGetAttribute(n, PRIORITY)).priority == -1
        check(cuda.cuGraphLaunch(exec_, 0))
        check(cuda.cuCtxSynchronize())
        assert np.all(np.frombuffer(read(dy, 4 * N), dtype=np.float32) == 5.0)
    finally:
        conn.close()
