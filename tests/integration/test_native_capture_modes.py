"""Capture interaction modes through the native door: a C program's cuMemAlloc/cuMemFree during
a capture are refused (and the capture invalidated) exactly as through the Python client,
each pthread with its own mode (cuThreadExchangeStreamCaptureMode)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import LIMIT, Server, running_server
from test_native_families import cricket_run

from cricket_client.native import library_path

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-capture-modes")) as srv:
        yield srv


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_c_programs_allocations_follow_its_threads_capture_modes(
    server: Server, tmp_path: Path
) -> None:
    from cricket_client.native.signatures import c_declarations

    (tmp_path / "cricket_cuda.h").write_text("#include <stddef.h>\n" + c_declarations() + "\n")
    binary = tmp_path / "native_capture_modes"
    subprocess.run(
        ["gcc", "-O1", "-Wall", "-Werror", "-I", str(tmp_path), "-o", str(binary),
         str(HERE / "native_capture_modes.c"), "-ldl", "-lpthread"],
        check=True, timeout=LIMIT,
    )  # fmt: skip
    done = cricket_run(server, "--", str(binary))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "mode was 0",
        "global alloc CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        "global end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
        "mode was 0",
        "relaxed alloc CUDA_SUCCESS",
        "relaxed end captured",
        "other thread was 0, thread-local alloc CUDA_SUCCESS",
        "after thread-local end captured",
        "other thread was 0, global alloc CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        "after global end CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
        "no capture alloc CUDA_SUCCESS",
        "done",
    ]
