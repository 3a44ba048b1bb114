"""The decoding step (P4) and empty launches (P2) under client-side variants, in one run.

    python -m bench.step_ab [--rounds N] [--steps N] [--variants batch128,batch3,...]

One server (the GPU's `cuda` when there is one, else sim), one connection; rounds alternate
the variants, each a setting of this process's client only:
- `batchK`: launches gathered into batches of at most K (CRICKET_LAUNCH_BATCH=K);
- `heldK`: as batchK, and an early 4 KiB cuMemcpyHtoD is held to leave in one write with the
  calls after it (the step's launches and DtoH) instead of a write of its own;
- `timer-timerfd`, `timer-cond`, `timer-off`: the launch batcher's deadline timer
  (cricket_client.deadline_timer) as a timerfd armed and disarmed for each gathered batch,
  the portable Condition, or none at all (batches wait for the next call: a bound for what
  any timer costs);
- `noalive`: an early copy skips its check that the connection shows no sign of loss (a
  poll); joined to others with "+", e.g. `held128+noalive`.
Local cuda-python runs the same loops first when a GPU answers (the baseline). Medians over
rounds; spinning off unless CRICKET_SPIN_US says otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.driver_remote import Workload, _local_driver
from bench.server_proc import cricket_server_process


def _post_early_held(conn: Any, dst: int, data: Any) -> None:
    """early_copies.post_early, the record held to leave with the next call's write."""
    from cricket_client import early_copies
    from cricket_xdr.stubs import Pending

    data = bytes(data)
    pipe = conn.pipeline
    pipe.launches.flush(with_next=True)
    conn.replay_log.count(early_copies._PROC)
    prog, vers, number, encode, decode = pipe._how_to_send(early_copies._PROC)
    pending = Pending(pipe.rpc.call_async(prog, vers, number, encode(dst, data, 0), hold=True), decode)
    pipe._keep(early_copies._PROC, pending)
    conn.replay_log.keep_early(early_copies._PROC, (dst, data, 0))


@contextmanager
def _variant(conn: Any, name: str) -> Iterator[None]:
    """The client set as `name` says: modifiers joined by "+" (e.g. held128+noalive)."""
    from cricket_client import early_copies
    from cricket_client.deadline_timer import DeadlineTimer

    batcher, rpc = conn.pipeline.launches, conn._rpc
    saved_max, saved_post = batcher.max_launches, early_copies.post_early
    saved_timer, saved_arm = batcher.timer, batcher._arm_locked
    for part in name.split("+"):
        if part.startswith("timer-"):
            how = part[6:]
            if how == "off":
                batcher._arm_locked = lambda: None  # type: ignore[method-assign]
            else:
                batcher.timer = DeadlineTimer(batcher._on_due, use_timerfd=how == "timerfd")
        elif part == "noalive":
            rpc.looks_alive = lambda: True  # no poll before an early copy
        elif part.startswith("batch"):
            batcher.max_launches = int(part[5:])
        elif part.startswith("held"):
            batcher.max_launches = int(part[4:])
            early_copies.post_early = _post_early_held  # type: ignore[assignment]
        else:
            raise SystemExit(f"unknown variant {part!r} in {name!r}")
    try:
        yield
    finally:
        batcher.max_launches, early_copies.post_early = saved_max, saved_post  # type: ignore[assignment]
        if batcher.timer is not saved_timer:
            batcher.timer.close()
        batcher.timer, batcher._arm_locked = saved_timer, saved_arm  # type: ignore[method-assign]
        rpc.__dict__.pop("looks_alive", None)


def _rounds(fn: Callable[[], float], rounds: int) -> float:
    return statistics.median(fn() for _ in range(rounds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_ab")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--variants", default="batch128,batch1,batch2,batch3,batch5,held128,held3")
    args = parser.parse_args(argv)
    os.environ.setdefault("CRICKET_SPIN_US", "0")
    variants = args.variants.split(",")
    local_cu = _local_driver()
    backend = "cuda" if local_cu else "sim"
    local: dict[str, float] = {}
    if local_cu is not None:
        w = Workload(local_cu)
        w.decoding_loop_s(50)
        local["step"] = _rounds(lambda: w.decoding_loop_s(args.steps) / args.steps, args.rounds)
        local["rate"] = _rounds(lambda: w.launch_rate(args.launches), args.rounds)
        w.close()
    import cricket_client
    from cricket_client import driver as cu

    step: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    rate: dict[str, list[float]] = {v: [] for v in variants}
    spin = float(os.environ["CRICKET_SPIN_US"])
    with cricket_server_process(backend, spin_us=spin) as (address, _pid):
        conn = cricket_client.connect(address)
        w = Workload(cu)
        w.decoding_loop_s(50)
        for _ in range(args.rounds):
            for v in variants:
                with _variant(conn, v):
                    began = time.thread_time()
                    step[v].append(w.decoding_loop_s(args.steps) / args.steps)
                    cpu[v].append((time.thread_time() - began) / args.steps)
                    rate[v].append(w.launch_rate(args.launches))
        w.close()
        conn.close()
    print(f"backend {backend}; {args.rounds} rounds; medians")
    if local:
        print(f"local: step {local['step'] * 1e6:.1f} us, empty launches {local['rate'] / 1e3:.1f} k/s")
    print(
        f"{'variant':12s} {'step us':>9s} {'x local':>8s} {'client cpu us':>14s} "
        f"{'launch k/s':>11s} {'x local':>8s}"
    )
    for v in variants:
        s, r = statistics.median(step[v]), statistics.median(rate[v])
        sx = f"{s / local['step']:.2f}" if local else "-"
        rx = f"{r / local['rate']:.2f}" if local else "-"
        c = statistics.median(cpu[v])
        print(f"{v:12s} {s * 1e6:9.1f} {sx:>8s} {c * 1e6:14.1f} {r / 1e3:11.1f} {rx:>8s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
