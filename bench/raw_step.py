"""The decoding step's messages alone, on raw Python sockets: the floor of a pipelined step.

    python -m bench.raw_step [--steps N] [--gap-us G ...]

A remote decoding step (bench.driver_remote) sends its 4 KiB HtoD at once (it returns
early), makes its launches, then sends them with the 4-byte read and waits for the reply:
two writes and one reply, each finding its reader asleep when the client works in between
and nothing spins. Here the same three messages go between two Python processes that do
nothing else (`bench.raw_socket`'s peer sinks the first and echoes the second), with the
client busy for G us in between (the launches' time). Per step: wall, the client thread's
CPU, and wall minus G: what the messages alone cost with these wake-ups, which no client
or server code can go below without changing the messages or spinning.
"""

from __future__ import annotations

import argparse
import socket
import time

from bench.raw_socket import echo_peer, step_fn

GAPS_US = (0.0, 50.0)


def measure_on(sock: socket.socket, steps: int, gap_us: float) -> tuple[float, float]:
    """(wall, client CPU) in us per step of `steps` raw steps with a gap of `gap_us`, on a
    socket connected to `bench.raw_socket`'s peer."""
    step = step_fn(sock, gap_us=gap_us)
    for _ in range(200):
        step()
    c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
    for _ in range(steps):
        step()
    t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
    return (t1 - t0) / steps / 1e3, (c1 - c0) / steps / 1e3


def measure(steps: int, gap_us: float) -> tuple[float, float]:
    """`measure_on` a fresh peer."""
    with echo_peer() as sock:
        return measure_on(sock, steps, gap_us)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.raw_step")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--gap-us", type=float, action="append")
    args = parser.parse_args(argv)
    for gap in args.gap_us or GAPS_US:
        wall, cpu = measure(args.steps, gap)
        print(f"raw step (4 KiB one-way, {gap:g} us busy, 100 B round trip): wall {wall:.1f} us, "
              f"client CPU {cpu:.1f} us, messages alone {wall - gap:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
