"""The decoding-step benchmark's CPU accounting: a child's CPU is counted with its parent's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from bench.step_split import StepSplit, process_tree_cpu_ns


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
