"""examples/cuda_python/graphs.py (CUDA graphs written for cuda-python alone) runs unmodified
under cricket-run and prints what it prints locally; on the GPU machine it also runs with the
local cuda-python and the two outputs must be the same (timings go to stderr)."""

from __future__ import annotations

import importlib.util

import pytest
from behaviour_helpers import BACKEND, ROOT
from server_harness import run_locally, run_under_cricket

PROGRAM = ROOT / "examples" / "cuda_python" / "graphs.py"
EXPECTED = [
    "CUDA graphs: 65536 floats, 50 launches of a captured step",
    "captured graph: 5 nodes",
    "every launch saw its own host input: True",
    "explicit graph: 2 edges, 1 root node",
    "y = 1 + 0.5 x on every element: True",
    "Test PASSED",
]


def test_graphs_example_runs_unmodified_under_cricket_run(server_address: str) -> None:
    if importlib.util.find_spec("cuda.bindings.nvrtc") is None:
        pytest.skip("NVRTC (cuda-python) is not installed on this client")
    remote = run_under_cricket(server_address, PROGRAM)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert remote.stdout.splitlines() == EXPECTED
    if BACKEND == "cuda":  # the GPU machine: the same program with local cuda-python
        local = run_locally(PROGRAM)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout
