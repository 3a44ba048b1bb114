"""The cuda backend's pinned stages of an exec's client host memory, over a stand-in driver
whose events stay busy until the test says the GPU is done: queued launches do not wait for
earlier ones (each fills an idle stage and points the host nodes there), the bytes of a launch
in flight are never overwritten, and only a launch that finds every stage busy waits."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import pytest

real = pytest.importorskip("cuda.bindings.driver")

from cricket_server.backends.cuda import graph_staging  # noqa: E402
from cricket_server.backends.cuda import graphs as cuda_graphs  # noqa: E402
from cricket_server.backends.cuda.graph_staging import MAX_STAGES  # noqa: E402
from cricket_server.backends.cuda.graphs import CudaGraphs  # noqa: E402
from cricket_server.graphs import ExecNode  # noqa: E402

NOT_READY = 600


@pytest.fixture(autouse=True)
def ring_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the ring (CRICKET_GRAPH_STAGES above 1; one stage is the default)."""
    monkeypatch.setenv(graph_staging.STAGES_ENV, str(MAX_STAGES))


class Event:
    def __init__(self) -> None:
        self.busy = False

    def __int__(self) -> int:
        return id(self)


class Handle(str):
    """A made object's name, which converts to a number as the driver's handles do."""

    def __int__(self) -> int:
        return hash(self) & 0xFFFFFFFF


