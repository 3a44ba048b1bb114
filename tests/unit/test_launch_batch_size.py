"""CRICKET_LAUNCH_BATCH: how many gathered launches make a batch leave (a knob to measure
with; the default stays 128)."""

from __future__ import annotations

import pytest

from cricket_client.launch_batch import BATCH_ENV, MAX_LAUNCHES, LaunchBatcher
from rpc_spec import cricket_rpc as proto


def _batches(monkeypatch: pytest.MonkeyPatch, value: str | None, launches: int) -> list[int]:
    if value is None:
        monkeypatch.delenv(BATCH_ENV, raising=False)
    else:
        monkeypatch.setenv(BATCH_ENV, value)
    sent: list[int] = []
    batcher = LaunchBatcher(lambda proc, count, body: sent.append(count), delay=60.0)
    try:
        for _ in range(launches):
            batcher.add(b"x" * 48, at_once=False)
        batcher.flush()
    finally:
        batcher.close()
    return sent


def test_the_default_gathers_up_to_128(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _batches(monkeypatch, None, 10) == [10]
    assert MAX_LAUNCHES == 128


def test_small_batches_leave_as_they_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _batches(monkeypatch, "3", 10) == [3, 3, 3, 1]


@pytest.mark.parametrize("value", ["0", str(proto.MAX_LAUNCH_BATCH + 1), "many"])
def test_a_wrong_value_is_named(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(BATCH_ENV, value)
    with pytest.raises(ValueError, match=f"CRICKET_LAUNCH_BATCH={value!r}"):
        LaunchBatcher(lambda proc, count, body: None)
