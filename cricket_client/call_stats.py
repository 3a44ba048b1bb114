"""What a program's CUDA calls cost in round trips (CRICKET_CALL_STATS).

With CRICKET_CALL_STATS=1 the client prints, when the program exits, a table on stderr: per
procedure the calls sent, the replies the program waited for (each one a round trip in its
time) and how long it waited, the queries answered here without a round trip
(cricket_client.known_answers) and the launches gathered into batch calls
(cricket_client.launch_batch). With CRICKET_CALL_STATS=PATH it writes the same as JSON to
PATH ("%p" in PATH: the process id), e.g. for each process of `cricket-run`. It is written by
an `atexit` handler, and in a C or C++ program through the native library (which ends
without finalizing the interpreter the library started) by the library's C exit handler
(`write_pending`).

What to look for: a procedure waited for once per iteration of a loop is a round trip the
loop pays every time; one that is neither waited for nor sent went pipelined or was known.
Counting costs an attribute test per call while it is off.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections import Counter
from typing import Any

from cricket_xdr.rpc.counts import CallCounts

__all__ = ["ENV", "CallStats", "from_env"]

ENV = "CRICKET_CALL_STATS"


class CallStats:
    """The counts of a process's connections: their RPC clients' (by procedure number), and
    by procedure name the answers known here and the launches gathered."""

    def __init__(self, proto: Any) -> None:
        self.rpc = CallCounts()
        self.known: Counter[str] = Counter()
        self.gathered: Counter[str] = Counter()
        self._names = {
            number: procedure.name
            for number, procedure in proto.CRICKET_V1_Server.PROCEDURES.items()
        }
        self._names[0] = "NULL"  # asks for replies the server holds (protocol version 2)

    def table(self) -> dict[str, dict[str, float]]:
        """{procedure: {"sent", "waited", "wait_ms", "known", "gathered"}}, those used."""
        rows: dict[str, dict[str, float]] = {}

        def row(name: str) -> dict[str, float]:
            return rows.setdefault(
                name, {"sent": 0, "waited": 0, "wait_ms": 0.0, "known": 0, "gathered": 0}
            )

        rpc = self.rpc
        for number in set(rpc.sent) | set(rpc.waited):
            r = row(self._names.get(number, f"procedure {number}"))
            r["sent"] += rpc.sent[number]
            r["waited"] += rpc.waited[number]
            r["wait_ms"] += rpc.wait_ns[number] / 1e6
        for name, n in self.known.items():
            row(name)["known"] += n
        for name, n in self.gathered.items():
            row(name)["gathered"] += n
        return rows

    def report(self) -> str:
        """The table as text, most waited-for first."""
        rows = self.table()
        order = sorted(rows, key=lambda name: (-rows[name]["wait_ms"], -rows[name]["sent"], name))
        lines = [
            f"cricket: calls of process {os.getpid()} (waited: round trips in the program's time)",
            f"{'procedure':<40} {'sent':>9} {'waited':>9} {'wait ms':>10} {'known':>8} {'gathered':>9}",
        ]
        for name in order:
            r = rows[name]
            lines.append(
                f"{name:<40} {r['sent']:>9.0f} {r['waited']:>9.0f} {r['wait_ms']:>10.1f}"
                f" {r['known']:>8.0f} {r['gathered']:>9.0f}"
            )
        total = {k: sum(r[k] for r in rows.values()) for k in ("sent", "waited", "wait_ms")}
        lines.append(
            f"total: {total['sent']:.0f} calls sent, {total['waited']:.0f} waited for "
            f"({total['wait_ms']:.1f} ms)"
        )
        return "\n".join(lines)

    def write(self, target: str) -> None:
        """Print the table on stderr ("1"), or write it as JSON to the path `target`."""
        if target == "1":
            print(self.report(), file=sys.stderr)
            return
        path = target.replace("%p", str(os.getpid()))
        with open(path, "w") as out:
            json.dump({"pid": os.getpid(), "procedures": self.table()}, out, indent=1)


_process: tuple[CallStats, str] | None = None  # this process's counts and where they go
_written = False


def write_pending() -> None:
    """Write this process's counts, once (at its exit)."""
    global _written
    if _process is not None and not _written:
        _written = True
        _process[0].write(_process[1])


def from_env(proto: Any) -> CallStats | None:
    """The counts of this process's connections (one table for all) when CRICKET_CALL_STATS
    asks for them, written out at the program's exit; else None."""
    global _process
    target = os.environ.get(ENV, "")
    if not target or target == "0":
        return None
    if _process is None:
        _process = (CallStats(proto), target)
        atexit.register(write_pending)
    return _process[0]
