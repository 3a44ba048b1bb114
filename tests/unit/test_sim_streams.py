"""Stream and event semantics of the sim backend, made observable with the `wait_flag` kernel.

`wait_flag(flag, done)` spins until *flag != 0: a stream running it stays busy until the test
sets the flag from a non-blocking stream, so NOT_READY states are deterministic.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_READY,
    PER_THREAD_STREAM,
    CudaError,
)
from cricket_server.backends.sim import SimBackend
from cricket_server.backends.sim.streams import (
    CU_EVENT_DISABLE_TIMING,
    CU_EVENT_INTERPROCESS,
    CU_STREAM_NON_BLOCKING,
)
from cricket_server.memory import AddressArena, DeviceHeap

pytestmark = pytest.mark.timeout(60)  # a broken ordering would hang, not fail

KERNELS = Path(__file__).resolve().parents[1] / "kernels"


class Gate:
    """A `wait_flag` launch that holds a stream until `open()`."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.flag = rig.zeros(4)
        self.done = rig.zeros(4)
        self.releaser = rig.session.stream_create(CU_STREAM_NON_BLOCKING, 0)

    def hold(self, stream: object | None) -> None:
        self.rig.launch("wait_flag", struct.pack("<QQ", self.flag, self.done), stream)

    def open(self) -> None:
        self.rig.session.memcpy_htod(self.flag, memoryview(struct.pack("<i", 1)), self.releaser)

    def passed(self) -> bool:
        return self.rig.read_i32(self.done, self.releaser) == 1


class Rig:
    def __init__(self) -> None:
        self.backend = SimBackend(total_mem=1 << 30)
        self.session = self.backend.open_session()
        self.session.set_device(0)
        self.heap = DeviceHeap(
            AddressArena(*self.backend.address_space()), self.session.chunk_backing(0)
        )
        self.module = self.session.module_load(
            (KERNELS / "test_kernels.sm_90.cubin").read_bytes(), {}
        )

    def zeros(self, size: int) -> int:
        ptr = self.heap.alloc(size)
        self.session.memset(ptr, 0, 1, size, None)
        self.session.synchronize()
        return ptr

    def launch(
        self, name: str, params: bytes, stream: object | None, grid: int = 1, block: int = 1
    ) -> None:
        func = self.session.module_get_function(self.module, name)
        self.session.launch(func, (grid, 1, 1), (block, 1, 1), 0, stream, memoryview(params))

    def fill(self, ptr: int, value: int, count: int, stream: object | None) -> None:
        self.launch("fill_u32", struct.pack("<QI4xQ", ptr, value, count), stream, 1, 32)

    def read_i32(self, ptr: int, stream: object | None) -> int:
        return struct.unpack("<i", self.session.memcpy_dtoh(ptr, 4, stream))[0]

    def close(self) -> None:
        self.heap.release_all()
        self.session.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    rig = Rig()
    yield rig
    rig.close()


@pytest.fixture
def gate(rig: Rig) -> Gate:
    return Gate(rig)


def test_busy_stream_and_its_events_are_not_ready(rig: Rig, gate: Gate) -> None:
    s = rig.session
    stream = s.stream_create(CU_STREAM_NON_BLOCKING, 0)
    before, after = s.event_create(0), s.event_create(0)
    s.event_record(before, stream)
    gate.hold(stream)
    s.event_record(after, stream)
    s.event_synchronize(before)
    assert s.event_query(before) is True
    assert s.stream_query(stream) is False
    assert s.event_query(after) is False
    with pytest.raises(CudaError) as err:
        s.event_elapsed_time(before, after)
    assert err.value.code == CUDA_ERROR_NOT_READY
    gate.open()
    s.stream_synchronize(stream)
    assert s.stream_query(stream) is True and s.event_query(after) is True
    assert gate.passed()
    assert s.event_elapsed_time(before, after) > 0


def test_work_in_one_stream_runs_in_issue_order(rig: Rig) -> None:
    s = rig.session
    stream = s.stream_create(0, 0)
    buf = rig.heap.alloc(64)
    s.memset(buf, 1, 4, 16, stream)
    rig.fill(buf, 2, 8, stream)
    s.memcpy_htod(buf + 4, memoryview(struct.pack("<I", 3)), stream)
    s.memcpy_dtod(buf + 60, buf, 4, stream)
    out = np.frombuffer(bytes(s.memcpy_dtoh(buf, 64, stream)), np.uint32)
    assert list(out) == [2, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 2]


def test_legacy_stream_waits_for_blocking_streams(rig: Rig, gate: Gate) -> None:
    s = rig.session
    blocking = s.stream_create(0, 0)
    buf = rig.zeros(4)
    gate.hold(blocking)
    rig.fill(buf, 5, 1, None)  # legacy stream: must wait for the gate
    assert s.stream_query(None) is False
    assert rig.read_i32(buf, gate.releaser) == 0
    gate.open()
    s.stream_synchronize(None)
    assert rig.read_i32(buf, gate.releaser) == 5


