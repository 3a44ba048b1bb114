"""The examples of launch attributes, peer copies and the managed-memory fallback
(examples/cuda_python) run unmodified under cricket-run, against a sim server modelling two
devices, and print what is expected; on the GPU machine (CRICKET_TEST_BACKEND=cuda) each also
runs locally and must print the same stdout."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from server_harness import ROOT, Server, run_locally, run_under_cricket, running_server

BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")
EXAMPLES = ROOT / "examples" / "cuda_python"

EXPECTED_ON_SIM = {
    "launch_attributes.py": [
        "Cluster launch supported: Yes",
        "Cooperative launch supported: Yes",
        "Stream priorities: 0 (least) to -5 (greatest); stream priority -5",
        "Clusters of 2 blocks that can be active at once: some",
        "Dynamic shared memory with 4 blocks per SM: available",
        "cuLaunchKernelEx (cluster of 2 on a high-priority stream): 0 wrong of 16384",
        "cuLaunchKernelEx (cooperative): 0 wrong of 16384",
        "Test PASSED",
    ],
    "peer_copy.py": [
        "CUDA-capable device count: 2",
        "Peer access from GPU0 to GPU1: Yes",
        "Peer access from GPU1 to GPU0: Yes",
        "Peer access enabled both ways",
        "cudaMemcpyPeer GPU0 -> GPU1 -> GPU0 of 1048576 bytes: 0 wrong",
        "Test PASSED",
    ],
    "managed_fallback.py": [
        "Device 0: Cricket Sim Device",
        "vector_add of 10000 floats: 0 wrong; c[9999] = 14998.5",
        "Test PASSED",
    ],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    options = ("--sim-devices", "2") if BACKEND == "sim" else ()
    with running_server(tmp_path_factory.mktemp("server"), *options) as srv:
        yield srv


@pytest.mark.parametrize("program", sorted(EXPECTED_ON_SIM))
def test_example_prints_what_is_expected(program: str, server: Server) -> None:
    remote = run_under_cricket(server.address, EXAMPLES / program)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    if BACKEND == "sim":
        assert remote.stdout.splitlines() == EXPECTED_ON_SIM[program]
    else:  # the GPU machine: the same program with local cuda-python
        local = run_locally(EXAMPLES / program)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout


def test_the_managed_example_takes_its_fallback_path_remotely(server: Server) -> None:
    result = run_under_cricket(server.address, EXAMPLES / "managed_fallback.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no managed memory: cudaMalloc and explicit copies" in result.stderr
