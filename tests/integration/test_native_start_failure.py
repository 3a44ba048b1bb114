"""A native libcuda.so.1 whose Python side cannot start (the client not importable, or a library
built before the client's code changed) answers every driver call with an error, never with
the CUDA_SUCCESS that cffi's zeroed result would mean."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from server_harness import LIMIT

from cricket_client.native import library_path

PROGRAM = r"""
#include <dlfcn.h>
#include <stdio.h>
typedef int (*init_fn)(unsigned);
typedef int (*count_fn)(int *);
int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 3; }
    init_fn init = (init_fn)dlsym(lib, "cuInit");
    count_fn count = (count_fn)dlsym(lib, "cuDeviceGetCount");
    int n = -1;
    int r1 = init(0), r2 = count(&n);
    printf("cuInit %d\ncuDeviceGetCount %d %d\n", r1, r2, n);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_calls_answer_not_initialized_when_the_client_cannot_start(tmp_path: Path) -> None:
    source, binary = tmp_path / "start.c", tmp_path / "start"
    source.write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-o", str(binary), str(source), "-ldl"], check=True, timeout=LIMIT)
    # No CRICKET_NATIVE_PATH and an empty PYTHONPATH: the interpreter the library starts cannot
    # import the client, so its init code fails.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRICKET_", "PYTHON"))}
    env["PYTHONNOUSERSITE"] = "1"
    done = subprocess.run([str(binary), str(library_path())], capture_output=True, text=True,
                          timeout=LIMIT, env=env, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["cuInit 3", "cuDeviceGetCount 3 -1"]  # NOT_INITIALIZED
    assert "initialization code failed" in done.stderr  # the reason, as the library's Python said
