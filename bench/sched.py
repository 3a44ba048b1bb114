"""How often threads blocked, from Linux's /proc: each thread's voluntary context switches
(it waited: for data, a lock, a condition), to tell a call served on one thread at each end
from one handed between threads.

A synchronous round trip served on one thread blocks that thread once (on its receive); a
hand-off to another thread blocks it once more, waiting for that thread, and wakes the other.
Preemptions by other work (involuntary switches) are not counted, so the figure does not
depend on how loaded the machine is, where latency does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

ThreadKey = tuple[int, int]  # (pid, tid)


def available() -> bool:
    return Path(f"/proc/{os.getpid()}/task/{os.getpid()}/status").exists()


def family(pid: int) -> list[int]:
    """`pid` and every process below it (children of any of its threads)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            found += family(int(child))
    return found


def blocks(pids: list[int]) -> dict[ThreadKey, tuple[int, str]]:
    """(voluntary context switches, name) of every thread of `pids` now (threads that ended
    are left out: a thread started per call shows as the waits of the thread that started it)."""
    out: dict[ThreadKey, tuple[int, str]] = {}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                status = (task / "status").read_text()
                name = (task / "comm").read_text().strip()
                count = int(status.split("\nvoluntary_ctxt_switches:", 1)[1].split()[0])
            except (OSError, IndexError, ValueError):
                continue
            out[(pid, int(task.name))] = (count, name)
    return out


def blocked(before: dict[ThreadKey, tuple[int, str]], after: dict[ThreadKey, tuple[int, str]]
        ) -> dict[ThreadKey, int]:  # fmt: skip
    """Times each thread blocked between two `blocks()`; threads that did not are left out (a
    thread started in between counts from zero)."""
    out = {}
    for key, (count, _name) in after.items():
        n = count - before.get(key, (0, ""))[0]
        if n:
            out[key] = n
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of `pids` so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def wait_quiet(pid: int, limit: float = 60.0, slice_s: float = 0.5, busy: float = 0.02) -> bool:
    """Wait until `pid` and its descendants use less than `busy` of a CPU over `slice_s`
    (a server of process isolation starts its next worker after a connection: measuring
    while that one imports would measure a machine with one core busy). False past `limit`."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = cpu_seconds(family(pid))
        time.sleep(slice_s)
        if cpu_seconds(family(pid)) - before <= busy * slice_s + 1e-9:
            return True
    return False
