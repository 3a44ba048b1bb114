"""examples/cuda_python/vmm.py and mempool.py (cuda-python programs that know nothing of this
project) run unmodified under cricket-run and print what they print on a GPU: the expected
output below, and on the GPU machine (CRICKET_TEST_BACKEND=cuda) the same as a local run."""

from __future__ import annotations

import pytest
from behaviour_helpers import BACKEND, ROOT
from server_harness import run_locally, run_under_cricket

EXAMPLES = ROOT / "examples" / "cuda_python"
EXPECTED = {
    "vmm.py": [
        "Vector addition in memory of the virtual memory management API",
        "Minimum allocation granularity: 2048 KiB",
        "Vectors of 1048576 floats; the result in 2 physical allocations of 2048 KiB mapped "
        "back to back",
        "Allocation type CU_MEM_ALLOCATION_TYPE_PINNED on device 0",
        "Access of device 0 to the second half: CU_MEM_ACCESS_FLAGS_PROT_READWRITE",
        "0 of 1048576 sums wrong; c[1048575] = 776.0",
        "Result = PASS",
    ],
    "mempool.py": [
        "Memory pools and stream-ordered allocation",
        "Release threshold of the default pool: 0xffffffffffffffff",
        "8 rounds of alloc, add, free in one stream: 0 of 262144 sums wrong",
        "Default pool after the frees: 0 bytes in use; high-water mark covers three vectors: "
        "True",
        "Created pool: 3 allocations of 6294528 bytes; at least that much in use: True; "
        "reserved covers it: True",
        "After the frees and a trim: 0 bytes in use",
        "Result = PASS",
    ],
}


@pytest.mark.parametrize("program", sorted(EXPECTED))
def test_example_prints_what_it_prints_on_a_gpu(program: str, server_address: str) -> None:
    remote = run_under_cricket(server_address, EXAMPLES / program)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert remote.stdout.splitlines() == EXPECTED[program]
    if BACKEND == "cuda":  # the GPU machine: the same program with local cuda-python
        local = run_locally(EXAMPLES / program)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout
