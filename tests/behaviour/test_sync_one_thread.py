"""A synchronous call runs on one thread at each end (D11), in both isolation modes: during a
run of synchronous calls, the server's connection thread blocks once per call (on its
receive) and no other server thread blocks or wakes; the same for the client's calling
thread. Counted from /proc (voluntary context switches of each thread), which does not depend
on how loaded the machine is, where latencies do."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from behaviour_helpers import check, open_session
from server_harness import running_server

from bench import sched
from cricket_client import driver as cuda

CALLS = 200  # of each kind


def _calls(conn) -> list[Callable[[], object]]:  # type: ignore[no-untyped-def]
    dev = check(cuda.cuCtxGetDevice())
    attr = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    rpc, proto = conn._rpc, conn.proto
    return [
        lambda: rpc.call(proto.CRICKET_PROG, proto.CRICKET_V1, 0, b""),  # NULL
        lambda: check(cuda.cuCtxGetDevice()),
        lambda: check(cuda.cuMemGetInfo()),
        lambda: check(cuda.cuDeviceGetAttribute(attr, dev)),
    ]


@pytest.mark.skipif(not sched.available(), reason="counts threads from Linux /proc schedstat")
@pytest.mark.parametrize("mode", ["thread", "process"])
def test_a_synchronous_call_wakes_one_thread_at_each_end(tmp_path: Path, mode: str) -> None:
    with running_server(tmp_path, "--spin-us", "0", isolation=mode) as server:
        conn = open_session(server.address, make_default=False)
        try:
            with conn.active():
                calls = _calls(conn)
                for fn in calls:  # first use of each path
                    fn()
                pid = server.process.pid
                # under process isolation the server starts its next worker now: let it settle
                assert sched.wait_quiet(pid), "the server's processes did not go quiet in 60 s"
                me = [os.getpid()]
                server0, client0 = sched.blocks(sched.family(pid)), sched.blocks(me)
                for fn in calls:
                    for _ in range(CALLS):
                        fn()
                server1, client1 = sched.blocks(sched.family(pid)), sched.blocks(me)
        finally:
            conn.close()
    total = len(calls) * CALLS
    names = {key: name for key, (_count, name) in {**server0, **server1}.items()}
    waits = sched.blocked(server0, server1)
    serving = max(waits, key=waits.__getitem__)  # the connection's thread
    # It blocks about once per call (less when a call is already there when it looks); a
    # hand-off to another thread makes it wait for that one too: twice per call.
    assert waits[serving] <= 1.5 * total, f"server: {waits[serving]} waits for {total} calls"
    # Other threads may wake now and then (a main thread's periodic check), not per call.
    others = {f"{names[k]} {k}": n for k, n in waits.items() if k != serving}
    assert sum(others.values()) <= total // 10, f"server threads that blocked too: {others}"
    caller = (os.getpid(), threading.get_native_id())
    client = sched.blocked(client0, client1)
    assert client.get(caller, 0) <= 1.5 * total, f"client: {client.get(caller)} waits"
    client_others = {k: n for k, n in client.items() if k != caller}
    assert sum(client_others.values()) <= total // 10, f"client threads that blocked: {client_others}"
