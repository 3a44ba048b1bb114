"""The call-stats table: procedure numbers named by cricket.x, kinds added up, JSON written
where CRICKET_CALL_STATS points ("%p": the process id), nothing kept when it is unset."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cricket_client import call_stats
from rpc_spec import cricket_rpc as proto


def test_counts_are_named_and_added_up(tmp_path: Path) -> None:
    stats = call_stats.CallStats(proto)
    stats.rpc.sent[proto.CU_MEMCPY_DTOH] += 3
    stats.rpc.waited_for(proto.CU_MEMCPY_DTOH, 2_000_000)
    stats.rpc.waited_for(proto.CU_MEMCPY_DTOH, 1_000_000)
    stats.known["CU_DEVICE_GET_ATTRIBUTE"] += 7
    stats.gathered["CU_LAUNCH_KERNEL"] += 30
    rows = stats.table()
    assert rows["CU_MEMCPY_DTOH"] == {
        "sent": 3, "waited": 2, "wait_ms": 3.0, "known": 0, "gathered": 0
    }  # fmt: skip
    assert rows["CU_DEVICE_GET_ATTRIBUTE"]["known"] == 7
    assert rows["CU_LAUNCH_KERNEL"]["gathered"] == 30
    text = stats.report()
    assert text.splitlines()[2].split()[:3] == ["CU_MEMCPY_DTOH", "3", "2"]  # most waited first
    assert text.splitlines()[-1] == "total: 3 calls sent, 2 waited for (3.0 ms)"
    stats.write(str(tmp_path / "calls-%p.json"))
    written = json.loads((tmp_path / f"calls-{os.getpid()}.json").read_text())
    assert written["procedures"]["CU_MEMCPY_DTOH"]["waited"] == 2


@pytest.mark.parametrize("value", ["", "0"])
def test_nothing_is_kept_unless_asked(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(call_stats.ENV, value)
    assert call_stats.from_env(proto) is None
