"""Small synchronous calls through cricket-server in thread and in process isolation, against
a raw socket round trip with the same placement, and how many threads each call wakes.

The server and the raw echo peer run in other processes; the client is this process. Both
ends spin as a deployment's would (CRICKET_SPIN_US for both, else the default: 100 us on 4
or more cores, else 0).

Where the two ends run decides what a blocking round trip costs more than anything in them:
on one CPU each end runs as soon as the other blocks; on two, each message wakes a thread on
a CPU that had gone idle, which on a virtual machine costs tens of microseconds per wake-up.
Which one the kernel picks changes with what else runs (a server of process isolation starts
its next worker after a connection: while that one imports, a core is busy and both ends
share the other). So, with 2 or more CPUs, the server side (server, its workers, the echo
peer) is pinned to one CPU and the client to the same CPU ("one CPU") or another ("two
CPUs"), and the server's processes must have gone quiet before measuring.

"blocking waits per call" counts how often the threads of each end blocked during the calls
(voluntary context switches, from /proc: Linux), per call: 1 at each end when a synchronous
call runs on one thread at each end (D11, each end waits once for the other), 2 or more when
it is handed between threads. Unlike latency, it does not depend on the machine's load.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench import sched
from bench.common import Row, median_latency_us
from bench.raw_socket import echo_peer, round_trip_fn
from bench.server_proc import cricket_server_process

MODES = ("thread", "process")
CALLS = ("NULL", "cuCtxGetDevice", "cuMemGetInfo", "cuDeviceGetAttribute")
WARMUP = 200
Placement = tuple[set[int], set[int]]  # (server side CPUs, client CPUs)


def placements() -> dict[str, Placement]:
    """"one CPU" and "two CPUs" where this process may run on 2 or more, else "unpinned"."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return {"unpinned": (set(cpus), set(cpus))}
    server = {cpus[-1]}
    return {"one CPU": (server, server), "two CPUs": (server, {cpus[0]})}


@contextmanager
def _affinity(cpus: set[int]) -> Iterator[None]:
    """Run this process (and what it starts meanwhile) on `cpus`."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _calls(conn: Any, cu: Any) -> dict[str, Callable[[], object]]:
    """The measured calls on `conn` (the default connection), primary context current."""
    ok = cu.CUresult.CUDA_SUCCESS
    err, dev = cu.cuDeviceGet(0)
    assert err == ok, err
    err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
    assert err == ok, err
    assert cu.cuCtxSetCurrent(ctx)[0] == ok
    rpc, proto = conn._rpc, conn.proto
    attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    return {
        "NULL": lambda: rpc.call(proto.CRICKET_PROG, proto.CRICKET_V1, 0, b""),
        "cuCtxGetDevice": cu.cuCtxGetDevice,
        "cuMemGetInfo": cu.cuMemGetInfo,
        "cuDeviceGetAttribute": lambda: cu.cuDeviceGetAttribute(attr, dev),
    }


def _one(server_pid: int, fn: Callable[[], object], iterations: int) -> tuple[float, float, float]:
    """(median us, server blocking waits per call, client blocking waits per call)."""
    me = [os.getpid()]
    s0, c0 = sched.blocks(sched.family(server_pid)), sched.blocks(me)
    latency = median_latency_us(fn, iterations, warmup=WARMUP)
    s1, c1 = sched.blocks(sched.family(server_pid)), sched.blocks(me)
    calls = iterations + WARMUP
    server = sum(sched.blocked(s0, s1).values()) / calls
    return latency["median_us"], server, sum(sched.blocked(c0, c1).values()) / calls


def _repeated(fn: Callable[[], tuple[float, ...]], repeats: int) -> list[float]:
    """Median of each field of `fn()` over `repeats` runs."""
    runs = [fn() for _ in range(repeats)]
    return [statistics.median(field) for field in zip(*runs, strict=True)]


def measure(mode: str, backend: str, spin_us: float, iterations: int, repeats: int,
            raw: Callable[[], object], where: dict[str, Placement]
            ) -> dict[str, dict[str, Any]]:  # fmt: skip
    """{placement: {call: {median_us, server_woken, client_woken}, "raw": {...}}} for `mode`
    with the server side and the client placed as `where` says."""
    import cricket_client
    from cricket_client import driver as cu

    server_cpus = next(iter(where.values()))[0]
    out: dict[str, dict[str, Any]] = {}
    with _affinity(server_cpus), cricket_server_process(
        backend, isolation=mode, spin_us=spin_us
    ) as (address, pid):
        conn = cricket_client.connect(address)
        try:
            assert cu.cuInit(0)[0] == cu.CUresult.CUDA_SUCCESS
            calls = _calls(conn, cu)
            quiet = sched.wait_quiet(pid)
            for name, (_server, client_cpus) in where.items():
                with _affinity(client_cpus):
                    before = _repeated(lambda: (median_latency_us(raw, iterations)["median_us"],),
                                       repeats)[0]  # fmt: skip
                    result: dict[str, Any] = {}
                    for call, fn in calls.items():

                        def one(fn: Callable[[], object] = fn) -> tuple[float, float, float]:
                            return _one(pid, fn, iterations)

                        us, server, client = _repeated(one, repeats)
                        result[call] = {"median_us": us, "server_woken": server,
                                        "client_woken": client}  # fmt: skip
                    after = _repeated(lambda: (median_latency_us(raw, iterations)["median_us"],),
                                      repeats)[0]  # fmt: skip
                result["raw"] = {"before_us": before, "after_us": after, "quiet": quiet}
                out[name] = result
        finally:
            conn.close()
    return out


def run(iterations: int = 3000, repeats: int = 3) -> list[Row]:
    from cricket_client.security import spin_us_from_env
    from cricket_server.backends.cuda import gpu_available

    if not sched.available():
        print("isolation: skipped (needs Linux /proc schedstat)")
        return []
    backend = "cuda" if gpu_available() else "sim"
    spin_us = spin_us_from_env()
    where = placements()
    server_cpus = next(iter(where.values()))[0]
    with _affinity(server_cpus), echo_peer() as sock:  # the echo peer runs where servers do
        raw = round_trip_fn(sock)
        results = {mode: measure(mode, backend, spin_us, iterations, repeats, raw, where)
                   for mode in MODES}  # fmt: skip
    rows: list[Row] = []
    for mode, by_place in results.items():
        for place, result in by_place.items():
            base = min(result["raw"]["before_us"], result["raw"]["after_us"])
            base_name = f"raw Python socket 100-byte round trip, TCP, {place} (min of before/after)"
            for call in CALLS:
                r = result[call]
                rows.append(Row(
                    f"isolation {mode}, {place} [{backend}]: {call}", r["median_us"], "us",
                    base_name, base, r["median_us"] / base, f"spin {spin_us:g} us",
                    extra={**r, "raw": result["raw"], "spin_us": spin_us},
                ))  # fmt: skip
            for end in ("server", "client"):
                woken = {call: result[call][f"{end}_woken"] for call in CALLS}
                rows.append(Row(
                    f"isolation {mode}, {place}: blocking waits per call, {end}",
                    statistics.median(woken.values()), "", target="1 (D11: one thread at each end)", extra=woken,
                ))  # fmt: skip
    return rows
