"""Host copies split over threads give exactly the bytes of one slice assignment."""

from __future__ import annotations

import random

import pytest

from cricket_client.datapath import memcopy


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize(
    "size", [0, 1, memcopy.MIN_PART - 1, 2 * memcopy.MIN_PART, 5 * memcopy.MIN_PART + 7]
)
def test_copy_is_exact(size: int, threads: int) -> None:
    src = random.Random(size).randbytes(size)  # read-only source, as a client's bytes
    dst = bytearray(b"\xee" * size)
    memcopy.copy(memoryview(dst), memoryview(src), threads)
    assert dst == src


def test_copy_into_part_of_a_larger_buffer_leaves_the_rest() -> None:
    ring = bytearray(b"\xaa" * (8 * memcopy.MIN_PART))
    data = random.Random(1).randbytes(3 * memcopy.MIN_PART + 5)
    at = memcopy.MIN_PART + 3
    memcopy.copy(memoryview(ring)[at : at + len(data)], data, 4)
    assert ring[at : at + len(data)] == data
    assert ring[:at] == b"\xaa" * at and set(ring[at + len(data) :]) == {0xAA}


def test_without_numpy_it_is_one_slice_assignment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memcopy, "_np", None)
    data = random.Random(2).randbytes(3 * memcopy.MIN_PART)
    dst = bytearray(len(data))
    memcopy.copy(memoryview(dst), data, 4)
    assert dst == data


def test_thread_count_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(memcopy.THREADS_ENV, "3")
    assert memcopy.copy_threads() == 3
    monkeypatch.setenv(memcopy.THREADS_ENV, "0")
    with pytest.raises(ValueError, match="CRICKET_COPY_THREADS"):
        memcopy.copy_threads()
    monkeypatch.setenv(memcopy.THREADS_ENV, "many")
    with pytest.raises(ValueError, match="whole number"):
        memcopy.copy_threads()
