"""examples/cuda_python/mipmaps.py (mipmapped and sparse arrays) and green_contexts.py
(device resources, green contexts and a kernel on a green context's stream), written for
cuda-python alone, run unmodified under cricket-run against the server under test and print
what they print locally; on the GPU machine they also run locally and must match."""

from __future__ import annotations

import importlib.util

import pytest
from behaviour_helpers import BACKEND, ROOT
from server_harness import run_locally, run_under_cricket

EXAMPLES = ROOT / "examples" / "cuda_python"
EXPECTED = {
    "mipmaps.py": [
        "sparse float4 1000 x 500, 10 levels: tiles 64 x 64 x 1, mip tail from level 3, "
        "196608 bytes",
        "level 0: 64 x 64, mean 2047.50, read back exactly: True",
        "level 1: 32 x 32, mean 2047.50, read back exactly: True",
        "level 2: 16 x 16, mean 2047.50, read back exactly: True",
        "level 3: 8 x 8, mean 2047.50, read back exactly: True",
        "level 4: 4 x 4, mean 2047.50, read back exactly: True",
        "level 5: 2 x 2, mean 2047.50, read back exactly: True",
        "level 6: 1 x 1, mean 2047.50, read back exactly: True",
        "texture object over the mipmapped array: resource type 1, same mipmapped array True",
        "driver: level 2 is 16 x 16, 1 channel",
        "Test PASSED",
    ],
    "green_contexts.py": [
        "SM resource of the device: all 132 SMs: True",
        "groups of at least 16 SMs it splits into: more than one: True",
        "split into 2 groups of at least 16 SMs: True; with the rest, every SM: True",
        "green context on the first group: its SMs True",
        "its stream belongs to it: True",
        "saxpy on the green context's stream: True",
        "Test PASSED",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_unmodified_under_cricket_run(server_address: str, name: str) -> None:
    if importlib.util.find_spec("cuda.bindings.nvrtc") is None:
        pytest.skip("NVRTC (cuda-python) is not installed on this client")
    program = EXAMPLES / name
    remote = run_under_cricket(server_address, program)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert remote.stdout.splitlines() == EXPECTED[name]
    if BACKEND == "cuda":  # the GPU machine: the same program with local cuda-python
        local = run_locally(program)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout
