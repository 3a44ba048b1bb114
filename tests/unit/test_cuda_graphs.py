"""The cuda backend's graph execs over a stand-in for the driver's graph calls (no GPU here),
with cuda-python's real parameter structs: nodes are added with their dependencies and the
fields CUDA reads, host memory nodes get page-locked buffers that each launch fills and reads,
and destroying an exec frees what it holds."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import pytest

real = pytest.importorskip("cuda.bindings.driver")

from test_cuda_graph_staging import Handle  # noqa: E402

from cricket_server.backends.cuda import graph_staging  # noqa: E402
from cricket_server.backends.cuda import graphs as cuda_graphs  # noqa: E402
from cricket_server.backends.cuda.graphs import CudaGraphs  # noqa: E402
from cricket_server.graphs import ExecNode  # noqa: E402


class FakeDriver:
    """The graph calls CudaGraphs makes, recording them; structs and enums are cuda-python's."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.pinned: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self.launched: list[Any] = []
        self.made: list[str] = []  # what each cuGraphAdd*Node returned, in order
        self.next = 100

    def __getattr__(self, name: str) -> Any:
        if name.startswith("cu"):
            def fn(*args: Any) -> tuple[Any, ...]:
                return self._call(name, *args)

            fn.__name__ = name
            return fn
        return getattr(real, name)  # structs, enums, CUdeviceptr, ...

    def _call(self, name: str, *args: Any) -> tuple[Any, ...]:
        self.calls.append((name, *args))
        self.next += 1
        if name == "cuMemHostAlloc":
            buf = ctypes.create_string_buffer(args[0])
            self.pinned[ctypes.addressof(buf)] = buf
            return (0, ctypes.addressof(buf))
        if name == "cuMemFreeHost":
            del self.pinned[args[0]]
            return (0,)
        if name.startswith(("cuGraphAdd", "cuGraphCreate", "cuGraphInstantiate", "cuEventCreate")):
            made = Handle(f"{name}#{self.next}")
            if name.startswith("cuGraphAdd"):
                self.made.append(made)
            return (0, made)
        if name == "cuGraphLaunch":
            self.launched.append(args[0])
        return (0,)


class Buffer:
    def fill(self, params: memoryview) -> int:
        self.last = bytes(params)
        return 0x1234


class Session(CudaGraphs):
    def __init__(self) -> None:
        self._layouts = SimpleNamespace(buffer=lambda func: Buffer())
        self.context = SimpleNamespace(handle="ctx")

    def _state(self) -> Any:
        return SimpleNamespace(context=self.context)

    def _stream(self, stream: Any) -> Any:
        return stream or "legacy"


Session.__abstractmethods__ = frozenset()  # only the graph methods are under test


@pytest.fixture
def drv(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    fake = FakeDriver()
    monkeypatch.setattr(cuda_graphs, "driver", fake)
    monkeypatch.setattr(graph_staging, "driver", fake)
    return fake


NODES = [
    ExecNode(1, 1, (), copy=(False, 0x7000, True, 0, 8)),  # host -> device (input 0)
    ExecNode(2, 2, (), set=(0x8000, 64, 7, 4, 16, 2)),
    ExecNode(3, 0, (1, 2), kernel=(real.CUfunction(0x55), (2, 1, 1), (32, 1, 1), 0, b"\x01" * 16)),
    ExecNode(4, 1, (3,), copy=(True, 0, False, 0x7000, 8)),  # device -> host (output 0)
    ExecNode(5, 7, (4,), event="event"),
]


def test_nodes_are_added_with_their_dependencies_and_fields(drv: FakeDriver) -> None:
    session = Session()
    session.graph_instantiate(NODES)
    adds = [c for c in drv.calls if c[0].startswith("cuGraphAdd")]
    assert [c[0] for c in adds] == [
        "cuGraphAddMemcpyNode", "cuGraphAddMemsetNode", "cuGraphAddKernelNode",
        "cuGraphAddMemcpyNode", "cuGraphAddEventRecordNode",
    ]
    memcpy_in, memset, kernel, memcpy_out, record = adds
    assert kernel[2] == drv.made[:2] and kernel[3] == 2  # the nodes made for keys 1 and 2
    assert memcpy_out[2] == [drv.made[2]] and record[2] == [drv.made[3]]
    k = kernel[4]
    assert isinstance(k, real.CUDA_KERNEL_NODE_PARAMS)
    assert (k.gridDimX, k.blockDimX, k.sharedMemBytes) == (2, 32, 0)
    p = memcpy_in[4]
    assert isinstance(p, real.CUDA_MEMCPY3D)
    assert p.srcMemoryType == real.CUmemorytype.CU_MEMORYTYPE_HOST
    assert int(p.dstDevice) == 0x7000 and p.WidthInBytes == 8 and memcpy_in[5] == "ctx"
    assert int(p.srcHost) in drv.pinned
    s = memset[4]
    assert (int(s.dst), s.pitch, s.value, s.elementSize, s.width, s.height) == (0x8000, 64, 7, 4, 16, 2)
    assert record[4] == "event"
    assert memcpy_out[4].dstMemoryType == real.CUmemorytype.CU_MEMORYTYPE_HOST


def test_a_launch_fills_and_reads_the_pinned_buffers(drv: FakeDriver) -> None:
    session = Session()
    exec_ = session.graph_instantiate(NODES)
    in_addr = next(int(c[4].srcHost) for c in drv.calls if c[0] == "cuGraphAddMemcpyNode")
    out_addr = [int(c[4].dstHost) for c in drv.calls if c[0] == "cuGraphAddMemcpyNode"][1]
    ctypes.memmove(out_addr, b"ABCDEFGH", 8)  # what the device copied back
    out = session.graph_launch(exec_, None, [memoryview(b"12345678")])
    assert ctypes.string_at(in_addr, 8) == b"12345678"
    assert out == [b"ABCDEFGH"]
    names = [c[0] for c in drv.calls]
    assert names[-3:] == ["cuGraphLaunch", "cuEventRecord", "cuEventSynchronize"]
    session.graph_launch(exec_, None, [memoryview(b"abcdefgh")])
    # the first launch is done (the stand-in's events are): the second refills the same stage
    assert ctypes.string_at(in_addr, 8) == b"abcdefgh"


def test_destroying_an_exec_frees_what_it_holds(drv: FakeDriver) -> None:
    session = Session()
    exec_ = session.graph_instantiate(NODES)
    assert len(drv.pinned) == 1  # one stage holds the input and the output
    session.graph_exec_destroy(exec_)
    assert drv.pinned == {}
    names = [c[0] for c in drv.calls]
    assert {"cuGraphExecDestroy", "cuGraphDestroy", "cuEventDestroy"} <= set(names)
    assert session.close_graphs() == []


def test_a_kernel_node_update_sets_the_exec_node(drv: FakeDriver) -> None:
    session = Session()
    exec_ = session.graph_instantiate(NODES)
    node = ExecNode(3, 0, (), kernel=(real.CUfunction(0x55), (4, 1, 1), (64, 1, 1), 0, b"\x02" * 16))
    session.graph_exec_set_node(exec_, node)
    call = drv.calls[-1]
    assert call[0] == "cuGraphExecKernelNodeSetParams"
    assert call[3].gridDimX == 4 and call[3].blockDimX == 64
