"""cuStreamBeginCaptureToGraph, cuStreamUpdateCaptureDependencies (both ABI forms) and
cuMemcpyBatchAsync answer the same through the native library as through the Python-level
door."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import Server, running_server
from test_native_families import through_both_doors

from cricket_client.native import library_path

PROGRAM = Path(__file__).resolve().with_name("native_capture_to_graph_program.py")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-capture-to-graph")) as srv:
        yield srv


def test_capture_to_a_graph_and_its_dependencies_through_both_doors(server: Server) -> None:
    pytest.importorskip("cuda.bindings")
    assert through_both_doors(server, PROGRAM) == [
        "capturing into its graph True 1 True",
        "added 2 True",
        "set 1 True",
        "ended with its graph True",
        "not capturing CUDA_ERROR_ILLEGAL_STATE",
        "batch copies True",
        "batch without attributes CUDA_ERROR_INVALID_VALUE",
        "node priority -1",
        "copied priority -1",
        "done",
    ]
