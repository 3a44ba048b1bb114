"""Reading and changing what a graph holds answers the same through the native library as
through the Python-level door (the native door's generated and hand-written entries)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import Server, running_server
from test_native_families import cricket_run

from cricket_client.native import library_path

PROGRAM = Path(__file__).resolve().with_name("native_graph_access_program.py")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-graph-access")) as srv:
        yield srv


def test_node_params_setters_dependents_and_exec_calls_through_both_doors(server: Server) -> None:
    pytest.importorskip("cuda.bindings")
    native = cricket_run(server, "--", sys.executable, str(PROGRAM))
    assert native.returncode == 0, native.stdout + native.stderr
    python = cricket_run(server, str(PROGRAM))
    assert python.returncode == 0, python.stdout + python.stderr
    assert native.stdout == python.stdout
    assert native.stdout.splitlines() == [
        "memset node 2 1 64 True",
        "copy node 1 64 True True",
        "record node 7 True",
        "child graph True 1",
        "dependents 1 True 0",
        "memset set 4",
        "copy set 32",
        "record event set True",
        "exec flags 2",
        "launched [4, 4, 0, 0]",
        "enabled 0 1",
        "copy disabled [0, 0, 0, 0]",
        "exec copy set [4, 4, 0, 0] [0, 0, 0, 0]",
        "dot True",
        "found in clone True",
        "exec child set True",
        "done",
    ]
    assert "(native libcuda)" not in native.stderr  # no stub answered
