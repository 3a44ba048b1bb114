"""examples/cuda_python/graph_memory_nodes.py and conditional_nodes.py (written for
cuda-python alone) run unmodified under cricket-run and print what they print locally; on the
GPU machine they also run with the local cuda-python and the outputs must be the same."""

from __future__ import annotations

import pytest
from behaviour_helpers import BACKEND, ROOT
from server_harness import run_locally, run_under_cricket

EXAMPLES = ROOT / "examples" / "cuda_python"
EXPECTED = {
    "graph_memory_nodes.py": [
        "Graph memory nodes: a scratch buffer of 262144 bytes owned by a graph",
        "explicit graph: 4 nodes (alloc, memset, memcpy, free)",
        "3 launches, the scratch buffer at one address, the result right: True",
        "graph memory held after the launches covers the buffer: True",
        "captured graph: 4 nodes: cudaGraphNodeTypeMemAlloc, cudaGraphNodeTypeMemset, "
        "cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeMemFree",
        "captured allocation used and freed in the graph: True",
        "Test PASSED",
    ],
    "conditional_nodes.py": [
        "Conditional nodes: IF and SWITCH bodies chosen by the handle's default value",
        "IF with value 1: ran the then body",
        "IF with value 0: ran the else body",
        "SWITCH with value 2: ran body 2",
        "SWITCH with value 5: ran no body",
        "Test PASSED",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_graph_node_examples_run_unmodified_under_cricket_run(
    server_address: str, name: str
) -> None:
    program = EXAMPLES / name
    remote = run_under_cricket(server_address, program)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert remote.stdout.splitlines() == EXPECTED[name]
    if BACKEND == "cuda":  # the GPU machine: the same program with local cuda-python
        local = run_locally(program)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout
