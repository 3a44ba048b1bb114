"""CRICKET_CALL_STATS in a C program through the native libcuda.so.1: the program ends without
finalizing the interpreter the library started, and the library's C exit handler still
writes its table (sim here; any backend)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import LIMIT, ROOT, Server, running_server

from cricket_client.native import library_path

PROGRAM = r"""
#include <dlfcn.h>
#include <stdio.h>
typedef int (*init_fn)(unsigned);
typedef int (*count_fn)(int *);
int main(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    init_fn init = (init_fn)dlsym(lib, "cuInit");
    count_fn count = (count_fn)dlsym(lib, "cuDeviceGetCount");
    int n = -1, r = init(0);
    for (int i = 0; i < 5; i++) r |= count(&n);
    printf("status %d devices %d\n", r, n);
    return r != 0;
}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-call-stats")) as srv:
        yield srv


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_c_program_writes_its_call_table_at_exit(server: Server, tmp_path: Path) -> None:
    source, binary = tmp_path / "count.c", tmp_path / "count"
    source.write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-Wall", "-Werror", "-o", str(binary), str(source), "-ldl"],
                   check=True, timeout=LIMIT)  # fmt: skip
    target = tmp_path / "calls-%p.json"
    done = subprocess.run(
        [sys.executable, "-m", "cricket_client.run", "--server", server.address, "--", str(binary)],
        capture_output=True, text=True, timeout=4 * LIMIT, cwd=ROOT,
        env={**os.environ, "CRICKET_CALL_STATS": str(target)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("status 0 devices ")
    (written,) = tmp_path.glob("calls-*.json")
    report = json.loads(written.read_text())
    count = report["procedures"]["CU_DEVICE_GET_COUNT"]
    assert (count["sent"], count["known"]) == (1, 4)  # asked once, then known
    assert report["procedures"]["CU_INIT"]["waited"] == 1
