"""`python -m bench`: unknown benchmarks are refused, and the report is written after each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import __main__ as bench_main


def test_an_unknown_benchmark_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench_main.main(["--only", "xdr,nonesuch"])
    assert "nonesuch" in capsys.readouterr().err


def test_the_report_holds_the_rows_of_each_benchmark_run(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    assert bench_main.main(["--only", "xdr", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows and all(row["name"].startswith("xdr") for row in rows)
