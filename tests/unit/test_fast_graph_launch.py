"""The C loop of graph launch batches (cricket_server.backends.cuda.fast_graph_launch), with
stand-ins for the driver's functions: each launch's input bytes go into the exec's next slot,
its copies, the slot's event and cuGraphLaunch are called in stream order, a busy slot is
waited for, and what the loop does not handle (unknown handles, another input length, a
change of stream, a failed driver call) comes back at its index with the ring's state as the
Python path (graph_inputs.AheadInputs) expects it."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from test_fast_launch import _batch

from cricket_server.backends.cuda.fast_graph_launch import DRIVER_FUNCTIONS, FastGraphLauncher
from cricket_server.backends.cuda.graph_inputs import LaunchState, _Copy, _Slot

NOT_READY, LAUNCH_FAILED = 600, 719
EXEC, STREAM, OTHER_STREAM = 0xE000, 0x5000, 0x6000


def _launch(exec_: int, stream: int, data: bytes) -> bytes:
    n = len(data)
    return struct.pack(">QQI", exec_, stream, n) + data + b"\0" * (-n & 3)


class Driver:
    """Stand-ins for the five driver functions, recording each call in order; an event is
    'busy' (cuEventQuery answers NOT_READY) once recorded, until waited for."""

    def __init__(self, ffi: Any, fail_launch_at: int = -1) -> None:
        self.ffi = ffi
        self.calls: list[tuple[Any, ...]] = []
        self.busy: set[int] = set()
        self.launches = 0
        self.fail_launch_at = fail_launch_at
        self.table = ffi.new("cricket_graph_driver *")
        self._callbacks = {
            "launch": ffi.callback("cricket_graph_launch_fn", self._launch),
            "copy": ffi.callback("cricket_copy_fn", self._copy),
            "record": ffi.callback("cricket_record_fn", self._record),
            "query": ffi.callback("cricket_event_fn", self._query),
            "wait": ffi.callback("cricket_event_fn", self._wait),
        }
        for field, _name in DRIVER_FUNCTIONS:
            setattr(self.table, field, self._callbacks[field])

    def _int(self, pointer: Any) -> int:
        return int(self.ffi.cast("uintptr_t", pointer))

    def _launch(self, exec_: Any, stream: Any) -> int:
        number, self.launches = self.launches, self.launches + 1
        if number == self.fail_launch_at:
            return LAUNCH_FAILED
        self.calls.append(("launch", self._int(exec_), self._int(stream)))
        return 0

    def _copy(self, dst: int, src: Any, n: int, stream: Any) -> int:
        data = ctypes.string_at(self._int(src), n)
        self.calls.append(("copy", dst, data, self._int(stream)))
        return 0

    def _record(self, event: Any, stream: Any) -> int:
        self.busy.add(self._int(event))
        self.calls.append(("record", self._int(event)))
        return 0

    def _query(self, event: Any) -> int:
        return NOT_READY if self._int(event) in self.busy else 0

    def _wait(self, event: Any) -> int:
        self.busy.discard(self._int(event))
        self.calls.append(("wait", self._int(event)))
        return 0


class Ring:
    """A LaunchState of two input copies (4 and 2 bytes) and `slots` slots."""

    def __init__(self, slots: int = 2) -> None:
        self.memory = ctypes.create_string_buffer(6 * slots)
        self.slots = (_Slot * slots)()
        for i in range(slots):
            self.slots[i].host = ctypes.addressof(self.memory) + 6 * i
            self.slots[i].event = 0xEE0 + i
        self.copies = (_Copy * 2)()
        self.copies[0].device, self.copies[0].size, self.copies[0].offset = 0xD000, 4, 0
        self.copies[1].device, self.copies[1].size, self.copies[1].offset = 0xD100, 2, 4
        state = self.state = LaunchState()
        state.exec, state.in_total, state.ncopies, state.nslots = EXEC, 6, 2, slots
        state.copies = ctypes.cast(self.copies, ctypes.POINTER(_Copy))
        state.slots = ctypes.cast(self.slots, ctypes.POINTER(_Slot))


def _launcher(loop: tuple[Any, Any], drv: Driver, ring: Ring) -> FastGraphLauncher:
    ffi, lib = loop
    fast = FastGraphLauncher(ffi, lib, drv.table, state=lambda obj: ctypes.addressof(obj.state))
    fast.add_stream_raw(1, STREAM)
    fast.add_stream_raw(2, OTHER_STREAM)
    assert fast.add_exec(7, ring)
    return fast


def test_each_launch_copies_its_own_bytes_ahead_of_the_graph(loop: tuple[Any, Any]) -> None:
    drv, ring = Driver(loop[0]), Ring(slots=2)
    fast = _launcher(loop, drv, ring)
    body = _batch(_launch(7, 1, b"AAAABB"), _launch(7, 1, b"CCCCDD"), _launch(7, 1, b"EEEEFF"))
    assert fast.run(body, 0) == (3, 0)
    assert drv.calls == [
        ("copy", 0xD000, b"AAAA", STREAM), ("copy", 0xD100, b"BB", STREAM), ("record", 0xEE0),
        ("launch", EXEC, STREAM),
        ("copy", 0xD000, b"CCCC", STREAM), ("copy", 0xD100, b"DD", STREAM), ("record", 0xEE1),
        ("launch", EXEC, STREAM),
        ("wait", 0xEE0),  # both slots busy: the third launch waits for the oldest copy
        ("copy", 0xD000, b"EEEE", STREAM), ("copy", 0xD100, b"FF", STREAM), ("record", 0xEE0),
        ("launch", EXEC, STREAM),
    ]  # fmt: skip
    state = ring.state
    assert (state.next, state.started, state.last_stream) == (1, 1, STREAM)
    assert [ring.slots[i].used for i in range(2)] == [1, 1]


def test_what_the_loop_does_not_handle_comes_back_at_its_index(loop: tuple[Any, Any]) -> None:
    drv, ring = Driver(loop[0], fail_launch_at=1), Ring(slots=4)
    fast = _launcher(loop, drv, ring)
    body = _batch(
        _launch(7, 1, b"AAAABB"), _launch(7, 1, b"CCCCDD"),  # the driver refuses launch 1
        _launch(8, 1, b"GGGGHH"),  # exec 8 unknown
        _launch(7, 9, b"IIIIJJ"),  # stream 9 unknown
        _launch(7, 1, b"KKKK"),  # 4 input bytes, the exec takes 6
        _launch(7, 2, b"LLLLMM"),  # another stream than the last launch's
        _launch(7, 1, b"NNNNOO"),
    )  # fmt: skip
    assert fast.run(body, 0) == (1, LAUNCH_FAILED)
    for index in (2, 3, 4, 5):
        before = list(drv.calls)
        assert fast.run(body, index) == (index, 0)
        assert drv.calls == before  # nothing made, nothing changed
    assert ring.state.next == 2 and ring.state.last_stream == STREAM
    assert fast.run(body, 6) == (7, 0)
    assert [c[2] for c in drv.calls if c[0] == "copy"] == [b"AAAA", b"BB", b"CCCC", b"DD", b"NNNN", b"OO"]
    cut = _batch(_launch(7, 1, b"PPPPQQ"), _launch(7, 1, b"RRRRSS"))[:-3]
    assert fast.run(cut, 0) == (1, 0)  # a record cut inside launch 1: launch 0 made only
    assert fast.run(cut[:12], 0) == (0, 0)  # cut inside launch 0's head


def test_an_exec_without_host_memory_is_one_cuGraphLaunch(loop: tuple[Any, Any]) -> None:
    drv = Driver(loop[0])
    plain = LaunchState()
    plain.exec = 0xF000
    ffi, lib = loop
    fast = FastGraphLauncher(ffi, lib, drv.table, state=lambda obj: ctypes.addressof(obj))
    fast.add_stream_raw(1, STREAM)
    assert fast.add_exec(3, plain)
    assert fast.run(_batch(_launch(3, 1, b""), _launch(3, 1, b"")), 0) == (2, 0)
    assert drv.calls == [("launch", 0xF000, STREAM)] * 2
    refused = FastGraphLauncher(ffi, lib, drv.table, state=lambda obj: None)
    assert not refused.add_exec(3, plain)  # page-locked stages: the Python path's
