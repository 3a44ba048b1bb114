"""examples/cuda_python/arrays.py (arrays, 2D/3D copies, texture and surface objects and a
kernel fetching through a texture object, written for cuda-python alone) runs unmodified under cricket-run against the server under test and
prints what it prints locally; on the GPU machine it also runs locally and must match."""

from __future__ import annotations

import importlib.util

import pytest
from behaviour_helpers import BACKEND, ROOT
from server_harness import run_locally, run_under_cricket

PROGRAM = ROOT / "examples" / "cuda_python" / "arrays.py"
EXPECTED = [
    "2D array: 64 x 32 x 0, 32-bit channel kind 2, flags 2",
    "host -> array -> pitched device memory -> host: True",
    "window at column 10, row 5: first 410, last 657",
    "layer sums: [128, 256, 384, 512]",
    "texture object: resource type 0, same array True, filter mode 0, normalized 0",
    "a kernel fetched every texel through the texture object: True",
    "surface object: same array True",
    "Test PASSED",
]


def test_arrays_example_runs_unmodified_under_cricket_run(server_address: str) -> None:
    if importlib.util.find_spec("cuda.bindings.nvrtc") is None:
        pytest.skip("NVRTC (cuda-python) is not installed on this client")
    remote = run_under_cricket(server_address, PROGRAM)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert remote.stdout.splitlines() == EXPECTED
    if BACKEND == "cuda":  # the GPU machine: the same program with local cuda-python
        local = run_locally(PROGRAM)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout
