"""`make demo`: the demo starts its own server, runs the example program and says OK."""

from __future__ import annotations

import os
import subprocess
import sys

from behaviour_helpers import BACKEND, ROOT


def test_demo_runs_and_checks_its_result() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--backend", BACKEND, "--n", "100000"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all elements correct" in proc.stdout
    assert proc.stdout.rstrip().endswith("demo: OK")


def test_example_program_connects_from_the_environment(server_address: str) -> None:
    env = dict(os.environ, REMOTE_GPU_ADDRESS=server_address, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "vector_add_driver.py"), "54321"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 54321 elements correct" in proc.stdout
