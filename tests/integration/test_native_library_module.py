"""A library's module and device facts through both doors: the native libcuda.so.1 exports
cuLibraryGetModule, cuDeviceGetExecAffinitySupport and cuGreenCtxGetId through their
generated entries, and the same cuda-python program prints the same through it as through
the Python-level module swap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import ROOT, Server, running_server
from test_native_families import through_both_doors

from cricket_client.native import library_path

PROGRAM = Path(__file__).resolve().with_name("native_library_module_program.py")
CUBIN = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-library-module")) as srv:
        yield srv


def test_a_librarys_module_through_both_doors(server: Server) -> None:
    pytest.importorskip("cuda.bindings")
    assert through_both_doors(server, PROGRAM, str(CUBIN)) == [
        "same module True",
        "counter 24",
        "unload CUDA_ERROR_NOT_PERMITTED",
        "affinity support 0",
        "green id of none True",
        "done",
    ]
