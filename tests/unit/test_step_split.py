"""The decoding-step benchmark's CPU accounting: a child's CPU is counted with its parent's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from bench.common import Row
from bench.step_split import StepSplit, process_tree_cpu_ns, replot, splits_of


def test_a_busy_grandchild_counts_as_the_servers_cpu() -> None:
    burn = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\nprint('done',flush=True)\ntime.sleep(60)"
    parent = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess,sys; subprocess.run([sys.executable,'-c',{burn!r}])"],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        before = process_tree_cpu_ns(parent.pid)
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == "done"  # the grandchild spent 0.3 s of CPU
        spent = process_tree_cpu_ns(parent.pid) - before
        assert spent >= 0.25e9
    finally:
        os.killpg(parent.pid, signal.SIGKILL)  # the grandchild too
        parent.wait()


def test_the_rest_is_what_neither_end_spent_on_a_cpu() -> None:
    assert StepSplit(100.0, 30.0, 20.0).rest_us == 50.0
    assert StepSplit(100.0, 70.0, 50.0).rest_us == 0.0  # both ends ran at once: nothing left


def test_a_report_gives_back_the_splits_it_was_written_from(tmp_path: Path) -> None:
    extra = {"client_cpu_us": 235.0, "server_cpu_us": 210.0, "rest_us": 0.0, "steps": 300}
    rows = [
        Row("step split: local cuda-python, wall per step", 104.0, "us",
            extra={"client_cpu_us": 107.0, "server_cpu_us": 0.0, "rest_us": 0.0, "steps": 300}),
        Row("step split: remote [cuda], spin off, wall per step", 334.0, "us",
            "local cuda-python step", 104.0, 3.2, "P4 <= 1.5", extra=extra),
        Row("step split: remote [cuda], spin off, wall per step in round trips", 334.0, "us",
            "raw Python socket 100-byte round trip, TCP", 23.0, 14.5),
        Row("step split: GPU per step (the step captured once, 300 launches queued, local)",
            21.5, "us"),
    ]  # fmt: skip
    splits, round_trip_us, steps, gpu_us = splits_of([asdict(r) for r in rows])
    assert splits == {
        "local cuda-python": StepSplit(104.0, 107.0, 0.0),
        "remote [cuda], spin off": StepSplit(334.0, 235.0, 210.0),
    }
    assert (round_trip_us, steps, gpu_us) == (23.0, 300, 21.5)
    report = tmp_path / "bench.json"
    report.write_text(json.dumps({"cpus": 16, "rows": [asdict(r) for r in rows]}))
    assert replot(report, tmp_path / "step.png").stat().st_size > 0


def test_an_older_report_takes_the_gpus_time_from_the_queued_graph_row() -> None:
    rows = [
        Row("step split: remote [cuda], spin off, wall per step", 273.0, "us",
            extra={"client_cpu_us": 196.0, "server_cpu_us": 130.0, "rest_us": 0.0, "steps": 2000}),
        Row("graphs [cuda]: decoding step captured once, 2000 launches (HtoD 4 KiB, 10 kernels, "
            "launches queued, one wait)", 0.044, "s", "local cuda-python, same graph", 0.041),
    ]  # fmt: skip
    gpu_us = splits_of([asdict(r) for r in rows])[3]
    assert gpu_us is not None and abs(gpu_us - 20.5) < 1e-9
