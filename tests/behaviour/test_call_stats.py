"""CRICKET_CALL_STATS: a program run under cricket-run reports, per procedure, the calls it
sent, the replies it waited for, the answers known locally and the launches gathered; a
loop's one synchronizing read per step shows as one wait per step."""

from __future__ import annotations

import json
import os
from pathlib import Path

from behaviour_helpers import ROOT
from server_harness import run_under_cricket

PROGRAM = ROOT / "tests" / "behaviour" / "call_stats_program.py"
STEPS, LAUNCHES = 20, 3


def test_the_json_report_counts_one_wait_per_step(server_address: str, tmp_path: Path) -> None:
    target = tmp_path / "calls-%p.json"
    env = {**os.environ, "CRICKET_CALL_STATS": str(target)}
    done = run_under_cricket(server_address, PROGRAM, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"y[0] = {1 + 2 * STEPS * LAUNCHES:.1f}"
    (written,) = tmp_path.glob("calls-*.json")
    report = json.loads(written.read_text())
    assert written.name == f"calls-{report['pid']}.json"
    rows = report["procedures"]
    assert rows["CU_MEMCPY_DTOH"]["waited"] == STEPS
    assert rows["CU_MEMCPY_DTOH"]["sent"] == STEPS
    assert rows["CU_LAUNCH_KERNEL"]["gathered"] == STEPS * LAUNCHES
    assert rows["CU_MEMCPY_HTOD_ASYNC"]["waited"] == 0  # early copies: never waited for
    assert rows["CU_DEVICE_GET_ATTRIBUTE"]["known"] >= 4  # asked 5 times, sent once at most
    assert rows["CU_DEVICE_GET_ATTRIBUTE"]["sent"] + rows["CU_DEVICE_GET_ATTRIBUTE"]["known"] == 5
    waited = sum(row["waited"] for row in rows.values())
    assert waited < STEPS + 20  # setup's few round trips, then one per step


def test_the_table_goes_to_stderr_at_exit(server_address: str) -> None:
    env = {**os.environ, "CRICKET_CALL_STATS": "1"}
    done = run_under_cricket(server_address, PROGRAM, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    (dtoh,) = [line for line in lines if line.startswith("CU_MEMCPY_DTOH ")]
    assert dtoh.split()[1:3] == [str(STEPS), str(STEPS)]  # sent, waited
    assert any(line.startswith("total: ") for line in lines)
