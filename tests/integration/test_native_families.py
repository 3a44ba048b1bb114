"""The native door over the later driver families: memory pools, graphs (captured and built),
virtual memory, context flags, 2D copies and arrays, peers. The same `cuda.bindings.driver`
program through the native libcuda.so.1 and through the Python-level module swap gives the
same output (sim here; any backend)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import BACKEND, LIMIT, ROOT, Server, running_server

from cricket_client.native import library_path

HERE = Path(__file__).resolve().parent
CUBIN = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"
PROGRAM = HERE / "native_families_program.py"
RUN_LIMIT = 4 * LIMIT


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-families")) as srv:
        yield srv


def cricket_run(server: Server, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cricket_client.run", "--server", server.address, *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_LIMIT, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def through_both_doors(server: Server, program: Path | str, *args: str) -> list[str]:
    """Run a cuda-python program through the native library and through the Python-level
    door; both succeed with the same output, whose lines are returned."""
    native = cricket_run(server, "--", sys.executable, str(program), *args)
    assert native.returncode == 0, native.stdout + native.stderr
    python = cricket_run(server, str(program), *args)
    assert python.returncode == 0, python.stdout + python.stderr
    assert native.stdout == python.stdout
    return native.stdout.splitlines()


EXPECTED = [
    "pools supported 1",
    "device pool is default True",
    "release threshold 1048576",
    "pool copy ok True",
    "pool in use True",
    "own pool ok 7",
    "capturing CU_STREAM_CAPTURE_STATUS_ACTIVE",
    "capture info CU_STREAM_CAPTURE_STATUS_ACTIVE 1",
    "captured nodes 2",
    "captured graph ok 2560",
    "node type CU_GRAPH_NODE_TYPE_KERNEL",
    "root nodes 1",
    "built graph ok 1536",
    "granularity > 0 True",
    "access 3",
    "allocation on device True 1",
    "mapped copy ok True",
    "context flags 0",
    "cache config CU_FUNC_CACHE_PREFER_L1",
    "2D copy ok True",
    "array copy ok True",
    "launch with a priority attribute ok 1024",
    "dependencies 1 True",
    "edges 1",
    "node params 2 128 True",
    "exec params ok 1792",
    "exec update 0",
    "updated graph ok 1280",
    "array descriptor 256 CU_AD_FORMAT_UNSIGNED_INT32 1",
    "array device copies ok 1280",
    "stream priority -1",
    "dynamic shared memory > 0 True",
    "texture resource CU_RESOURCE_TYPE_LINEAR True 256",
    "texture desc CU_TR_FILTER_MODE_POINT 2 [0.5, 0.0, 0.0, 1.0]",
    "peer 0",
    "done",
]


def test_pools_graphs_vmm_flags_and_copies_run_the_same_through_both_doors(server: Server) -> None:
    native = cricket_run(server, "--", sys.executable, str(PROGRAM), str(CUBIN))
    assert native.returncode == 0, native.stdout + native.stderr
    python = cricket_run(server, str(PROGRAM), str(CUBIN))
    assert python.returncode == 0, python.stdout + python.stderr
    assert native.stdout == python.stdout
    assert native.stdout.splitlines() == EXPECTED
    assert "not supported remotely" not in native.stderr


def test_the_per_thread_forms_of_the_new_stream_calls(server: Server) -> None:
    env = {"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "1", "CRICKET_NATIVE_TRACE": "1"}
    done = cricket_run(server, "--", sys.executable, str(PROGRAM), str(CUBIN), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "-> cuMemAllocFromPoolAsync_ptsz" in done.stderr
    assert "-> cuGraphLaunch_ptsz" in done.stderr
    assert done.stdout.splitlines() == EXPECTED


CUDA_CORE_POOLS = textwrap.dedent(
    r"""
    import numpy as np
    from cuda.core import Buffer, Device
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    print("pools", dev.properties.memory_pools_supported)
    buf = dev.allocate(4096, stream=stream)
    x = np.arange(1024, dtype=np.uint32)
    buf.copy_from(Buffer.from_handle(x.ctypes.data, x.nbytes), stream=stream)
    out = np.zeros_like(x)
    buf.copy_to(Buffer.from_handle(out.ctypes.data, out.nbytes), stream=stream)
    stream.sync()
    print("resource", type(buf.memory_resource).__name__, "ok", bool((out == x).all()))
    buf.close(stream)
    stream.sync()
    """
)


def test_cuda_core_allocates_from_the_device_memory_pool(server: Server) -> None:
    """With pools remoted, cuda.core's default memory resource is the device's memory pool
    (cuMemAllocFromPoolAsync / cuMemFreeAsync), no longer the cuMemAlloc fallback."""
    pytest.importorskip("cuda.core")
    env = {"CRICKET_NATIVE_TRACE": "1"}
    done = cricket_run(server, "--", sys.executable, "-c", CUDA_CORE_POOLS, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["pools True", "resource DeviceMemoryResource ok True"]
    assert "not supported remotely" not in done.stderr


def test_a_link_runs_the_same_through_both_doors(server: Server) -> None:
    """cuLink*: the inputs are collected on the client and linked by the server's driver at
    cuLinkComplete (sim passes one cubin through and names what it cannot link)."""
    program = HERE / "native_link_program.py"
    native = cricket_run(server, "--", sys.executable, str(program), str(CUBIN))
    assert native.returncode == 0, native.stdout + native.stderr
    python = cricket_run(server, str(program), str(CUBIN))
    assert python.returncode == 0, python.stdout + python.stderr
    assert native.stdout == python.stdout
    if BACKEND != "sim":  # a real driver refuses the whole-program cubin, as locally (209),
        # though at cuLinkComplete: the inputs travel together (cuLinkAddData only collects)
        assert "complete CUDA_ERROR_NO_BINARY_FOR_GPU False" in native.stdout.splitlines()
        return
    assert native.stdout.splitlines() == [
        "create CUDA_SUCCESS",
        "add CUDA_SUCCESS",
        "complete CUDA_SUCCESS True",
        "load CUDA_SUCCESS",
        "launch CUDA_SUCCESS",
        "sum 96",
        "destroy CUDA_SUCCESS",
        "ptx CUDA_ERROR_NOT_SUPPORTED",
        "log cuLinkComplete: the sim backend links a single cubin only (it cannot compile or "
        "link device code); given: PTX 'a.ptx'",
    ]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_c_program_with_the_family_structs(server: Server, tmp_path: Path) -> None:
    """A C program built against the project's own declarations (cricket_cuda.h, -Wall
    -Werror) fills cuda.h's structs itself: pools, capture, a graph from node param structs,
    VMM, a 2D copy, a link."""
    from cricket_client.native.signatures import c_declarations

    (tmp_path / "cricket_cuda.h").write_text("#include <stddef.h>\n" + c_declarations() + "\n")
    binary = tmp_path / "native_families"
    subprocess.run(
        ["gcc", "-O1", "-Wall", "-Werror", "-I", str(tmp_path), "-o", str(binary),
         str(HERE / "native_families.c"), "-ldl"],
        check=True, timeout=LIMIT,
    )  # fmt: skip
    done = cricket_run(server, "--", str(binary), str(CUBIN))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "pool threshold 1048576",
        "capture status 1 dependencies 1",
        "captured nodes 2 sum 768",
        "built graph sum 2304",
        "mapped sum 512",
        "2D copy ok",
        "linked ok" if BACKEND == "sim" else "link refused: not relocatable",
    ]
