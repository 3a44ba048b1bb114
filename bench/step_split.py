"""Where the time of one decoding step goes (issue: hide the network), remote against local.

    python -m bench --only step [--quick]      (also draws <out>-step.png)

The step is `bench.driver_remote`'s decoding loop (a 4 KiB HtoD, 10 launches, a 4-byte DtoH
that the next step waits for). It runs on a fresh cricket-server with spinning off, and the
CPU time of each end is read from the kernel's scheduler statistics
(/proc/PID/task/TID/schedstat: nanoseconds on a CPU) over the whole loop:

- client CPU: every thread of this process (encoding, system calls, the client's Python);
- server CPU: every thread of the server and of its worker processes (decoding, dispatch,
  the backend's calls; on `cuda` that includes the driver's own CPU time for each call),
  measured once they are idle after the warm-up (`settle`: a spare worker's start is no
  part of a step);
- the rest: wall time in which neither end ran: the network, wake-ups, and waiting for
  the GPU (on `sim` the device's work is server CPU).

Where a GPU answers locally, the same loop runs on local cuda-python first: its wall time
is the GPU's and the driver's (the driver spins while it waits), the floor a remote step
cannot beat. The two ends' CPU overlaps in time (the server works on the step's first calls
while the client makes the rest, and its driver spins in the synchronous copy while the
GPU runs the kernels), so the parts need not add up to the wall time: the plot shows each
part as its own bar against the step's wall time, with one raw round trip (the network's
floor: the step's synchronous read waits for one), the GPU's time for the step's work (the
step captured once as a local graph and launched back to back: the GPU, not a CPU, sets
that pace) and the local step as reference.

    python -m bench.step_split --replot REPORT.json OUT.png

draws the plot again from a `make bench` report.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from bench import raw_step
from bench.common import Row, median_latency_us
from bench.raw_socket import echo_peer, round_trip_fn
from bench.server_proc import cricket_server_process

STEPS = 2000
QUICK_STEPS = 300
WARMUP_STEPS = 50
GPU_ROW = "step split: GPU per step"
# bench.graphs' row of the same step captured once and launched queued: its local baseline is
# the GPU's time per step too (a report without the GPU row, written before it existed)
_QUEUED_GRAPH = re.compile(
    r"graphs \[cuda\]: decoding step captured once, (\d+) launches \(.*queued"
)


@dataclass(frozen=True)
class StepSplit:
    """Microseconds per step: wall, each end's CPU, and what neither end spent on a CPU."""

    wall_us: float
    client_cpu_us: float
    server_cpu_us: float

    @property
    def rest_us(self) -> float:
        return max(0.0, self.wall_us - self.client_cpu_us - self.server_cpu_us)


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """Nanoseconds on a CPU so far of each thread of `pid`, by thread id (/proc schedstat;
    empty for a process that just ended, a thread that ended meanwhile left out)."""
    spent: dict[int, int] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return spent
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                spent[int(tid)] = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return spent


def _task_cpu_ns(pid: int) -> int:
    """Nanoseconds on a CPU of every thread of `pid` (0 for a process that just ended)."""
    return sum(thread_cpu_ns(pid).values())


def _descendants(pid: int) -> list[int]:
    """`pid` and every process below it (a server's isolation workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def process_tree_cpu_ns(pid: int) -> int:
    return sum(_task_cpu_ns(p) for p in _descendants(pid))


def settle(server_pid: int, bound: float = 30.0, window: float = 0.25) -> None:
    """Wait until the server's processes are idle (at most 2% of a CPU over `window`): under
    process isolation the pool starts a spare worker when the client's worker is handed out,
    and that start (imports, a CUDA context) is no part of a step."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        before = process_tree_cpu_ns(server_pid)
        time.sleep(window)
        if process_tree_cpu_ns(server_pid) - before < 0.02 * window * 1e9:
            return


