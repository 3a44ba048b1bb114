"""Graph launches made while earlier work is outstanding travel as CU_GRAPH_LAUNCH_BATCH calls;
each launch still behaves as if it came alone: its own input bytes, program order against
kernel launches and other calls, every launch attempted, the first failure reported at the
next synchronizing call with its place. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check
from checkpoint_helpers import ServerProcess, server_list
from test_launch_batches import ONE, _counter, _value, counter_after_replay

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
MODE = cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL


def _captured(stream: Any, record: Any) -> Any:
    """An exec of what `record(stream)` puts on the capturing stream."""
    check(cuda.cuStreamBeginCapture(stream, MODE))
    record(stream)
    return check(cuda.cuGraphInstantiate(check(cuda.cuStreamEndCapture(stream)), 0))


def _adding_one(stream: Any, add: Any) -> Any:
    """An exec of one launch of add_to_counter(1)."""
    return _captured(
        stream, lambda s: check(cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, s, ONE, 0))
    )


def test_graph_and_kernel_launches_keep_the_program_order(
    session: cricket_client.Connection, kernels: Any
) -> None:
    counter, add = _counter(kernels)
    stream = check(cuda.cuStreamCreate(0))
    host = np.zeros(1, dtype=np.int32)
    # sets the counter to the host word's value at each launch
    set_counter = _captured(stream, lambda s: check(cuda.cuMemcpyHtoDAsync(counter, host, 4, s)))
    add_one = _adding_one(stream, add)
    expected = 0
    for i in range(1, 61):
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, stream, ONE, 0))
        expected += 1
        if i % 3 == 0:
            host[0] = 1000 * i
            check(cuda.cuGraphLaunch(set_counter, stream))
            expected = 1000 * i
        check(cuda.cuGraphLaunch(add_one, stream))
        expected += 1
    check(cuda.cuStreamSynchronize(stream))
    assert _value(counter) == expected == 60001


def test_a_bad_graph_launch_inside_a_batch_is_named_and_the_others_all_run(
    session: cricket_client.Connection, kernels: Any
) -> None:
    counter, add = _counter(kernels)
    stream = check(cuda.cuStreamCreate(0))
    add_one = _adding_one(stream, add)
    bogus = cuda.CUgraphExec(0xDEAD0000)
    for i in range(200):
        result = cuda.cuGraphLaunch(bogus if i == 120 else add_one, stream)
        assert result == (E.CUDA_SUCCESS,)  # reported at the next synchronizing call
    code = cuda.cuStreamSynchronize(stream)[0]
    assert code in (E.CUDA_ERROR_INVALID_HANDLE, E.CUDA_ERROR_INVALID_VALUE), code
    message = cricket_client.last_error_message()
    assert "cuGraphLaunch" in message
    assert re.search(r"launch \d+ of \d+ in a batch", message), message
    assert cuda.cuStreamSynchronize(stream) == (E.CUDA_SUCCESS,)  # not sticky
    assert _value(counter) == 199  # the launches after the bad one in its batch ran too


def test_an_exec_that_writes_host_memory_still_returns_its_bytes_between_batched_launches(
    session: cricket_client.Connection, kernels: Any
) -> None:
    counter, add = _counter(kernels)
    stream = check(cuda.cuStreamCreate(0))
    add_one = _adding_one(stream, add)
    out = np.zeros(1, dtype=np.int32)
    read_counter = _captured(stream, lambda s: check(cuda.cuMemcpyDtoHAsync(out, counter, 4, s)))
    seen = []
    for _ in range(5):
        for _ in range(40):
            check(cuda.cuGraphLaunch(add_one, stream))
        check(cuda.cuGraphLaunch(read_counter, stream))  # synchronous: the bytes are back
        seen.append(int(out[0]))
    assert seen == [40, 80, 120, 160, 200]


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def test_batched_graph_launches_count_one_call_each_for_replay(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    def prepare(add: Any) -> tuple[Callable[[], None], Callable[[], None]]:
        stream = check(cuda.cuStreamCreate(0))
        add_one = _adding_one(stream, add)
        return (
            lambda: check(cuda.cuGraphLaunch(add_one, stream)),
            lambda: check(cuda.cuStreamSynchronize(stream)),
        )

    assert counter_after_replay(tmp_path, servers, monkeypatch, prepare) == 705


def test_a_malformed_graph_batch_is_refused_and_the_session_goes_on(
    session: cricket_client.Connection, kernels: Any
) -> None:
    from cricket_xdr.rpc.errors import GarbageArgs

    counter, add = _counter(kernels)
    stream = check(cuda.cuStreamCreate(0))
    add_one = _adding_one(stream, add)
    prog, vers = session.proto.CRICKET_PROG, session.proto.CRICKET_V1
    for body in (b"\0\0\0\5", b"\0\0\4\1" + bytes(20), b"\0\0\0\1" + bytes(16),
                 b"\0\0\0\1" + bytes(16) + b"\xff\xff\xff\xf0"):  # fmt: skip
        with pytest.raises(GarbageArgs):
            session._rpc.call(prog, vers, session.proto.CU_GRAPH_LAUNCH_BATCH, body)
    check(cuda.cuGraphLaunch(add_one, stream))
    check(cuda.cuStreamSynchronize(stream))
    assert _value(counter) == 1
