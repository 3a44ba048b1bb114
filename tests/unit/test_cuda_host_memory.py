"""The cuda backend's book of page-locked host ranges, over a stand-in for the driver calls
(no GPU here): what is registered is unregistered exactly once, with its own device's context
current, and addresses outside a registration are refused."""

from __future__ import annotations

import ctypes
import mmap
from types import SimpleNamespace
from typing import Any

import pytest

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.backends.cuda import host_memory
from cricket_server.backends.cuda.host_memory import HostRegistrations, buffer_address

CUDA_ERROR_NOT_PERMITTED = 800


class FakeDriver:
    """cuMemHostRegister/Unregister that record (call, address, size, current device)."""

    CU_MEMHOSTREGISTER_PORTABLE = 1

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.current: int | None = None
        self.refuse = False
        self.pinned: dict[int, int] = {}

        def cuMemHostRegister(p: int, size: int, flags: int) -> tuple[int]:
            if self.refuse:
                return (CUDA_ERROR_NOT_PERMITTED,)
            self.calls.append(("register", p, size, flags, self.current))
            self.pinned[p] = size
            return (0,)

        def cuMemHostUnregister(p: int) -> tuple[int]:
            self.calls.append(("unregister", p, self.current))
            if self.pinned.pop(p, None) is None:
                return (CUDA_ERROR_INVALID_VALUE,)
            return (0,)

        self.cuMemHostRegister = cuMemHostRegister
        self.cuMemHostUnregister = cuMemHostUnregister


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    drv = FakeDriver()
    monkeypatch.setattr(host_memory, "driver", drv)
    return drv


@pytest.fixture
def segment() -> Any:
    m = mmap.mmap(-1, 1 << 20)
    yield m
    m.close()


def book(fake: FakeDriver) -> HostRegistrations:
    def activate(dev: int) -> None:
        fake.current = dev

    return HostRegistrations(activate)


def test_buffer_address_is_the_mapping_and_leaves_it_closable() -> None:
    m = mmap.mmap(-1, 4096)
    view = memoryview(m)
    expected = ctypes.addressof(ctypes.c_char.from_buffer(m))  # temporary, released at once
    assert buffer_address(view) == expected
    assert buffer_address(view[100:200]) == expected + 100
    view.release()
    m.close()  # raises BufferError if an export were still held


def test_a_read_only_buffer_cannot_be_registered(fake: FakeDriver) -> None:
    with pytest.raises(CudaError, match="cuMemHostRegister: host memory not usable") as info:
        book(fake).register(memoryview(b"x" * 4096), 0)
    assert info.value.code == CUDA_ERROR_INVALID_VALUE
    assert fake.calls == []


def test_register_then_unregister_once_with_its_device_current(
    fake: FakeDriver, segment: mmap.mmap
) -> None:
    regs = book(fake)
    view = memoryview(segment)
    token = regs.register(view, 1)
    base = buffer_address(view)
    assert fake.calls == [("register", base, 1 << 20, 1, 1)]
    assert regs.address("cuMemcpyHtoD", token, 4096, 100) == base + 4096
    fake.current = 0
    regs.unregister(token)
    regs.unregister(token)  # a second time: nothing
    assert fake.calls[1:] == [("unregister", base, 1)]
    assert fake.pinned == {} and len(regs) == 0
    view.release()


def test_spans_outside_a_registration_and_foreign_tokens_are_refused(
    fake: FakeDriver, segment: mmap.mmap
) -> None:
    regs = book(fake)
    view = memoryview(segment)
    token = regs.register(view, 0)
    with pytest.raises(CudaError, match="bytes 1048000..1048677 outside the 1048576-byte"):
        regs.address("cuMemcpyDtoH", token, 1048000, 677)
    with pytest.raises(CudaError, match="cuMemcpyHtoD: host memory .* is not registered"):
        regs.address("cuMemcpyHtoD", SimpleNamespace(address=buffer_address(view)), 0, 1)
    regs.unregister(token)
    with pytest.raises(CudaError, match="is not registered with this session"):
        regs.address("cuMemcpyHtoD", token, 0, 1)
    view.release()


def test_release_all_unregisters_what_is_left_and_later_unregisters_do_nothing(
    fake: FakeDriver,
) -> None:
    maps = [mmap.mmap(-1, 1 << 16) for _ in range(3)]
    regs = book(fake)
    tokens = [regs.register(memoryview(m), i) for i, m in enumerate(maps)]
    regs.unregister(tokens[0])
    assert regs.release_all() == []
    assert fake.pinned == {}
    unregistered = [c for c in fake.calls if c[0] == "unregister"]
    assert sorted(c[2] for c in unregistered) == [0, 1, 2]  # each with its own device current
    regs.unregister(tokens[1])  # the segment closes after the session: nothing more
    assert len([c for c in fake.calls if c[0] == "unregister"]) == 3
    for m in maps:
        m.close()


def test_a_refusal_is_a_cuda_error_and_nothing_is_kept(
    fake: FakeDriver, segment: mmap.mmap
) -> None:
    fake.refuse = True
    regs = book(fake)
    view = memoryview(segment)
    with pytest.raises(CudaError, match="cuMemHostRegister") as info:
        regs.register(view, 0)
    assert info.value.code == CUDA_ERROR_NOT_PERMITTED
    assert len(regs) == 0 and regs.release_all() == []
    view.release()
