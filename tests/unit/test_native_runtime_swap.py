"""The native door's runtime for Python programs (cricket_client.native.runtime_swap): the
environment cricket-run gives a command, and the start-up module it puts first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cricket_client.native import native_environment, runtime_swap

LIBRARY = Path("/nonexistent/libcuda.so.1")  # native_environment only needs its folder


def _python_path(env: dict[str, str]) -> list[str]:
    return env.get("PYTHONPATH", "").split(os.pathsep)


def test_the_start_up_folder_comes_first_and_the_programs_path_stays() -> None:
    env = native_environment({"PYTHONPATH": "/mine"}, library=LIBRARY)
    assert _python_path(env) == [str(runtime_swap.STARTUP_DIR), "/mine"]
    again = native_environment(env, library=LIBRARY)  # cricket-run inside cricket-run
    assert _python_path(again) == [str(runtime_swap.STARTUP_DIR), "/mine"]


def test_cudart_keeps_cuda_pythons_runtime_and_a_wrong_value_is_named() -> None:
    env = native_environment({"CRICKET_NATIVE_RUNTIME": "cudart"}, library=LIBRARY)
    assert "PYTHONPATH" not in env
    with pytest.raises(ValueError, match="CRICKET_NATIVE_RUNTIME='fast'"):
        native_environment({"CRICKET_NATIVE_RUNTIME": "fast"}, library=LIBRARY)


def _start(tmp_path: Path, runtime: str, code: str) -> subprocess.CompletedProcess[str]:
    shadowed = tmp_path / "theirs"
    shadowed.mkdir()
    (shadowed / "sitecustomize.py").write_text("print('their sitecustomize ran')\n")
    env = native_environment({**os.environ, "CRICKET_NATIVE_RUNTIME": runtime}, library=LIBRARY)
    after = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(runtime_swap.STARTUP_DIR)]
    env["PYTHONPATH"] = os.pathsep.join([str(runtime_swap.STARTUP_DIR), str(shadowed), *after])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)  # fmt: skip


CHECK = (
    "import sys, cuda.bindings.runtime as rt; "
    "print(getattr(rt, '__cricket_remote__', 'cuda-python'), 'cricket_client.driver' in sys.modules)"
)


def test_the_runtime_is_the_clients_and_the_shadowed_sitecustomize_still_runs(tmp_path: Path) -> None:
    pytest.importorskip("cuda.bindings.runtime")
    done = _start(tmp_path, "python", CHECK)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["their sitecustomize ran", "cricket_client.runtime True"]


def test_with_cudart_the_runtime_is_cuda_pythons(tmp_path: Path) -> None:
    pytest.importorskip("cuda.bindings.runtime")
    done = _start(tmp_path, "cudart", CHECK)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["their sitecustomize ran", "cuda-python False"]


def test_nothing_of_the_client_loads_before_the_runtime_is_imported(tmp_path: Path) -> None:
    done = _start(tmp_path, "python", "import sys; print(sorted(m for m in sys.modules if m.startswith('cricket_')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["their sitecustomize ran", "[]"]
