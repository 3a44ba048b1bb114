"""Timing helpers, the result table and the JSON report shared by every benchmark."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Row:
    """One measured quantity, its baseline from the same run, and their ratio."""

    name: str
    value: float
    unit: str
    baseline_name: str = ""
    baseline: float | None = None
    ratio: float | None = None
    target: str = ""
    extra: dict = field(default_factory=dict)


def median_latency_us(fn: Callable[[], object], iterations: int, warmup: int = 200) -> dict:
    """Run fn repeatedly; return median and p99 of one call in microseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    clock = time.perf_counter_ns
    for _ in range(iterations):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    samples.sort()
    return {
        "median_us": statistics.median(samples) / 1000.0,
        "p99_us": samples[int(len(samples) * 0.99) - 1] / 1000.0,
        "n": iterations,
    }


def rate_per_s(fn: Callable[[], int | None], seconds: float = 1.0) -> float:
    """Calls of fn per second over about `seconds` (fn may do a batch; it returns its count)."""
    done = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        done += int(fn() or 1)
        now = time.perf_counter()
        if now >= deadline:
            return done / (now - t0)


def print_table(rows: list[Row]) -> None:
    header = f"{'benchmark':<44} {'value':>12} {'unit':<7} {'baseline':>12}  {'ratio':>7}  target"
    print(header)
    print("-" * len(header))
    for r in rows:
        base = "" if r.baseline is None else f"{r.baseline:12.3f}"
        ratio = "" if r.ratio is None else f"{r.ratio:7.3f}"
        print(f"{r.name:<44} {r.value:12.3f} {r.unit:<7} {base:>12}  {ratio:>7}  {r.target}")
        if r.baseline_name:
            print(f"{'':<44}   baseline: {r.baseline_name}")


def write_report(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "host": platform.node(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rows": [asdict(r) for r in rows],
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
