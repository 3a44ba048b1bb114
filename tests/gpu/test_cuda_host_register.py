"""The `cuda` backend's registered host memory on a real GPU: a shared segment page-locked in
place (cuMemHostRegister), copies straight from and to it at an offset, with and without a
stream, and every registration undone: by the segment before its mapping closes, or by the
session when it closes first."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from cricket_server.backends.base import BackendSession, CudaError
from cricket_server.datapath.shm import ServerSegment

if TYPE_CHECKING:
    from conftest import ChunkMapper

pytestmark = pytest.mark.gpu

MiB = 1 << 20
CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712


@pytest.fixture
def host() -> Iterator[memoryview]:
    """32 MiB of page-aligned shared memory, as a segment's mapping."""
    m = mmap.mmap(-1, 32 * MiB)
    view = memoryview(m)
    yield view
    view.release()
    m.close()  # BufferError if anything still held an export of it


@pytest.mark.parametrize("size", [1, 4096 + 3, 8 * MiB + 5])
@pytest.mark.parametrize("use_stream", [False, True])
def test_registered_copies_move_the_bytes_at_their_offsets(
    session: BackendSession, chunks: ChunkMapper, host: memoryview, size: int, use_stream: bool
) -> None:
    token = session.register_host(host)
    assert token is not None
    stream = session.stream_create(1, 0) if use_stream else None  # non-blocking
    dev = chunks.map(session, size)
    payload = os.urandom(size)
    at, back = 4096 + 7, 32 * MiB - size
    host[at : at + size] = payload
    session.memcpy_htod_registered(dev, token, at, host[at : at + size], stream)
    host[at : at + size] = b"\0" * size  # the copy finished: reusing the bytes changes nothing
    session.memcpy_dtoh_registered(dev, token, back, host[back : back + size], stream)
    assert bytes(host[back : back + size]) == payload  # there when the call returns
    assert bytes(session.memcpy_dtoh(dev, size, None)) == payload
    session.unregister_host(token)
    session.unregister_host(token)  # a second time: nothing


def test_a_copy_outside_the_registered_range_is_refused(
    session: BackendSession, chunks: ChunkMapper, host: memoryview
) -> None:
    token = session.register_host(host[: 4 * MiB])
    dev = chunks.map(session, MiB)
    at = 4 * MiB - 10
    with pytest.raises(CudaError, match="outside the 4194304-byte registered host range"):
        session.memcpy_htod_registered(dev, token, at, host[at : at + 20], None)
    session.unregister_host(token)


def test_memory_registered_twice_is_refused_until_released(
    open_session: Callable[..., BackendSession], host: memoryview
) -> None:
    first, second = open_session(), open_session()
    token = first.register_host(host)
    with pytest.raises(CudaError) as refused:
        second.register_host(host)
    assert refused.value.code == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    first.unregister_host(token)
    second.unregister_host(second.register_host(host))


def test_a_closing_session_releases_what_it_registered(
    open_session: Callable[..., BackendSession], host: memoryview
) -> None:
    first, second = open_session(), open_session()
    token = first.register_host(host)
    first.close()
    first.unregister_host(token)  # the segment closes after the session: nothing
    second.unregister_host(second.register_host(host))  # free again


def test_a_segment_unregisters_before_it_unmaps_and_falls_back_when_refused(
    open_session: Callable[..., BackendSession],
) -> None:
    # In /dev/shm as the server makes them: the driver refuses to page-lock shared file
    # mappings of some other file systems (CUDA_ERROR_INVALID_VALUE, seen on overlayfs).
    first, second = open_session(), open_session()
    segment = ServerSegment(8 * MiB)
    try:
        token = segment.registration(first)
        assert token is not None and segment.registration(first) is token  # once
        other = ServerSegment(8 * MiB)
        try:
            assert other.registration(second) is not None  # another segment, another range
        finally:
            other.close()
        segment.unregister()
        again = second.register_host(segment.view)  # released: the range is free
        with pytest.raises(CudaError):
            first.register_host(segment.view)
        assert segment.registration(first) is None  # refused: copies go the staged way
        second.unregister_host(again)
    finally:
        segment.close()
