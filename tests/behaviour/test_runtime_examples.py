"""The cuda-python programs of examples/cuda_python run unmodified under cricket-run.

Each runs as `python -m cricket_client.run --server ADDR program.py` against the server under
test and must pass; on the GPU machine (CRICKET_TEST_BACKEND=cuda, where cuda-python has a local
driver) each also runs locally and must print the same stdout (timings go to stderr). One runs
on a client that has neither cuda-python nor numpy, only the standard library and xdrlib3.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from behaviour_helpers import BACKEND, ROOT
from server_harness import run_locally, run_under_cricket

EXAMPLES = ROOT / "examples" / "cuda_python"
PROGRAMS = [
    "vector_add_nvrtc.py",
    "clock_nvrtc.py",
    "simple_streams.py",
    "stream_ordered_allocation.py",
    "device_query.py",
    "vector_add_cubin.py",
]
NEEDS_NVRTC = {"vector_add_nvrtc.py", "clock_nvrtc.py", "simple_streams.py",
               "stream_ordered_allocation.py"}  # fmt: skip
TIMEOUT = 300


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def _remote(program: str, address: str) -> subprocess.CompletedProcess[str]:
    return run_under_cricket(address, EXAMPLES / program, timeout=TIMEOUT)


# What a remote client reads differently from a local one, by design: managed memory cannot be
# coherent across a network, so the device tells a remote program it has none (README).
REMOTE_ANSWERS = {"Device supports Managed Memory:": "No"}


def as_seen_remotely(local_stdout: str) -> str:
    """The local output with the values of REMOTE_ANSWERS' lines as a remote client reads."""
    lines = []
    for line in local_stdout.splitlines(keepends=True):
        for label, answer in REMOTE_ANSWERS.items():
            start = line.find(label)
            if start >= 0 and not line[:start].strip():
                value_at = start + len(label)
                value_at += len(line[value_at:]) - len(line[value_at:].lstrip())
                line = line[:value_at] + answer + "\n"
        lines.append(line)
    return "".join(lines)


@pytest.mark.parametrize("program", PROGRAMS)
def test_example_runs_unmodified_under_cricket_run(program: str, server_address: str) -> None:
    if program in NEEDS_NVRTC and importlib.util.find_spec("cuda.bindings.nvrtc") is None:
        pytest.skip("NVRTC (cuda-python) is not installed on this client")
    remote = _remote(program, server_address)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    lines = remote.stdout.strip().splitlines()
    assert lines[-1] in ("Test PASSED", "PASSED", "Result = PASS"), remote.stdout
    if BACKEND == "cuda":  # the GPU machine: the same program with local cuda-python
        local = run_locally(EXAMPLES / program, timeout=TIMEOUT)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == as_seen_remotely(local.stdout)


def test_a_client_without_cuda_python_runs_a_program(server_address: str, tmp_path: Path) -> None:
    """Only the standard library, xdrlib3 and the project on the path: no cuda-python, no
    numpy, no site-packages (python -S); the program loads a committed cubin."""
    site = tmp_path / "site"
    site.mkdir()
    xdrlib3 = importlib.util.find_spec("xdrlib3")
    assert xdrlib3 is not None and xdrlib3.origin is not None
    (site / "xdrlib3").symlink_to(Path(xdrlib3.origin).parent)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": f"{site}:{ROOT}"}
    probe = _run([sys.executable, "-S", "-c", "import cuda"], env)
    assert probe.returncode != 0 and "No module named 'cuda'" in probe.stderr
    result = run_under_cricket(
        server_address, EXAMPLES / "vector_add_cubin.py", env=env, python_options=["-S"]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "vector_add of 10000 floats from vector_add.sm_90.cubin: 0 wrong",
        "c[1] = 1.25, c[9999] = 12498.75",
        "Test PASSED",
    ]


def test_a_missing_remote_function_fails_naming_it(server_address: str, tmp_path: Path) -> None:
    program = tmp_path / "gl_interop.py"
    program.write_text(
        "from cuda.bindings import runtime\n"
        "print(runtime.cudaGetDeviceCount()[1] >= 1)\n"
        "runtime.cudaGraphicsGLRegisterBuffer(0, 0)\n"
    )
    result = run_under_cricket(server_address, program)
    assert result.returncode != 0
    assert result.stdout == "True\n"
    assert "cuda.bindings.runtime.cudaGraphicsGLRegisterBuffer is not supported remotely" in result.stderr
