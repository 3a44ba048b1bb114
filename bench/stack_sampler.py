"""A sampling profiler of every thread of a process: where its wall time goes, not CPU.

    python -m bench.stack_sampler --out FILE [--interval-us N] -m MODULE [ARGS...]

runs MODULE as `python -m` would, with a thread that every N us (default 1000) takes the
stack of every other thread (`sys._current_frames`) and counts, per thread name, the
innermost Python function (self) and every function on the stack (inclusive). A thread
blocked in C (a socket receive, a CUDA synchronize) is counted in the Python function that
called it, so waiting shows up by name (self entries name the line too). FILE is rewritten every second and at exit, so a
process stopped by a signal leaves its last report. `Sampler` does the same in-process.

Unlike cProfile it adds no cost per function call (a sample costs a few microseconds of the
GIL per interval), so fast Python and slow C calls keep their proportions.
"""

from __future__ import annotations

import argparse
import atexit
import os
import runpy
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType

__all__ = ["Sampler"]


def _where(frame: FrameType) -> str:
    code = frame.f_code
    path = code.co_filename
    parts = path.split(os.sep)
    short = os.sep.join(parts[-2:]) if len(parts) > 1 else path
    return f"{short}:{code.co_firstlineno}({code.co_name})"


def _thread_kind(name: str) -> str:
    """Thread names without their numbers: the threads of one kind add up."""
    return name.rstrip("0123456789-_ ()").strip() or name


class Sampler:
    """Samples every other thread's stack each `interval` seconds until `stop`."""

    def __init__(self, interval: float = 0.001) -> None:
        self.interval = interval
        self.samples: Counter[str] = Counter()  # thread kind -> samples
        self.self_hits: Counter[tuple[str, str]] = Counter()
        self.inclusive: Counter[tuple[str, str]] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stack-sampler", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                kind = _thread_kind(names.get(ident, str(ident)))
                self.samples[kind] += 1
                self.self_hits[kind, f"{_where(frame)} line {frame.f_lineno}"] += 1
                seen = set()
                f: FrameType | None = frame
                while f is not None:
                    where = _where(f)
                    if where not in seen:
                        seen.add(where)
                        self.inclusive[kind, where] += 1
                    f = f.f_back

    def report(self, top: int = 25) -> str:
        lines = [f"stack samples every {self.interval * 1e6:.0f} us"]
        for kind, total in self.samples.most_common():
            lines.append(f"\n== thread {kind!r}: {total} samples")
            for title, counts in (("self", self.self_hits), ("inclusive", self.inclusive)):
                rows = sorted(
                    ((n, where) for (k, where), n in counts.items() if k == kind), reverse=True
                )[:top]
                lines.append(f"  -- {title}")
                lines += [f"  {100 * n / total:5.1f}%  {where}" for n, where in rows]
        return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.stack_sampler")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--interval-us", type=float, default=1000.0)
    parser.add_argument("-m", dest="module", required=True)
    args, rest = parser.parse_known_args()
    sampler = Sampler(args.interval_us / 1e6).start()

    def write() -> None:
        args.out.write_text(sampler.report())

    def keep_writing() -> None:
        while True:
            time.sleep(1.0)
            write()

    threading.Thread(target=keep_writing, name="stack-sampler-writer", daemon=True).start()
    atexit.register(write)
    sys.argv = [args.module, *rest]
    runpy.run_module(args.module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
