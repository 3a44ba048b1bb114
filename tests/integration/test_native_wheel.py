"""`pip install` from source builds the native libcuda.so.1 (setup.py's build_py hook loads the
native declarations by file, before the package's dependencies exist): a wheel built from the
sources holds the library for this Python and the generated native entries."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from server_harness import LIMIT, ROOT

from cricket_server.backends.cuda.fast_launch import HEADERS, SOURCES

_SKIP = shutil.ignore_patterns(".venv", ".git", "_lib", "__pycache__", "build", "dist", "*.egg-info",
                               ".pytest_cache", ".ruff_cache", ".mypy_cache", ".nvtests", ".whl*")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_wheel_built_from_the_sources_holds_the_native_library(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=_SKIP)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(tmp_path / "wheels")],
        capture_output=True, text=True, timeout=20 * LIMIT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "was not built" not in done.stderr, done.stderr
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert f"cricket_client/native/_lib/{tag}/libcuda.so.1" in names
    assert f"cricket_client/native/_lib/{tag}/libcuda.so.1.sources" in names  # what it was built from
    assert "cricket_client/native/_entries_generated.py" in names
    assert "cricket_client/native/startup/sitecustomize.py" in names  # the runtime of Python programs
    for path in (*SOURCES, *HEADERS):  # the server's C launch loop is built where it runs
        assert f"cricket_server/backends/cuda/{path.name}" in names
