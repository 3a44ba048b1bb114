"""The cuda backend's pinned staging pool, over a fake driver: lent buffers are never reused,
waited on or freed while a view of them is alive."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import pytest

from cricket_server.backends.cuda import staging

MiB = 1 << 20


class FakeDriver:
    """Host allocations from ctypes; events that are always complete."""

    CU_MEMHOSTALLOC_PORTABLE = 1
    CUevent_flags = SimpleNamespace(CU_EVENT_DISABLE_TIMING=2)

    def __init__(self) -> None:
        self.blocks: dict[int, Any] = {}
        self.freed: list[int] = []

    def cuMemHostAlloc(self, size: int, flags: int) -> tuple[int, int]:
        block = ctypes.create_string_buffer(size)
        self.blocks[ctypes.addressof(block)] = block
        return 0, ctypes.addressof(block)

    def cuMemFreeHost(self, address: int) -> tuple[int]:
        self.freed.append(address)
        return (0,)

    def cuEventCreate(self, flags: int) -> tuple[int, object]:
        return 0, object()

    def cuEventRecord(self, event: object, stream: object) -> tuple[int]:
        return (0,)

    def cuEventQuery(self, event: object) -> tuple[int]:
        return (0,)

    def cuEventSynchronize(self, event: object) -> tuple[int]:
        return (0,)

    def cuEventDestroy(self, event: object) -> tuple[int]:
        return (0,)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    drv = FakeDriver()
    monkeypatch.setattr(staging, "driver", drv)
    monkeypatch.setattr(staging, "call", fake_call)
    return drv


def fake_call(fn: Any, *args: Any, what: str = "") -> Any:
    """`_driver.call` over the fake: the value, or None."""
    result = fn(*args)
    assert result[0] == 0
    return result[1] if len(result) > 1 else None


def fill(stager: staging.PinnedStager, size: int, byte: int) -> memoryview:
    buf = stager.acquire(size)
    assert buf is not None
    buf.view(size)[:] = bytes([byte]) * size
    return stager.lend(buf, size)


def test_a_lent_buffer_keeps_its_bytes_until_its_views_are_gone(fake: FakeDriver) -> None:
    stager = staging.PinnedStager(8 * MiB)
    first = fill(stager, MiB, 1)
    second = fill(stager, MiB, 2)
    assert first.readonly and bytes(first) == b"\x01" * MiB and bytes(second) == b"\x02" * MiB
    part = first[10:20]
    del first
    third = fill(stager, MiB, 3)  # the first buffer is still viewed through `part`
    assert bytes(part) == b"\x01" * 10
    del part, second, third
    buf = stager.acquire(MiB)
    assert buf is not None and len(stager._buffers) == 3  # an old buffer again, no new one


def test_a_pool_lent_out_entirely_gives_none_and_frees_nothing(fake: FakeDriver) -> None:
    stager = staging.PinnedStager(2 * MiB)
    views = [fill(stager, MiB, 1), fill(stager, MiB, 2)]
    assert stager.acquire(MiB) is None
    assert stager.acquire(2 * MiB) is None
    assert fake.freed == []
    assert [bytes(v[:1]) for v in views] == [b"\x01", b"\x02"]
    views.clear()
    assert stager.acquire(2 * MiB) is not None  # now smaller buffers may be evicted
