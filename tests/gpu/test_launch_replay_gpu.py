"""Repeated launch batches made as graphs (launch_replay) on a real GPU: the graph's kernel
nodes take the parameters each step sends, a capturing stream gets the launches themselves,
and what a session unloads or changes ends its graphs."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from cuda.bindings import driver

from cricket_server.backends.base import BackendSession
from cricket_server.launch_batch import decode_launch_batch

if TYPE_CHECKING:
    from conftest import ChunkMapper

pytestmark = pytest.mark.gpu

N = 256  # floats per window
WINDOWS = 4
LAUNCHES = 10
FN, STREAM = 0x0300000000000001, 0x0600000000000001  # the session layer's handles, as sent


def _ok(result: Any) -> Any:
    assert result[0] == driver.CUresult.CUDA_SUCCESS, result
    return result[1] if len(result) == 2 else result[1:]


def _batch(targets: list[int], stream: int = STREAM) -> memoryview:
    """A launch_batch record: add_one(p, N) for each p, on `stream`."""
    out = [struct.pack(">I", len(targets))]
    for p in targets:
        params = struct.pack("<Qi4x", p, N)
        out.append(struct.pack(">Q7IQI", FN, 1, 1, 1, N, 1, 1, 0, stream, len(params)) + params)
    return memoryview(b"".join(out))


class Sender:
    """Makes batches as the session layer does: a repeat by its graph, else the C loop with
    its tables filled, then `batch_made`."""

    def __init__(self, session: BackendSession, func: object, stream: object) -> None:
        self.session, self.func, self.stream = session, func, stream
        self.by_graph = 0

    def send(self, body: memoryview) -> None:
        session = self.session
        if session.replay_batch(body):
            self.by_graph += 1
            return
        fast = session.fast_launcher()
        assert fast is not None, "the C launch loop did not build on the GPU machine"
        fast.add_function(FN, self.func)
        fast.add_stream(STREAM, self.stream)
        index, err = fast.run(body, 0)
        assert (index, err) == (len(decode_launch_batch(body)), 0)
        session.batch_made(body, fast)


@pytest.fixture
def rig(session: BackendSession, chunks: ChunkMapper, cubin_image: bytes) -> tuple[Sender, int]:
    module = session.module_load(cubin_image, {})
    func = session.module_get_function(module, "add_one")
    base = chunks.map(session, 4 * N * WINDOWS)
    session.memset(base, 0, 4, N * WINDOWS, None)
    return Sender(session, func, session.stream_create(1, 0)), base


def _windows(session: BackendSession, base: int) -> list[set[float]]:
    raw = bytes(session.memcpy_dtoh(base, 4 * N * WINDOWS, None))
    values = struct.unpack(f"<{N * WINDOWS}f", raw)
    return [set(values[w * N : (w + 1) * N]) for w in range(WINDOWS)]


def test_repeats_run_as_graphs_with_each_steps_parameters(rig: tuple[Sender, int]) -> None:
    sender, base = rig
    expected = [0.0] * WINDOWS
    steps = 30
    for step in range(steps):
        # the step's window moves: launch k of step s adds one to window (s + k) % 4
        targets = [base + 4 * N * ((step + k) % WINDOWS) for k in range(LAUNCHES)]
        for k in range(LAUNCHES):
            expected[(step + k) % WINDOWS] += 1
        sender.send(_batch(targets))
    sender.session.synchronize()
    assert _windows(sender.session, base) == [{v} for v in expected]
    assert sender.by_graph >= steps - 2  # all but the first two: seen once, then built


def test_a_capturing_stream_records_the_launches_themselves(rig: tuple[Sender, int]) -> None:
    sender, base = rig
    same = _batch([base] * LAUNCHES)
    for _ in range(3):
        sender.send(same)
    assert sender.by_graph == 1
    stream = sender.stream
    mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    _ok(driver.cuStreamBeginCapture(stream, mode))
    sender.send(same)
    graph = _ok(driver.cuStreamEndCapture(stream))
    assert sender.by_graph == 1  # not a graph launch inside the capture
    nodes, count = _ok(driver.cuGraphGetNodes(graph, 2 * LAUNCHES))
    kinds = [_ok(driver.cuGraphNodeGetType(node)) for node in nodes[:count]]
    assert kinds == [driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL] * LAUNCHES
    exec_ = _ok(driver.cuGraphInstantiate(graph, 0))
    _ok(driver.cuGraphLaunch(exec_, stream))
    sender.session.synchronize()
    assert _windows(sender.session, base)[0] == {float(4 * LAUNCHES)}  # 3 sent + 1 captured
    _ok(driver.cuGraphExecDestroy(exec_))
    _ok(driver.cuGraphDestroy(graph))
    sender.send(same)
    assert sender.by_graph == 2  # after the capture, repeats are graphs again


def test_changes_to_what_a_graph_names_end_it(
    rig: tuple[Sender, int], open_session: Callable[..., BackendSession], cubin_image: bytes
) -> None:
    sender, base = rig
    session = sender.session
    same = _batch([base] * LAUNCHES)
    sends = 0

    def send_three() -> int:
        nonlocal sends
        before = sender.by_graph
        for _ in range(3):
            sender.send(same)
        sends += 3
        return sender.by_graph - before

    assert send_three() == 1
    session.func_set_attribute(sender.func, 8, 0)  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert send_three() == 1  # dropped, seen, built again, replayed
    session.set_limit(int(driver.CUlimit.CU_LIMIT_STACK_SIZE), 2048)
    assert send_three() == 1
    old = sender.stream
    sender.stream = session.stream_create(1, 0)
    session.stream_destroy(old)
    assert send_three() == 1  # the same stream handle now stands for a new stream
    session.synchronize()
    assert _windows(session, base)[0] == {float(sends * LAUNCHES)}
