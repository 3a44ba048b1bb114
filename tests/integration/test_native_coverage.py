"""Driver functions the Python client remotes are exported by the native library too (through
its generated entries): the same `cuda.bindings.driver` program gives the same output through
both doors, and the native door answers them itself, not with its NOT_SUPPORTED stub."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import ROOT, Server, running_server
from test_native_families import cricket_run

from cricket_client.native import library_path

PROGRAM = Path(__file__).resolve().with_name("native_ids_program.py")
CUBIN = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-coverage")) as srv:
        yield srv


def test_names_graph_ids_nodes_and_unshared_memory_through_both_doors(server: Server) -> None:
    pytest.importorskip("cuda.bindings")
    native = cricket_run(server, "--", sys.executable, str(PROGRAM), str(CUBIN))
    assert native.returncode == 0, native.stdout + native.stderr
    python = cricket_run(server, str(PROGRAM), str(CUBIN))
    assert python.returncode == 0, python.stdout + python.stderr
    assert native.stdout == python.stdout
    assert native.stdout.splitlines() == [
        "function name fill_u32",
        "graph id is a number True",
        "node's graph True",
        "local ids differ True",
        "tools id is a number True",
        "nodes after removal 1",
        "node types CU_GRAPH_NODE_TYPE_EVENT_RECORD CU_GRAPH_NODE_TYPE_WAIT_EVENT "
        "CU_GRAPH_NODE_TYPE_GRAPH",
        "memset params True 7 4 256 1",
        "nodes 5",
        "exec id is a number True",
        "managed CUDA_ERROR_NOT_SUPPORTED",
        "mapped CUDA_ERROR_INVALID_VALUE",
        "done",
    ]
    assert "(native libcuda)" not in native.stderr  # no stub answered


NODES_TAIL = Path(__file__).resolve().with_name("native_nodes_tail_program.py")


def test_polymorphic_nodes_graph_memory_conditionals_and_queries_through_both_doors(
    server: Server,
) -> None:
    """cuGraphAddNode's CUgraphNodeParams (and the fields CUDA writes back into it), graph
    memory and conditional nodes, node parameters read back, device resources and green contexts,
    batches of stream memory operations, peer 3D copies, enumerations, a library from a file,
    tensor maps, and the later queries, memsets and stream memory operations answer the same through the native library as through the
    Python-level door."""
    pytest.importorskip("cuda.bindings")
    native = cricket_run(server, "--", sys.executable, str(NODES_TAIL), str(CUBIN))
    assert native.returncode == 0, native.stdout + native.stderr
    python = cricket_run(server, str(NODES_TAIL), str(CUBIN))
    assert python.returncode == 0, python.stdout + python.stderr
    assert native.stdout == python.stdout
    assert [line for line in native.stdout.splitlines() if not line.startswith("tensor map")] == [
        "copy node params True True 16",
        "after launch [9, 9, 1, 1]",
        "node params set 8",
        "exec params set [9, 9, 5, 5]",
        "kernel node [4, 3, 2, 1, 4, 3, 2, 1]",
        "alloc dptr written back True",
        "alloc params True 4096 0",
        "free params True",
        "alloc.dptr written back True True",
        "graph memory used True",
        "conditional body True True",
        "api version True",
        "ctx id is a number True",
        "stream id is a number True",
        "stream ctx True",
        "stream device True",
        "function module True",
        "functions in module True",
        "memset 2D [3, 3, 3, 3] [3, 3, 3, 3]",
        "stream write value [77, 0, 0, 0]",
        "sm split True 0",
        "sm groups 2 [True, True] 1",
        "green context True",
        "green resource True",
        "context resource True",
        "green stream True",
        "stream ctx v2 True 0",
        "batch mem ops [13, 12, 11, 10, 9, 9, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1]",
        "peer 3D copy True",
        "enumerated functions True True",
        "library from file True True",
        "managed hints CUDA_ERROR_NOT_SUPPORTED CUDA_ERROR_NOT_SUPPORTED CUDA_ERROR_NOT_SUPPORTED",
        "host node CUDA_ERROR_NOT_SUPPORTED",
        "done",
    ]
    # tensor maps: encoded by a GPU's driver (sim answers NOT_SUPPORTED), the same either door
    lines = native.stdout.splitlines()
    assert [line for line in lines if line.startswith("tensor map")] in (
        ["tensor map CUDA_ERROR_NOT_SUPPORTED"],
        ["tensor map CUDA_SUCCESS", "tensor map address replaced True True"],
    )
    assert "(native libcuda)" not in native.stderr  # no stub answered
