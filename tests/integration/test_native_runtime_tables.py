"""The CUDA runtime's private driver tables through the native library (`cuGetExportTable`),
against a sim server: the slots the runtime calls answer as declared in
cricket_client.native.export_tables, in the order the runtime calls them, and a program built
with nvcc (static and shared runtime), unmodified, proves the driver to its runtime
(INTEGRITY_CHECK) and runs to its result: allocations, copies, a <<<>>> launch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import LIMIT, ROOT, Server, running_server
from test_native_door import cricket_run

from cricket_client.native import library_path
from cricket_client.native.export_tables import TRACED

HERE = Path(__file__).resolve().parent
FATBIN = ROOT / "tests" / "kernels" / "test_kernels.fatbin"
RUN_LIMIT = 4 * LIMIT
CUDA_HOME = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))


def _nvcc() -> str | None:
    return shutil.which("nvcc") or (str(CUDA_HOME / "bin" / "nvcc") if (CUDA_HOME / "bin" / "nvcc").exists() else None)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("tables")) as srv:
        yield srv


def test_the_table_slots_serve_modules_contexts_storage_and_refuse_the_unknown(server: Server) -> None:
    done = cricket_run(server, "--", sys.executable, str(HERE / "native_tables_program.py"), str(FATBIN))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for expected in (
        "cudart size 104",  # 13 pointers
        "primary context 0 True",
        "module from wrapper 0 True",
        "launch 0 True",  # vector_add of the module the wrapper's fatbin made
        "module from fatbin 0 True",
        "module ext1 0 True",
        "module ext1 with arguments 801",
        "bad wrapper 1",
        "cls put 0",
        "cls get 0 0xbeef",
        "cls get current 0 0xbeef",
        "cls delete 0 then get 400",
        "callback area True 1024 True",
        "thread context 0 True True",  # the calling thread's current context
        "context number 0 True",  # its cuCtxGetId
        "stream object null 0 0 0 True True True True",  # same object, cuStreamGetId's id
        "stream object legacy 0 0 0 True True True True",
        "stream object created 0 0 0 True True True True",
        "stream object of no context 400",
        "stream object id of no object 400",
        "module functions True True",  # each function once, the count answered
        "module functions of no module 0",
        "quiet refusal 801",
        "unknown slot 801",
        "unknown table 801",
        "done",
    ):
        assert expected in lines, (expected, done.stdout, done.stderr)
    assert "table CUDART_INTERFACE {6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9} slot 3 (unknown) called" in done.stderr
    assert "check_fn3" not in done.stderr  # refused, but not a warning: callers go on regardless
    assert "cuGetExportTable {00112233445566778899aabbccddeeff}" in done.stderr


def test_the_runtimes_storage_lookups_are_answered_in_the_library(server: Server) -> None:
    """The CUDA runtime looks its context state up (context-local storage, NULL context: the
    current one) before nearly every call: answered by the library in C, never reaching its
    Python side, and still exactly what was stored, deleted or never stored."""
    script = textwrap.dedent(
        """
        import ctypes
        from ctypes import CFUNCTYPE, POINTER, byref, c_int, c_void_p
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx, table = c_int(), c_void_p(), c_void_p()
        assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(byref(dev), 0) == 0
        assert cuda.cuDevicePrimaryCtxRetain(byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0
        uuid = bytes.fromhex("c693336e1121df11a8c368f355d89593")
        assert cuda.cuGetExportTable(byref(table), (ctypes.c_char * 16).from_buffer_copy(uuid)) == 0
        slots = (c_void_p * 3).from_address(table.value)
        put = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p)(slots[0])
        delete = CFUNCTYPE(c_int, c_void_p, c_void_p)(slots[1])
        get = CFUNCTYPE(c_int, POINTER(c_void_p), c_void_p, c_void_p)(slots[2])
        assert put(None, 0x77, 0x99, None) == 0 and put(ctx, 0x78, 0x98, None) == 0
        value = c_void_p()
        found = [(get(byref(value), None, 0x77), value.value) for _ in range(50)]
        print("current", set(found) == {(0, 0x99)})
        print("given", get(byref(value), ctx, 0x78), value.value == 0x98)
        print("not stored", get(byref(value), None, 0x79))
        assert delete(None, 0x77) == 0
        print("deleted", get(byref(value), None, 0x77))
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script, env={"CRICKET_NATIVE_TRACE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["current True", "given 0 True", "not stored 400", "deleted 400"]
    assert "slot 2 (get) called" not in done.stderr, done.stderr[-3000:]  # the trace: none dispatched


@pytest.fixture(scope="module")
def runtime_programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("needs nvcc (CUDA 12 or 13 toolkit) to build a CUDA runtime program")
    if not (CUDA_HOME / "lib64").is_dir():
        pytest.skip(f"needs the CUDA runtime libraries in {CUDA_HOME}/lib64")
    folder = tmp_path_factory.mktemp("runtime")
    built = {}
    for kind in ("static", "shared"):
        out = folder / f"program_{kind}"
        subprocess.run(
            [nvcc, "-arch=sm_90", f"-cudart={kind}", "-o", str(out), str(HERE / "native_runtime_program.cu")],
            check=True, capture_output=True, timeout=RUN_LIMIT,
        )  # fmt: skip
        built[kind] = out
    return built


@pytest.mark.parametrize("kind", ["static", "shared"])
def test_an_unmodified_runtime_program_runs_past_the_integrity_check_to_its_result(
    server: Server, runtime_programs: dict[str, Path], kind: str
) -> None:
    env = {"CRICKET_NATIVE_TRACE": "1", "LD_LIBRARY_PATH": str(CUDA_HOME / "lib64")}
    done = cricket_run(server, "--", str(runtime_programs[kind]), env=env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert lines[0] == "cudaGetDeviceCount: 0 (cudaSuccess)", done.stdout
    assert lines[-1] == "vector_add ok 1", done.stdout  # the kernel's sums came back
    called = re.findall(r"cricket: table (\w+) \{[0-9A-F-]+\} slot (\d+) \(\w+\) called", done.stderr)
    first_calls = list(dict.fromkeys((name, int(index)) for name, index in called))
    assert first_calls == list(TRACED), done.stderr
    # the runtime asked the driver to prove itself for its version, +1 and +2, and accepted
    versions = re.findall(r"table INTEGRITY_CHECK \{[0-9A-F-]+\} slot 1 \(integrity_check\) "
                          r"called \((0x[0-9a-f]+), 0x[0-9a-f]+, 0x[0-9a-f]+\)", done.stderr)  # fmt: skip
    first = int(versions[0], 16)
    assert [int(v, 16) for v in versions] == [first, first + 1, first + 2], done.stderr
    # every table it asked for was handed out: no id left unnamed
    assert "private CUDA runtime tables are not supported" not in done.stderr
