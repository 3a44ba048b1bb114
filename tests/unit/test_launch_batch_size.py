"""CRICKET_LAUNCH_BATCH: how many gathered launches make a batch leave; CRICKET_LAUNCH_AT_ONCE:
whether a launch made while nothing is outstanding leaves alone (knobs to measure with; the
defaults stay 128 and 1)."""

from __future__ import annotations

import pytest

from cricket_client.launch_batch import AT_ONCE_ENV, BATCH_ENV, MAX_LAUNCHES, LaunchBatcher
from rpc_spec import cricket_rpc as proto


def _batches(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str | None, at_once: list[bool]
) -> list[int]:
    """The batch sizes sent for launches made with these `at_once` flags (each: nothing
    outstanding), then a synchronizing call, with `env` set to `value` (None: unset)."""
    if value is None:
        monkeypatch.delenv(env, raising=False)
    else:
        monkeypatch.setenv(env, value)
    sent: list[int] = []
    batcher = LaunchBatcher(lambda proc, count, body: sent.append(count), delay=60.0)
    try:
        for flag in at_once:
            batcher.add(b"x" * 48, at_once=flag)
        batcher.flush()  # the synchronizing call
    finally:
        batcher.close()
    return sent


def test_the_default_gathers_up_to_128(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _batches(monkeypatch, BATCH_ENV, None, [False] * 10) == [10]
    assert MAX_LAUNCHES == 128


def test_small_batches_leave_as_they_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _batches(monkeypatch, BATCH_ENV, "3", [False] * 10) == [3, 3, 3, 1]


@pytest.mark.parametrize("value", ["0", str(proto.MAX_LAUNCH_BATCH + 1), "many"])
def test_a_wrong_value_is_named(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(BATCH_ENV, value)
    with pytest.raises(ValueError, match=f"CRICKET_LAUNCH_BATCH={value!r}"):
        LaunchBatcher(lambda proc, count, body: None)


@pytest.mark.parametrize(("value", "expected"), [(None, [1, 2]), ("1", [1, 2]), ("0", [3])])
def test_launch_at_once_decides_whether_a_lone_launch_leaves_alone(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: list[int]
) -> None:
    """CRICKET_LAUNCH_AT_ONCE: a launch made while nothing is outstanding leaves by itself
    (the default) or waits for the next call with the launches after it (0)."""
    assert _batches(monkeypatch, AT_ONCE_ENV, value, [True, False, False]) == expected


def test_a_wrong_at_once_value_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AT_ONCE_ENV, "yes")
    with pytest.raises(ValueError, match="CRICKET_LAUNCH_AT_ONCE='yes'"):
        LaunchBatcher(lambda proc, count, body: None)
