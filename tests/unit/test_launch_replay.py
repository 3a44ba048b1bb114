"""Repeated launch batches made as graphs (cricket_server.backends.cuda.launch_replay), with
stand-ins for the driver's graph functions: the second batch of one shape is built into a
chain of kernel nodes, later ones are one graph launch with changed parameters set on their
nodes, and everything that is not a repeat (another shape, another stream, a capture, a failed
graph, a stream whose attributes were set) is made launch by launch."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest
from test_fast_launch import LAUNCH_FAILED, Params, Recorder, _args, _batch

from cricket_server.backends.cuda import fast_launch
from cricket_server.backends.cuda.launch_replay import DRIVER_FUNCTIONS, BatchReplays

STREAM = 0x9000


class FakeGraphs:
    """A cricket_replay_driver of stand-ins: records graph building, parameter changes and
    launches; `capturing` and `fail` (a driver function's name -> CUresult) steer it."""

    def __init__(self, ffi: Any, sizes: dict[int, int]) -> None:
        self.ffi = ffi
        self.sizes = sizes
        self.nodes: list[tuple[int, int, bytes]] = []  # (function, grid x, parameter bytes)
        self.deps: list[list[int]] = []
        self.sets: list[tuple[int, bytes]] = []  # (node index, parameter bytes)
        self.launches: list[int] = []  # the stream of each graph launch
        self.destroyed = 0
        self.capturing = False
        self.fail: dict[str, int] = {}
        self._callbacks = [
            ffi.callback("int(void *, int *)", self._is_capturing),
            ffi.callback("int(void **, unsigned)", self._create),
            ffi.callback("int(void **, void *, void *const *, size_t, const cricket_kernel_node *)",
                         self._add),  # fmt: skip
            ffi.callback("int(void **, void *, unsigned long long)", self._instantiate),
            ffi.callback("int(void *, void *, const cricket_kernel_node *)", self._set),
            ffi.callback("int(void *, void *)", self._launch),
            ffi.callback("int(void *)", self._destroy),
            ffi.callback("int(void *)", lambda graph: 0),
        ]
        self.table = ffi.new("cricket_replay_driver *")
        for (field, _), fn in zip(DRIVER_FUNCTIONS, self._callbacks, strict=True):
            setattr(self.table, field, fn)

    def _as_int(self, pointer: Any) -> int:
        return int(self.ffi.cast("uintptr_t", pointer))

    def _bytes(self, p: Any) -> bytes:
        address = self._as_int(p.params)
        if not address:
            return b""
        first = self._as_int(self.ffi.cast("void **", p.params)[0])
        return ctypes.string_at(first, self.sizes[address])

    def _is_capturing(self, stream: Any, status: Any) -> int:
        status[0] = 1 if self.capturing else 0
        return 0

    def _create(self, graph: Any, flags: int) -> int:
        graph[0] = self.ffi.cast("void *", 0x6000)
        return self.fail.get("create", 0)

    def _add(self, node: Any, graph: Any, deps: Any, ndeps: int, p: Any) -> int:
        if self.fail.get("add_kernel"):
            return self.fail["add_kernel"]
        self.deps.append([self._as_int(deps[i]) for i in range(ndeps)])
        self.nodes.append((self._as_int(p.func), p.gx, self._bytes(p)))
        node[0] = self.ffi.cast("void *", 0x7000 + len(self.nodes) - 1)
        return 0

    def _instantiate(self, exec_: Any, graph: Any, flags: int) -> int:
        exec_[0] = self.ffi.cast("void *", 0x8000)
        return self.fail.get("instantiate", 0)

    def _set(self, exec_: Any, node: Any, p: Any) -> int:
        self.sets.append((self._as_int(node) - 0x7000, self._bytes(p)))
        return self.fail.get("set_kernel", 0)

    def _launch(self, exec_: Any, stream: Any) -> int:
        if self.fail.get("launch"):
            return self.fail["launch"]
        self.launches.append(self._as_int(stream))
        return 0

    def _destroy(self, exec_: Any) -> int:
        self.destroyed += 1
        return 0


class Rig:
    """A FastLauncher over a recording cuLaunchKernel, and BatchReplays over FakeGraphs: `send`
    makes a batch as the session does (a repeat, else the loop, then `made`)."""

    def __init__(self, loop: tuple[Any, Any]) -> None:
        ffi, lib = loop
        self.p = Params(8)
        self.rec = Recorder(ffi, {self.p.address: 8})
        self.graphs = FakeGraphs(ffi, {self.p.address: 8})
        self.fast = fast_launch.FastLauncher(ffi, lib, self.rec.fn)
        self.replays = BatchReplays(ffi, lib, self.graphs.table)

    def send(self, body: bytes) -> str:
        if self.replays.launch(body):
            return "graph"
        self.fast.reset()
        self.fast.add_function_raw(5, 0x5000, self.p.address, ctypes.addressof(self.p.memory), 8)
        self.fast.add_stream_raw(0, 1)
        self.fast.add_stream_raw(9, STREAM)
        index, err = self.fast.run(body, 0)
        if index == int.from_bytes(body[:4], "big") and err == 0:
            self.replays.made(body, self.fast)
        return "loop"


def _step(*params: bytes, stream: int = 9, grid: int = 4) -> bytes:
    return _batch(*(_args(5, stream, p, grid=grid) for p in params))


TEN = [bytes([65 + i]) * 8 for i in range(10)]


def _built(loop: tuple[Any, Any]) -> Rig:
    """A rig that made the ten-launch step twice: its graph is built."""
    rig = Rig(loop)
    rig.send(_step(*TEN))
    rig.send(_step(*TEN))
    return rig


def test_the_second_batch_of_a_shape_builds_a_chain_and_the_third_is_one_graph_launch(
    loop: tuple[Any, Any],
) -> None:
    rig = Rig(loop)
    assert rig.send(_step(*TEN)) == "loop"
    assert rig.graphs.nodes == []  # once is no repeat
    assert rig.send(_step(*TEN)) == "loop"
    # built from the second batch: one kernel node per launch, each after the one before
    assert rig.graphs.nodes == [(0x5000, 4, p) for p in TEN]
    assert rig.graphs.deps == [[]] + [[0x7000 + i] for i in range(9)]
    made_by_loop = len(rig.rec.made)
    assert rig.send(_step(*TEN)) == "graph"
    assert rig.graphs.launches == [STREAM] and rig.graphs.sets == []
    assert len(rig.rec.made) == made_by_loop  # no launch went one by one
    assert rig.replays.replayed == 1


def test_changed_parameters_are_set_on_their_nodes_only(loop: tuple[Any, Any]) -> None:
    rig = _built(loop)
    changed = list(TEN)
    changed[3] = b"step0003"
    assert rig.send(_step(*changed)) == "graph"
    assert rig.graphs.sets == [(3, b"step0003")]
    assert rig.send(_step(*changed)) == "graph"  # the node keeps them: nothing to set
    assert rig.graphs.sets == [(3, b"step0003")]
    changed[3], changed[9] = b"step0004", b"last0004"
    assert rig.send(_step(*changed)) == "graph"
    assert rig.graphs.sets[1:] == [(3, b"step0004"), (9, b"last0004")]
    assert len(rig.graphs.launches) == 3


def test_other_shapes_small_batches_and_two_streams_go_launch_by_launch(
    loop: tuple[Any, Any],
) -> None:
    rig = _built(loop)
    assert rig.send(_step(*TEN, grid=8)) == "loop"  # another grid: another shape
    assert rig.send(_step(*TEN[:9])) == "loop"  # fewer launches
    assert rig.send(_step(*TEN)) == "graph"  # the first shape still has its graph
    small = Rig(loop)
    for _ in range(3):
        assert small.send(_step(*TEN[:3])) == "loop"  # too few launches to be worth a graph
    assert small.graphs.nodes == []
    mixed = Rig(loop)
    two = _batch(*(_args(5, 9 if i % 2 else 0, p) for i, p in enumerate(TEN)))
    for _ in range(3):
        assert mixed.send(two) == "loop"  # one graph launch cannot go to two streams
    assert mixed.graphs.nodes == []


def test_a_capturing_stream_gets_its_launches_one_by_one(loop: tuple[Any, Any]) -> None:
    rig = _built(loop)
    rig.graphs.capturing = True
    made = len(rig.rec.made)
    assert rig.send(_step(*TEN)) == "loop"
    assert len(rig.rec.made) == made + 10 and rig.graphs.launches == []
    rig.graphs.capturing = False
    assert rig.send(_step(*TEN)) == "graph"


def test_a_failed_graph_launch_drops_the_graph_and_the_batch_goes_one_by_one(
    loop: tuple[Any, Any],
) -> None:
    rig = _built(loop)
    rig.graphs.fail["launch"] = LAUNCH_FAILED
    made = len(rig.rec.made)
    assert rig.send(_step(*TEN)) == "loop"
    assert len(rig.rec.made) == made + 10
    assert rig.graphs.destroyed == 1
    rig.graphs.fail.clear()
    assert rig.send(_step(*TEN)) == "loop"  # a new graph is built from the next repeat
    assert rig.send(_step(*TEN)) == "graph"


def test_a_shape_whose_graph_cannot_be_built_is_not_tried_again(loop: tuple[Any, Any]) -> None:
    rig = Rig(loop)
    rig.graphs.fail["instantiate"] = 1
    for _ in range(4):
        assert rig.send(_step(*TEN)) == "loop"
    assert len(rig.graphs.nodes) == 10  # built once, refused, never again
    rig.graphs.fail.clear()
    assert rig.send(_step(*TEN)) == "loop"


def test_clearing_and_stream_attributes_end_replays(loop: tuple[Any, Any]) -> None:
    rig = _built(loop)
    rig.replays.clear()  # a module unloaded, a function's attributes set, ...
    assert rig.graphs.destroyed == 1
    assert rig.send(_step(*TEN)) == "loop"
    rig.replays.stream_attributes_set(STREAM)
    for _ in range(3):
        assert rig.send(_step(*TEN)) == "loop"
    assert rig.send(_step(*TEN, stream=0)) == "loop"
    assert rig.send(_step(*TEN, stream=0)) == "loop"
    assert rig.send(_step(*TEN, stream=0)) == "graph"  # other streams still replay
    assert rig.graphs.launches == [1]


@pytest.mark.parametrize("module", ["launch_replay", "fast_graph_launch"])
def test_every_driver_function_the_tables_take_is_declared(module: str) -> None:
    """`driver_table` takes each function by name from the library's declarations."""
    import importlib
    import re

    functions = importlib.import_module(f"cricket_server.backends.cuda.{module}").DRIVER_FUNCTIONS
    for _field, name in functions:
        assert re.search(rf"\bint {name}\(", fast_launch.CDEF), name
