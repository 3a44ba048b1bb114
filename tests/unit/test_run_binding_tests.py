"""tools/run_binding_tests.py reads pytest's JUnit reports into one outcome per test (a file
that failed to import as an error) and counts the tests that pass locally and not remotely."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import run_binding_tests

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="test_cuda" name="test_ok" time="0.1"/>
<testcase classname="test_cuda" name="test_bad[x]" time="0.1"><failure message="boom"/></testcase>
<testcase classname="test_cudart" name="test_skip" time="0"><skipped message="no"/></testcase>
<testcase classname="" name="test_kernelParams" time="0"><error message="import failed"/></testcase>
</testsuite></testsuites>
"""


def test_outcomes_come_from_the_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    report.write_text(REPORT)
    assert run_binding_tests.outcomes(report) == {
        "test_cuda::test_ok": "passed",
        "test_cuda::test_bad[x]": "failed",
        "test_cudart::test_skip": "skipped",
        "test_kernelParams": "error",
    }
    assert run_binding_tests.outcomes(tmp_path / "missing.xml") == {}


def test_compare_counts_what_passes_locally_only(capsys: pytest.CaptureFixture[str]) -> None:
    local = {"a::t1": "passed", "a::t2": "passed", "a::t3": "failed"}
    remote = {"a::t1": "passed", "a::t2": "failed", "a::t3": "passed"}
    assert run_binding_tests.compare(local, remote, True) == 1
    out = capsys.readouterr().out
    assert "pass in both: 1; pass locally only: 1; pass remotely only: 1" in out
    assert "local only: a::t2 (remote: failed)" in out