def test_blocking_streams_wait_for_the_legacy_stream(rig: Rig, gate: Gate) -> None:
    s = rig.session
    blocking = s.stream_create(0, 0)
    non_blocking = s.stream_create(CU_STREAM_NON_BLOCKING, 0)
    a, b = rig.zeros(4), rig.zeros(4)
    gate.hold(None)
    rig.fill(a, 1, 1, blocking)
    rig.fill(b, 2, 1, non_blocking)
    s.stream_synchronize(non_blocking)  # non-blocking streams do not wait for legacy work
    assert rig.read_i32(b, gate.releaser) == 2
    assert s.stream_query(blocking) is False
    assert rig.read_i32(a, gate.releaser) == 0
    gate.open()
    s.stream_synchronize(blocking)
    assert rig.read_i32(a, gate.releaser) == 1


def test_per_thread_stream_is_ordered_after_legacy_work(rig: Rig, gate: Gate) -> None:
    s = rig.session
    buf = rig.zeros(4)
    gate.hold(None)
    rig.fill(buf, 8, 1, PER_THREAD_STREAM)
    assert s.stream_query(PER_THREAD_STREAM) is False
    gate.open()
    s.stream_synchronize(PER_THREAD_STREAM)
    assert rig.read_i32(buf, gate.releaser) == 8


def test_stream_wait_event(rig: Rig, gate: Gate) -> None:
    s = rig.session
    producer = s.stream_create(CU_STREAM_NON_BLOCKING, 0)
    consumer = s.stream_create(CU_STREAM_NON_BLOCKING, 0)
    ready = s.event_create(CU_EVENT_DISABLE_TIMING)
    buf = rig.zeros(4)
    gate.hold(producer)
    s.event_record(ready, producer)
    s.stream_wait_event(consumer, ready, 0)
    rig.fill(buf, 9, 1, consumer)
    assert s.stream_query(consumer) is False
    # a later record does not change what the consumer already waits for
    gate.open()
    s.stream_synchronize(consumer)
    assert rig.read_i32(buf, gate.releaser) == 9
    with pytest.raises(CudaError) as err:
        s.stream_wait_event(consumer, ready, 0x80)
    assert err.value.code == CUDA_ERROR_INVALID_VALUE


def test_waiting_for_an_unrecorded_event_does_nothing(rig: Rig) -> None:
    s = rig.session
    stream = s.stream_create(0, 0)
    never = s.event_create(0)
    assert s.event_query(never) is True
    s.event_synchronize(never)
    s.stream_wait_event(stream, never, 0)
    s.stream_synchronize(stream)


def test_elapsed_time_rules(rig: Rig) -> None:
    s = rig.session
    start, end = s.event_create(0), s.event_create(0)
    untimed = s.event_create(CU_EVENT_DISABLE_TIMING)
    never = s.event_create(0)
    n = 1 << 20
    src = rig.heap.alloc(4 * n)
    s.event_record(start, None)
    rig.fill(src, 1, n, None)
    s.event_record(end, None)
    s.event_record(untimed, None)
    s.event_synchronize(end)
    assert s.event_elapsed_time(start, end) > 0
    assert s.event_elapsed_time(end, start) < 0
    for first, second in ((start, untimed), (untimed, end), (start, never)):
        with pytest.raises(CudaError) as err:
            s.event_elapsed_time(first, second)
        assert err.value.code == CUDA_ERROR_INVALID_HANDLE


def test_event_and_stream_flags(rig: Rig) -> None:
    s = rig.session
    with pytest.raises(CudaError):
        s.event_create(CU_EVENT_INTERPROCESS)  # needs DISABLE_TIMING
    s.event_create(CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)
    with pytest.raises(CudaError):
        s.stream_create(0x10, 0)
    with pytest.raises(CudaError) as err:
        s.stream_destroy(None)
    assert err.value.code == CUDA_ERROR_INVALID_HANDLE


def test_destroyed_stream_finishes_its_work(rig: Rig, gate: Gate) -> None:
    s = rig.session
    stream = s.stream_create(CU_STREAM_NON_BLOCKING, 0)
    buf = rig.zeros(4)
    gate.hold(stream)
    rig.fill(buf, 4, 1, stream)
    s.stream_destroy(stream)
    with pytest.raises(CudaError) as err:
        s.stream_query(stream)
    assert err.value.code == CUDA_ERROR_INVALID_HANDLE
    gate.open()
    s.synchronize()  # waits for the destroyed stream's queued work too
    assert gate.passed()
    assert rig.read_i32(buf, None) == 4


def test_context_synchronize_waits_for_every_stream(rig: Rig, gate: Gate) -> None:
    s = rig.session
    streams = [s.stream_create(CU_STREAM_NON_BLOCKING, 0) for _ in range(3)]
    bufs = [rig.zeros(4) for _ in streams]
    for i, (stream, buf) in enumerate(zip(streams, bufs, strict=True)):
        rig.fill(buf, i + 1, 1, stream)
    s.synchronize()
    assert [rig.read_i32(b, None) for b in bufs] == [1, 2, 3]


def test_close_with_a_kernel_still_spinning(rig: Rig, gate: Gate) -> None:
    stream = rig.session.stream_create(CU_STREAM_NON_BLOCKING, 0)
    gate.hold(stream)
    rig.session.close()  # cancels the spinning kernel instead of hanging
