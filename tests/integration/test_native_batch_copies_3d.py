"""cuMemcpy3DBatchAsync and cuMemcpy3DWithAttributesAsync answer the same through the native
library (CUDA_MEMCPY3D_BATCH_OP read from C) as through the Python-level door."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import Server, running_server
from test_native_families import through_both_doors

from cricket_client.native import library_path

PROGRAM = Path(__file__).resolve().with_name("native_batch_copies_3d_program.py")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-batch-copies-3d")) as srv:
        yield srv


def test_batched_3d_copies_through_both_doors(server: Server) -> None:
    pytest.importorskip("cuda.bindings")
    assert through_both_doors(server, PROGRAM) == [
        "3d batch round trip True",
        "zero extent CUDA_ERROR_INVALID_VALUE",
        "done",
    ]
