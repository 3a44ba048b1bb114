"""The cuda backend's input copies made ahead of an exec's launches (graph_inputs), in Python,
over the stand-in driver of test_cuda_graph_staging: a root host-to-device copy becomes an
empty node and each launch copies its own bytes from a slot of the ring before cuGraphLaunch,
queued launches never wait until every slot is busy, a change of stream first waits for the
old stream, a disabled copy is not made, and the exec then leaves the C loop."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

pytest.importorskip("cuda.bindings.driver")

from test_cuda_graph_staging import KERNEL, GpuStandIn, Session

from cricket_server.backends.cuda import graph_inputs, graph_staging
from cricket_server.backends.cuda import graphs as cuda_graphs
from cricket_server.backends.cuda.graph_inputs import SLOTS
from cricket_server.graphs import ExecNode

STEP = [  # a decoding step: input bytes in, a kernel
    ExecNode(1, 1, (), copy=(False, 0x7000, True, 0, 8)),
    ExecNode(2, 0, (1,), kernel=KERNEL),
]


_NOTHING = ctypes.create_string_buffer(8)


class Stream(int):
    """A stream handle as the backend passes them (int() gives the CUstream)."""


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> GpuStandIn:
    fake = GpuStandIn()
    fake.source = ctypes.addressof(_NOTHING)  # no host node: its launches read nothing of ours
    for module in (cuda_graphs, graph_staging, graph_inputs):
        monkeypatch.setattr(module, "driver", fake)
    return fake


def _copies(gpu: GpuStandIn, since: int = 0) -> list[bytes]:
    return [ctypes.string_at(c[2], c[3]) for c in gpu.calls[since:] if c[0] == "cuMemcpyHtoDAsync"]


def test_a_root_input_copy_is_made_by_each_launch_ahead_of_the_graph(gpu: GpuStandIn) -> None:
    session = Session()
    exec_ = session.graph_instantiate(STEP)
    names = gpu.names()
    assert "cuGraphAddMemcpyNode" not in names and "cuGraphAddEmptyNode" in names
    start = len(gpu.calls)
    for i in range(SLOTS):
        session.graph_launch(exec_, Stream(5), [memoryview(b"step%04d" % i)])
    assert "cuEventSynchronize" not in gpu.names(start)  # queued: nothing waits
    assert _copies(gpu, start) == [b"step%04d" % i for i in range(SLOTS)]
    per_launch = gpu.names(start)[:3]
    assert per_launch == ["cuMemcpyHtoDAsync", "cuEventRecord", "cuGraphLaunch"]
    start = len(gpu.calls)
    session.graph_launch(exec_, Stream(5), [memoryview(b"stepLAST")])
    assert gpu.names(start)[0] == "cuEventQuery" and "cuEventSynchronize" in gpu.names(start)
    assert _copies(gpu, start) == [b"stepLAST"]  # into the oldest slot, once it was free
    assert session._fast_exec_state(exec_) is not None  # the C loop may launch it


def test_a_change_of_stream_waits_for_the_old_one_first(gpu: GpuStandIn) -> None:
    session = Session()
    exec_ = session.graph_instantiate(STEP)
    session.graph_launch(exec_, Stream(5), [memoryview(b"AAAAAAAA")])
    start = len(gpu.calls)
    session.graph_launch(exec_, Stream(6), [memoryview(b"BBBBBBBB")])
    names = gpu.names(start)
    assert names.index("cuStreamWaitEvent") < names.index("cuMemcpyHtoDAsync")
    recorded_on = next(c[2] for c in gpu.calls[start:] if c[0] == "cuEventRecord")
    assert int(recorded_on) == 5


def test_a_disabled_input_copy_is_skipped_and_its_exec_leaves_the_c_loop(
    gpu: GpuStandIn,
) -> None:
    session = Session()
    exec_ = session.graph_instantiate(STEP)
    made: Any = cuda_graphs.CudaGraphs._exec_of(session, exec_)
    session.graph_exec_set_enabled(exec_, 1, False)
    assert session._fast_exec_state(exec_) is None
    assert "cuGraphNodeSetEnabled" not in gpu.names()  # the empty node stays as it is
    start = len(gpu.calls)
    session.graph_launch(exec_, Stream(5), [memoryview(b"AAAAAAAA")])
    assert _copies(gpu, start) == [] and "cuGraphLaunch" in gpu.names(start)
    session.graph_exec_set_enabled(exec_, 1, True)
    assert session._fast_exec_state(exec_) == ctypes.addressof(made.ahead.state)
    session.graph_launch(exec_, Stream(5), [memoryview(b"CCCCCCCC")])
    assert _copies(gpu, start) == [b"CCCCCCCC"]
