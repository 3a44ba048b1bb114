"""The default number of copy threads is worked out once: os.cpu_count reads /sys on every
call, and a shared-memory copy asks for the number on every copy."""

from __future__ import annotations

import pytest

from cricket_client.datapath import memcopy


def test_the_core_count_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.delenv(memcopy.THREADS_ENV, raising=False)
    monkeypatch.setattr(memcopy.os, "cpu_count", lambda: calls.append(1) or 16)
    cached = getattr(memcopy, "_default_threads", None)
    if cached is not None:
        cached.cache_clear()
    try:
        assert [memcopy.copy_threads() for _ in range(3)] == [4, 4, 4]
        assert len(calls) == 1
    finally:
        if cached is not None:
            cached.cache_clear()


def test_the_environment_still_decides_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(memcopy.THREADS_ENV, "2")
    assert memcopy.copy_threads() == 2
    monkeypatch.setenv(memcopy.THREADS_ENV, "1")
    assert memcopy.copy_threads() == 1
