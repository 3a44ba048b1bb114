"""examples/cuda_python/arrays.py (arrays, 2D/3D copies, texture and surface objects written
for cuda-python alone) runs unmodified under cricket-run against the server under test and
prints what it prints locally; on the GPU machine it also runs locally and must match."""

from __future__ import annotations

import subprocess
import sys

from behaviour_helpers import BACKEND, ROOT

PROGRAM = ROOT / "examples" / "cuda_python" / "arrays.py"
EXPECTED = [
    "2D array: 64 x 32 x 0, 32-bit channel kind 2, flags 2",
    "host -> array -> pitched device memory -> host: True",
    "window at column 10, row 5: first 410, last 657",
    "layer sums: [128, 256, 384, 512]",
    "texture object: resource type 0, same array True, filter mode 1, normalized 1",
    "surface object: same array True",
    "Test PASSED",
]


def test_arrays_example_runs_unmodified_under_cricket_run(server_address: str) -> None:
    remote = subprocess.run(
        [sys.executable, "-m", "cricket_client.run", "--server", server_address, str(PROGRAM)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert remote.stdout.splitlines() == EXPECTED
    if BACKEND == "cuda":  # the GPU machine: the same program with local cuda-python
        local = subprocess.run(
            [sys.executable, str(PROGRAM)], cwd=ROOT, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout
