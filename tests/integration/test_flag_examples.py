"""The examples of launch attributes, peer copies and the managed-memory fallback
(examples/cuda_python) run unmodified under cricket-run, against a sim server modelling two
devices, and print what is expected; on the GPU machine (CRICKET_TEST_BACKEND=cuda) each also
runs locally and must print the same stdout."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from server_harness import ROOT, Server, running_server

BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")
EXAMPLES = ROOT / "examples" / "cuda_python"
TIMEOUT = 300

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


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


@pytest.mark.parametrize("program", sorted(EXPECTED_ON_SIM))
def test_example_prints_what_is_expected(program: str, server: Server) -> None:
    remote = _run([sys.executable, "-m", "cricket_client.run", "--server", server.address,
                   str(EXAMPLES / program)])  # fmt: skip
    assert remote.returncode == 0, remote.stdout + remote.stderr
    if BACKEND == "sim":
        assert remote.stdout.splitlines() == EXPECTED_ON_SIM[program]
    else:  # the GPU machine: the same program with local cuda-python
        local = _run([sys.executable, str(EXAMPLES / program)])
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout


def test_the_managed_example_takes_its_fallback_path_remotely(server: Server) -> None:
    result = _run([sys.executable, "-m", "cricket_client.run", "--server", server.address,
                   str(EXAMPLES / "managed_fallback.py")])  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no managed memory: cudaMalloc and explicit copies" in result.stderr
