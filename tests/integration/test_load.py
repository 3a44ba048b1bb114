"""Load on sim: 32 concurrent clients doing mixed calls (alloc, copies, memset, launch, sync,
free), every result checked; p50/p99 per call printed, nothing timed. The CI default is
CRICKET_LOAD_CALLS (10^4) calls a client: 3.2 * 10^5 calls, about 35 s on two
cores; `python -m bench --only load` runs the same with its table.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from server_harness import running_server

from bench.load import load, report

CLIENTS = 32
CALLS = int(os.environ.get("CRICKET_LOAD_CALLS", "10000"))


@pytest.mark.slow
def test_concurrent_clients_get_every_result_right(tmp_path: Path) -> None:
    with running_server(tmp_path, "--log-level", "warning", backend="sim") as srv:
        result = load(srv.address, CLIENTS, CALLS, seed=1)
        assert "Traceback" not in srv.log()
    print("\n" + report(result))
    assert result.wrong == []
    assert result.calls >= CLIENTS * CALLS
    assert {"alloc", "htod", "dtoh", "memset", "launch", "sync", "free"} <= set(result.latencies)