def measure(loop: Callable[[int], float], steps: int, server_pid: int | None) -> StepSplit:
    """Run `loop(steps)` (seconds of its timed part) and split its time per step."""
    loop(WARMUP_STEPS)
    if server_pid:
        settle(server_pid)
    me = os.getpid()
    client0 = _task_cpu_ns(me)
    server0 = process_tree_cpu_ns(server_pid) if server_pid else 0
    t0 = time.perf_counter()
    loop(steps)
    wall = time.perf_counter() - t0
    client = _task_cpu_ns(me) - client0
    server = (process_tree_cpu_ns(server_pid) - server0) if server_pid else 0
    return StepSplit(wall * 1e6 / steps, client / 1e3 / steps, server / 1e3 / steps)


def gpu_step_us(cu: ModuleType, steps: int) -> float:
    """The GPU's time for one step's work: the step captured once as a graph on local
    cuda-python and launched `steps` times back to back, one wait at the end (`bench.graphs`),
    so that the GPU, not the launching CPU, sets the pace."""
    from cuda.bindings import runtime

    from bench.graphs import graph_loop_s

    graph_loop_s(cu, runtime, WARMUP_STEPS, token=False)
    return graph_loop_s(cu, runtime, steps, token=False) * 1e6 / steps


def _loop(cu: ModuleType) -> tuple[Callable[[int], float], Callable[[], None]]:
    from bench.driver_remote import Workload

    work = Workload(cu)
    return work.decoding_loop_s, work.close