class GpuStandIn:
    """Graph, event and pinned-memory calls; recorded launches stay in flight until `finish`."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.pinned: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self.events: list[Event] = []
        self.seen: list[bytes] = []  # what each launch's host-to-device node would read
        self.next = 100

    def __getattr__(self, name: str) -> Any:
        if name.startswith("cu"):
            def fn(*args: Any) -> tuple[Any, ...]:
                self.calls.append((name, *args))
                return getattr(self, "_" + name, self._made)(name, *args)

            fn.__name__ = name
            return fn
        return getattr(real, name)

    def _made(self, name: str, *args: Any) -> tuple[Any, ...]:
        self.next += 1
        if name.startswith(("cuGraphAdd", "cuGraphCreate", "cuGraphInstantiate")):
            return (0, Handle(f"{name}#{self.next}"))
        return (0,)

    def _cuMemHostAlloc(self, name: str, size: int, flags: int) -> tuple[Any, ...]:
        buf = ctypes.create_string_buffer(size)
        self.pinned[ctypes.addressof(buf)] = buf
        return (0, ctypes.addressof(buf))

    def _cuMemFreeHost(self, name: str, address: int) -> tuple[Any, ...]:
        del self.pinned[address]
        return (0,)

    def _cuEventCreate(self, name: str, flags: Any) -> tuple[Any, ...]:
        self.events.append(Event())
        return (0, self.events[-1])

    def _cuEventRecord(self, name: str, event: Event, stream: Any) -> tuple[Any, ...]:
        event.busy = True
        return (0,)

    def _cuEventQuery(self, name: str, event: Event) -> tuple[Any, ...]:
        return (NOT_READY if event.busy else 0,)

    def _cuEventSynchronize(self, name: str, event: Event) -> tuple[Any, ...]:
        event.busy = False  # waited until the GPU got there
        return (0,)

    def _cuGraphLaunch(self, name: str, exec_: Any, stream: Any) -> tuple[Any, ...]:
        self.seen.append(ctypes.string_at(self.source, 8))
        return (0,)

    def _cuGraphExecMemcpyNodeSetParams(self, name: str, *args: Any) -> tuple[Any, ...]:
        self.source = int(args[2].srcHost)
        return (0,)

    def finish(self) -> None:
        for e in self.events:
            e.busy = False

    def names(self, since: int = 0) -> list[str]:
        return [c[0] for c in self.calls[since:]]


class Session(CudaGraphs):
    def __init__(self) -> None:
        self._layouts = SimpleNamespace(buffer=lambda func: SimpleNamespace(fill=lambda p: 0))
        self.context = SimpleNamespace(handle="ctx")

    def _state(self) -> Any:
        return SimpleNamespace(context=self.context)

    def _stream(self, stream: Any) -> Any:
        return stream or "legacy"


Session.__abstractmethods__ = frozenset()


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> GpuStandIn:
    fake = GpuStandIn()
    monkeypatch.setattr(cuda_graphs, "driver", fake)
    monkeypatch.setattr(graph_staging, "driver", fake)
    return fake


KERNEL = (real.CUfunction(0x55), (1, 1, 1), (32, 1, 1), 0, b"\x01" * 8)
STEP = [  # a step whose input copy follows a kernel (so it cannot be copied ahead): a kernel,
    # input bytes in, a kernel
    ExecNode(0, 0, (), kernel=KERNEL),
    ExecNode(1, 1, (0,), copy=(False, 0x7000, True, 0, 8)),
    ExecNode(2, 0, (1,), kernel=KERNEL),
]


def _made(gpu: GpuStandIn, session: Session, nodes: list[ExecNode]) -> Any:
    exec_ = session.graph_instantiate(nodes)
    gpu.source = next(int(c[4].srcHost) for c in gpu.calls if c[0] == "cuGraphAddMemcpyNode")
    return exec_


def test_queued_launches_do_not_wait_for_the_launches_before_them(gpu: GpuStandIn) -> None:
    session = Session()
    exec_ = _made(gpu, session, STEP)
    start = len(gpu.calls)
    for i in range(MAX_STAGES):
        session.graph_launch(exec_, "s", [memoryview(b"step%04d" % i)])
    assert "cuEventSynchronize" not in gpu.names(start)  # the GPU is still busy with all
    assert gpu.seen == [b"step%04d" % i for i in range(MAX_STAGES)]
    assert len(gpu.pinned) == MAX_STAGES  # one stage per launch in flight
    # each launch after the first pointed the host node at a stage of its own
    sources = [int(c[3].srcHost) for c in gpu.calls if c[0] == "cuGraphExecMemcpyNodeSetParams"]
    assert len(set(sources)) == MAX_STAGES - 1 and set(sources) <= set(gpu.pinned)
    # the bytes of every launch in flight are still where its node reads them
    assert sorted(ctypes.string_at(a, 8) for a in gpu.pinned) == sorted(gpu.seen)


def test_a_launch_waits_only_when_every_stage_is_busy(gpu: GpuStandIn) -> None:
    session = Session()
    exec_ = _made(gpu, session, STEP)
    for i in range(MAX_STAGES):
        session.graph_launch(exec_, "s", [memoryview(b"step%04d" % i)])
    start = len(gpu.calls)
    session.graph_launch(exec_, "s", [memoryview(b"step9999")])
    waited = [c[1] for c in gpu.calls[start:] if c[0] == "cuEventSynchronize"]
    assert waited == [gpu.events[0]]  # the oldest launch, whose stage it then reuses
    assert gpu.seen[-1] == b"step9999" and len(gpu.pinned) == MAX_STAGES


def test_launches_the_gpu_kept_up_with_stay_on_one_stage(gpu: GpuStandIn) -> None:
    session = Session()
    exec_ = _made(gpu, session, STEP)
    start = len(gpu.calls)
    for i in range(10):
        session.graph_launch(exec_, "s", [memoryview(b"step%04d" % i)])
        gpu.finish()
    names = gpu.names(start)
    assert "cuGraphExecMemcpyNodeSetParams" not in names and "cuEventSynchronize" not in names
    assert len(gpu.pinned) == 1 and gpu.seen[-1] == b"step0009"


def test_results_come_from_the_stage_of_their_launch(gpu: GpuStandIn) -> None:
    session = Session()
    nodes = [*STEP, ExecNode(3, 1, (2,), copy=(True, 0, False, 0x7000, 4))]
    exec_ = _made(gpu, session, nodes)
    out_node = [c for c in gpu.calls if c[0] == "cuGraphAddMemcpyNode"][1][4]
    ctypes.memmove(int(out_node.dstHost), b"TOKN", 4)  # what the device wrote back
    assert session.graph_launch(exec_, "s", [memoryview(b"step0000")]) == [b"TOKN"]
    assert gpu.names()[-3:] == ["cuGraphLaunch", "cuEventRecord", "cuEventSynchronize"]


def test_host_nodes_inside_conditional_bodies_keep_one_stage(gpu: GpuStandIn) -> None:
    session = Session()
    body = (ExecNode((9, 1), 1, (), copy=(False, 0x7000, True, 0, 8)),)
    nodes = [ExecNode(9, 13, (), conditional=(0xC04D << 48, 0, 1, 1, (body,)))]
    gpu.__dict__["_cuGraphConditionalHandleCreate"] = lambda name, *a: (0, 77)
    gpu.__dict__["_cuGraphAddNode"] = lambda name, *a: (0, "cond")
    gpu.source = 0
    real_params = real.CUgraphNodeParams

    class Params:  # phGraph_out: one body graph
        def __init__(self) -> None:
            self.type = None
            self.conditional = SimpleNamespace(phGraph_out=["body"])

    gpu.__dict__["CUgraphNodeParams"] = Params
    try:
        exec_ = session.graph_instantiate(nodes)
    finally:
        gpu.__dict__["CUgraphNodeParams"] = real_params
    gpu.source = next(int(c[4].srcHost) for c in gpu.calls if c[0] == "cuGraphAddMemcpyNode")
    session.graph_launch(exec_, "s", [memoryview(b"first...")])
    start = len(gpu.calls)
    session.graph_launch(exec_, "s", [memoryview(b"second..")])  # the first still runs
    assert "cuEventSynchronize" in gpu.names(start)
    assert "cuGraphExecMemcpyNodeSetParams" not in gpu.names(start)
    assert len(gpu.pinned) == 1


def test_a_driver_that_will_not_repoint_host_nodes_makes_launches_wait(gpu: GpuStandIn) -> None:
    session = Session()
    exec_ = _made(gpu, session, STEP)
    gpu.__dict__["_cuGraphExecMemcpyNodeSetParams"] = lambda name, *a: (1,)  # INVALID_VALUE
    for i in range(3):
        start = len(gpu.calls)
        session.graph_launch(exec_, "s", [memoryview(b"step%04d" % i)])
        if i:  # the launch before is still in flight: waited for, same stage
            assert "cuEventSynchronize" in gpu.names(start)
    assert gpu.seen == [b"step%04d" % i for i in range(3)]
    assert gpu.names().count("cuGraphExecMemcpyNodeSetParams") == 1  # tried once


def test_by_default_an_exec_keeps_one_stage_and_a_launch_waits_for_the_previous(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(graph_staging.STAGES_ENV)
    assert graph_staging.stage_limit() == 1
    monkeypatch.setenv(graph_staging.STAGES_ENV, "9")
    with pytest.raises(ValueError, match="CRICKET_GRAPH_STAGES='9'"):
        graph_staging.stage_limit()
