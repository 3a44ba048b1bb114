"""The session layer over the C loop of graph launch batches (SessionGraphBatches with a fake
backend whose C loop has stand-in driver functions): it makes the same launches in the same
order, and reports the same first failure, as the launch-by-launch path; an exec the loop
cannot launch is made by the Python path in its place in the batch."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from typing import Any

from test_fast_graph_launch import Driver
from test_session_fakes import FakeSession, make_manager

from cricket_server.backends.base import CUDA_ERROR_INVALID_HANDLE, CudaError
from cricket_server.backends.cuda.fast_graph_launch import FastGraphLauncher
from cricket_server.backends.cuda.graph_inputs import LaunchState
from cricket_server.launch_batch import decode_graph_launch_batch
from cricket_server.session import Session
from rpc_spec import cricket_rpc as proto

EMPTY = 5  # CU_GRAPH_NODE_TYPE_EMPTY


class FakeExec:
    """An exec of the fake backend; `state` None: one the C loop cannot launch."""

    def __init__(self, number: int, loop: bool) -> None:
        self.number = number
        self.state = LaunchState(exec=number) if loop else None


class GraphFake(FakeSession):
    """The fake backend session with graphs; with `loop`, with the C loop too. Every launch,
    whichever path made it, lands in `made` as (exec number, stream key)."""

    loop: tuple[Any, Any] | None = None

    def graph_instantiate(self, nodes: Sequence[Any]) -> object:
        execs = self.__dict__.setdefault("execs", [])
        execs.append(FakeExec(0xE000 + len(execs), loop=len(nodes) == 1))
        return execs[-1]

    def graph_launch(self, exec_: Any, stream: Any, host_in: Sequence[memoryview]) -> list[Any]:
        self.made.append(("launch", exec_.number, self.stream_key(stream)))
        self.__dict__.setdefault("by_python", []).append(exec_.number)
        return []

    @property
    def made(self) -> list[tuple[Any, ...]]:
        return self.__dict__.setdefault("_made", [])

    def stream_key(self, stream: Any) -> int:
        return 1 if stream is None else 0x5000 + stream[2]  # the stream's priority

    def fast_graph_launcher(self) -> Any:
        if self.loop is None:
            return None
        if "_fast" not in self.__dict__:
            ffi, lib = self.loop
            self._drv = Driver(ffi)
            self._drv.calls = self.made
            self._fast = FastGraphLauncher(
                ffi, lib, self._drv.table,
                state=lambda obj: None if obj.state is None else ctypes.addressof(obj.state),
                stream=self.stream_key,
            )  # fmt: skip
        self._fast.reset()
        return self._fast


def _graph(s: Session, nodes: int) -> int:
    graph = s.graph_create(0)
    for _ in range(nodes):
        s.graph_add_node(graph, [], proto.graph_node_params(EMPTY))
    return s.graph_instantiate(graph, 0)[0]


def _run(loop: tuple[Any, Any] | None) -> tuple[list[tuple[Any, ...]], str | None, list[int]]:
    manager, _backend = make_manager()
    s = manager.open("127.0.0.1:1", "client")
    GraphFake.loop = loop
    s.bsession.__class__ = GraphFake
    s.init(0)
    s.ctx_set_current(s.primary_ctx_retain(0))
    in_loop, in_python = _graph(s, 1), _graph(s, 2)
    stream = s.stream_create(0, 7)
    entries = [
        (in_loop, 0), (in_python, 0), (in_loop, stream), (in_loop | 0xFFF, 0),  # no such exec
        (in_loop, 0xBAD), (in_python, stream), (in_loop, 0),  # no such stream
    ]  # fmt: skip
    body = struct.pack(">I", len(entries)) + b"".join(
        struct.pack(">QQI", e, st, 0) for e, st in entries
    )
    error = None
    try:
        s.graph_launch_batch(decode_graph_launch_batch(body))
    except CudaError as e:
        assert e.code == CUDA_ERROR_INVALID_HANDLE
        error = e.message
    fake = s.bsession
    assert isinstance(fake, GraphFake)
    return fake.made, error, fake.__dict__.get("by_python", [])


def test_the_session_over_the_loop_makes_what_launch_by_launch_makes(
    loop: tuple[Any, Any],
) -> None:
    *slow, _ = _run(None)
    made, error, by_python = _run(loop)
    assert [made, error] == slow
    assert by_python == [0xE001, 0xE001]  # the exec the loop cannot launch, in its place
    execs = [number for _, number, _ in made]
    assert execs == [0xE000, 0xE001, 0xE000, 0xE001, 0xE000]
    assert [key for *_, key in made] == [1, 1, 0x5007, 0x5007, 1]
    assert error is not None and error.startswith("launch 4 of 7 in a batch: ")