def plot(
    splits: dict[str, StepSplit],
    out: Path,
    title: str,
    round_trip_us: float,
    gpu_us: float | None = None,
) -> Path:
    """Per run, one bar each: wall time, client CPU, server CPU (remote), and one raw round
    trip (remote); the GPU's time for the step's work (`gpu_us`, where measured); the local
    step's wall time as a line (see the module docstring)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars: list[tuple[str, float, str]] = []  # (label, microseconds, color)
    local = splits.get("local cuda-python")
    for run, s in splits.items():
        bars.append((f"{run}: wall", s.wall_us, "tab:gray"))
        bars.append((f"{run}: client CPU", s.client_cpu_us, "tab:blue"))
        if s is not local:
            bars.append((f"{run}: server CPU (incl. driver, its GPU wait)", s.server_cpu_us,
                         "tab:orange"))  # fmt: skip
            bars.append((f"{run}: network, one raw round trip", round_trip_us, "tab:green"))
    if gpu_us is not None:
        bars.append(("GPU: the step's work queued back to back (local graph)", gpu_us, "tab:red"))
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.42 * len(bars)))
    labels = [b[0] for b in bars]
    ax.barh(labels, [b[1] for b in bars], color=[b[2] for b in bars])
    for y, (_label, us, _color) in enumerate(bars):
        ax.text(us, y, f" {us:.0f} us", va="center", fontsize=8)
    if local is not None:
        ax.axvline(local.wall_us, color="black", linestyle="--", linewidth=1)
        ax.text(local.wall_us, len(bars) - 0.4, " local step: GPU and driver", fontsize=8)
    ax.set_xlabel("microseconds per decoding step (the ends' CPU overlaps in time)")
    ax.set_title(title, fontsize=9)
    ax.set_xlim(0, max(b[1] for b in bars) * 1.15)
    ax.invert_yaxis()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def replot(report: Path, out: Path) -> Path:
    """The plot of `run` again, from the rows of a `make bench` report (JSON)."""
    import json

    data = json.loads(report.read_text())
    splits, round_trip_us, steps, gpu_us = splits_of(data["rows"])
    if not splits:
        raise SystemExit(f"{report}: no step split rows")
    return plot(splits, out, _title(steps, data.get("cpus")), round_trip_us, gpu_us)


def splits_of(rows: list[dict]) -> tuple[dict[str, StepSplit], float, int, float | None]:
    """(each run's StepSplit, the raw round trip in us, steps, the GPU's us per step or None)
    from a report's rows (the GPU's time from the step split's row, else from bench.graphs'
    queued row of the same step)."""
    splits: dict[str, StepSplit] = {}
    round_trip_us, steps = 0.0, 0
    gpu_us: float | None = None
    for row in rows:
        name = row["name"]
        if name.startswith(GPU_ROW):
            gpu_us = row["value"]
        elif gpu_us is None and row.get("baseline") and (queued := _QUEUED_GRAPH.match(name)):
            gpu_us = row["baseline"] * 1e6 / int(queued.group(1))  # bench.graphs' local run
        elif name.startswith("step split: ") and name.endswith(", wall per step"):
            extra = row["extra"]
            run = name[len("step split: ") : -len(", wall per step")]
            splits[run] = StepSplit(row["value"], extra["client_cpu_us"], extra["server_cpu_us"])
            steps = extra.get("steps", steps)
        elif name.startswith("step split: ") and name.endswith("in round trips"):
            round_trip_us = row["baseline"]
    return splits, round_trip_us, steps, gpu_us


def _title(steps: int, cpus: int | None = None) -> str:
    cpus = os.cpu_count() if cpus is None else cpus
    return f"Decoding step ({steps} steps: HtoD 4 KiB, 10 launches, DtoH 4 B), {cpus} CPUs"


def run(quick: bool = False, plot_path: Path | None = None) -> list[Row]:
    from bench.driver_remote import _local_driver

    steps = QUICK_STEPS if quick else STEPS
    local_cu = _local_driver()
    backend = "cuda" if local_cu else "sim"
    splits: dict[str, StepSplit] = {}
    gpu_us: float | None = None
    if local_cu is not None:
        loop, close = _loop(local_cu)
        splits["local cuda-python"] = measure(loop, steps, None)
        close()
        gpu_us = gpu_step_us(local_cu, steps)
    import cricket_client
    from cricket_client import driver as remote_cu

    with cricket_server_process(backend, spin_us=0) as (address, pid):
        conn = cricket_client.connect(address)
        loop, close = _loop(remote_cu)
        splits[f"remote [{backend}], spin off"] = measure(loop, steps, pid)
        close()
        conn.close()
    with echo_peer() as sock:
        raw_rtt = median_latency_us(round_trip_fn(sock), 2000)["median_us"]
        raw_step_us, raw_step_cpu_us = raw_step.measure_on(sock, steps, 0.0)
    local = splits.get("local cuda-python")
    rows = []
    for label, s in splits.items():
        base = local.wall_us if local and s is not local else None
        rows.append(
            Row(
                f"step split: {label}, wall per step",
                s.wall_us,
                "us",
                "local cuda-python step" if base else "",
                base,
                s.wall_us / base if base else None,
                "P4 <= 1.5" if base else "",
                extra={
                    "client_cpu_us": s.client_cpu_us,
                    "server_cpu_us": s.server_cpu_us,
                    "rest_us": s.rest_us,
                    "steps": steps,
                },
            )
        )
        rows.append(Row(f"step split: {label}, client CPU per step", s.client_cpu_us, "us"))
        if s is not local:
            rows.append(Row(f"step split: {label}, server CPU per step", s.server_cpu_us, "us"))
        rows.append(Row(f"step split: {label}, rest per step", s.rest_us, "us"))
        if s is not local:
            rows.append(
                Row(
                    f"step split: {label}, wall per step in round trips",
                    s.wall_us,
                    "us",
                    "raw Python socket 100-byte round trip, TCP",
                    raw_rtt,
                    s.wall_us / raw_rtt,
                )
            )
    rows.append(
        Row(
            "step split: the step's messages alone on raw sockets (4 KiB one-way, 100 B round "
            "trip)",
            raw_step_us,
            "us",
            "raw Python socket 100-byte round trip, TCP",
            raw_rtt,
            raw_step_us / raw_rtt,
            extra={"client_cpu_us": raw_step_cpu_us},
        )
    )
    if gpu_us is not None:
        rows.append(Row(f"{GPU_ROW} (the step captured once, {steps} launches queued, local)",
                        gpu_us, "us"))  # fmt: skip
    if plot_path is not None:
        plot(splits, plot_path, _title(steps), raw_rtt, gpu_us)
        print(f"wrote {plot_path}")
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.step_split")
    parser.add_argument("--replot", nargs=2, metavar=("REPORT", "OUT"), type=Path, required=True)
    args = parser.parse_args(argv)
    print(f"wrote {replot(*args.replot)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
