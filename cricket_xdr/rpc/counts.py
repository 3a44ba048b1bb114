"""Per-procedure counts of one RPC client's calls: sent, and replies a caller waited for.

An `RpcClient` keeps them while its `counts` is a `CallCounts` (None, the default, costs one
attribute test per call). A wait is a caller blocked on one reply: the round trips that a
program's time holds; calls sent and never waited for went pipelined."""

from __future__ import annotations

from collections import Counter

__all__ = ["CallCounts"]


class CallCounts:
    """Counters by procedure number (plain Counters: callers may add their own kinds)."""

    def __init__(self) -> None:
        self.sent: Counter[int] = Counter()
        self.waited: Counter[int] = Counter()
        self.wait_ns: Counter[int] = Counter()

    def waited_for(self, proc: int, ns: int) -> None:
        self.waited[proc] += 1
        self.wait_ns[proc] += ns
