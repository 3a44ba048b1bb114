"""The behaviour suite: cuda-python driver programs run through cricket_client.

A cricket-server subprocess is started once for the session on a free loopback port, with the
backend named by CRICKET_TEST_BACKEND (default `sim`; `cuda` on the GPU machine) and the session
isolation named by CRICKET_TEST_ISOLATION (default `auto`: a worker process per connection on
cuda, threads on sim), and stopped at the end. Every test gets its own connection (a session on
the server) with the primary context of device 0 current, so tests cannot see each other's
resources. Expected values come from the
device itself (cuDeviceTotalMem, ...), never from one backend's constants.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from behaviour_helpers import ISOLATION, KERNELS, check, open_session
from server_harness import running_server

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart


@pytest.fixture(scope="session")
def server_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("server"), isolation=ISOLATION) as server:
        yield server.address


@pytest.fixture
def session(server_address: str) -> Iterator[cricket_client.Connection]:
    """This test's session, the default connection of cricket_client.driver."""
    conn = open_session(server_address, make_default=True)
    yield conn
    conn.close()


@pytest.fixture
def rt(server_address: str) -> Iterator[cricket_client.Connection]:
    """A runtime program's connection: the default one, with a clean last error for this thread."""
    conn = cricket_client.connect(server_address)
    cudart.cudaGetLastError()
    yield conn
    cudart.cudaGetLastError()
    conn.close()


@pytest.fixture
def other_session(server_address: str) -> Iterator[cricket_client.Connection]:
    """A second client at the same time (use it inside `with other_session.active():`)."""
    conn = open_session(server_address, make_default=False)
    yield conn
    conn.close()


@pytest.fixture
def kernels(session: cricket_client.Connection) -> Any:
    """The nvcc-built test kernels (tests/kernels/test_kernels.cu), loaded from the cubin."""
    return check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
