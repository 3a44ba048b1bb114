"""bench.framework_profile: a loop run unmodified under cricket-run is profiled at both ends
(here a cuda.bindings driver loop against a sim server, standing in for a framework's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import framework_profile
from bench.framework_calls import LOOPS

_DRIVER_LOOP = (
    "from cuda.bindings import driver as cu\n"
    "cu.cuInit(0)\n"
    "ctx = cu.cuDevicePrimaryCtxRetain(cu.cuDeviceGet(0)[1])[1]\n"
    "cu.cuCtxSetCurrent(ctx)",
    "cu.cuMemGetInfo()",
)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_each_loops_profiling_program_compiles(name: str) -> None:
    text = framework_profile.program_text(name)
    compile(text, f"loop_{name}.py", "exec")
    assert LOOPS[name][1] in text


def test_both_ends_are_profiled(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(LOOPS, "driver-mem-info", _DRIVER_LOOP)
    step_us = framework_profile.profile("driver-mem-info", 200, tmp_path, backend="sim")
    assert step_us > 0
    client = (tmp_path / "client.txt").read_text()
    server = (tmp_path / "server.txt").read_text()
    assert "driver-mem-info client: 200 calls" in client
    assert "cuMemGetInfo" in client  # the client's entry, on the program's thread
    assert "CU_MEM_GET_INFO" in server  # the server's handler of the same call
