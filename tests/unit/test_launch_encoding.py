"""A launch's arguments encoded by one struct are the bytes launch_args' codec gives, and a
launch sent pre-encoded is logged for replay with its arguments decoded."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from cricket_client import driver
from cricket_client._types import CUstream
from cricket_client.replay import calls_of
from rpc_spec import cricket_rpc as proto


def _by_codec(
    func: int, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int, stream: int, params: bytes
) -> bytes:
    args = proto.launch_args(func, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream, params)
    return proto.xdr_launch_args.encode(args)


@pytest.mark.parametrize("length", range(9))
def test_struct_encoding_is_the_codecs(length: int) -> None:
    params = bytes(range(1, length + 1))
    got = driver._launch_body(0x0300000000000012, (4, 2, 1), (256, 1, 1), 48, CUstream(0x0600000000000003), params)
    assert got == _by_codec(0x0300000000000012, (4, 2, 1), (256, 1, 1), 48, 0x0600000000000003, params)


def test_default_streams_travel_as_their_wire_handles() -> None:
    per_thread = driver._launch_body(1, (1, 1, 1), (1, 1, 1), 0, driver.CU_STREAM_PER_THREAD, b"")
    assert per_thread == _by_codec(1, (1, 1, 1), (1, 1, 1), 0, 2, b"")


@pytest.mark.parametrize("grid", [(-1, 1, 1), (1 << 32, 1, 1), (1.0, 1, 1)])
def test_values_the_codec_must_judge_are_left_to_it(grid: tuple[Any, ...]) -> None:
    assert driver._launch_body(1, grid, (1, 1, 1), 0, 0, b"") is None  # type: ignore[arg-type]


def test_a_pre_encoded_launch_is_logged_decoded() -> None:
    body = _by_codec(7, (1, 2, 3), (4, 5, 6), 0, 0, b"\x01\x02\x03")
    conn = SimpleNamespace(proto=proto)
    [(proc, args)] = calls_of("post_encoded", conn, ("CU_LAUNCH_KERNEL", body))  # type: ignore[arg-type]
    assert proc == "CU_LAUNCH_KERNEL"
    assert args == (proto.launch_args(7, 1, 2, 3, 4, 5, 6, 0, 0, b"\x01\x02\x03"),)
