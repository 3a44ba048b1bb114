"""cuda-python's own binding tests (test_cuda.py, test_kernelParams.py of cuda_bindings/tests)
through the native libcuda.so.1 pass at least as many tests as through the Python-level
module swap, on the `cuda` backend with the client's GPU hidden.

Set CRICKET_CUDA_PYTHON_TESTS to the folder holding those files (a checkout of cuda-python at
the installed cuda-bindings version, e.g. v13.3.1); the summaries print with -s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import LIMIT, Server, running_server

from cricket_server.backends.cuda import gpu_available

pytestmark = pytest.mark.gpu
FILES = ("test_cuda.py", "test_kernelParams.py")
FOLDER = os.environ.get("CRICKET_CUDA_PYTHON_TESTS", "")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not FOLDER or not all((Path(FOLDER) / f).exists() for f in FILES):
        pytest.skip("set CRICKET_CUDA_PYTHON_TESTS to cuda_bindings/tests of cuda-python")
    if not gpu_available():
        pytest.skip("no GPU answers: the cuda backend cannot be tested here")
    with running_server(tmp_path_factory.mktemp("cuda-python"), backend="cuda", isolation=None) as srv:
        yield srv


def _passed(summary: str) -> int:
    found = re.search(r"(\d+) passed", summary)
    return int(found.group(1)) if found else 0


def test_the_bindings_tests_pass_through_the_native_door_as_through_the_module_swap(
    server: Server,
) -> None:
    files = [str(Path(FOLDER) / f) for f in FILES]
    pytest_args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *files]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    base = [sys.executable, "-m", "cricket_client.run", "--server", server.address]
    native = subprocess.run([*base, "--", sys.executable, *pytest_args], capture_output=True,
                            text=True, timeout=30 * LIMIT, env=env, cwd=FOLDER)
    swapped = subprocess.run([*base, *pytest_args], capture_output=True, text=True,
                             timeout=30 * LIMIT, env=env, cwd=FOLDER)
    native_line = (native.stdout.strip().splitlines() or [""])[-1]
    swapped_line = (swapped.stdout.strip().splitlines() or [""])[-1]
    print(f"\nnative door: {native_line}\nmodule swap: {swapped_line}")
    assert _passed(native_line) >= _passed(swapped_line), native.stdout[-4000:]
