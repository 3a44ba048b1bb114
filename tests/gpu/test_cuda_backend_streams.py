"""The `cuda` backend on a real GPU: streams, events, sessions on several threads, close."""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from cuda.bindings import driver

from cricket_server.backends.base import BackendSession, CudaError
from cricket_server.backends.cuda import CudaBackend

if TYPE_CHECKING:
    from conftest import ChunkMapper

pytestmark = pytest.mark.gpu

MiB = 1 << 20
N = 1 << 16


def add_one_args(ptr: int, n: int) -> memoryview:
    return memoryview(struct.pack("<Qi", ptr, n) + bytes(4))


def test_events_order_streams_and_time_them(
    session: BackendSession, chunks: ChunkMapper, ptx_image: bytes
) -> None:
    module = session.module_load(ptx_image, {})
    add_one = session.module_get_function(module, "add_one")
    ptr = chunks.map(session, 4 * N)
    session.memset(ptr, 0, 4, N, None)
    producer = session.stream_create(int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING), 0)
    consumer = session.stream_create(int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING), 0)
    start, done = session.event_create(0), session.event_create(0)
    session.event_record(start, producer)
    for _ in range(50):
        session.launch(add_one, (N // 256, 1, 1), (256, 1, 1), 0, producer, add_one_args(ptr, N))
    session.event_record(done, producer)
    session.stream_wait_event(consumer, done, 0)
    session.launch(add_one, (N // 256, 1, 1), (256, 1, 1), 0, consumer, add_one_args(ptr, N))
    got = bytes(session.memcpy_dtoh(ptr, 4 * N, consumer))
    assert set(struct.unpack(f"<{N}f", got)) == {51.0}
    session.event_synchronize(done)
    assert session.event_query(done) and session.stream_query(producer)
    assert session.event_elapsed_time(start, done) > 0.0
    session.event_destroy(start)
    session.event_destroy(done)
    session.stream_destroy(producer)
    session.stream_destroy(consumer)


def test_queries_report_unfinished_work(session: BackendSession, ptx_image: bytes) -> None:
    module = session.module_load(ptx_image, {})
    spin = session.module_get_function(module, "spin")
    stream = session.stream_create(int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING), 0)
    after = session.event_create(0)
    cycles = 4_000_000_000  # a couple of seconds of one thread spinning
    session.launch(spin, (1, 1, 1), (1, 1, 1), 0, stream, memoryview(struct.pack("<q", cycles)))
    session.event_record(after, stream)
    assert session.stream_query(stream) is False
    assert session.event_query(after) is False
    session.stream_synchronize(stream)
    assert session.stream_query(stream) is True
    assert session.event_query(after) is True


def test_sessions_work_in_parallel_threads(
    open_session: Callable[..., BackendSession], chunks: ChunkMapper, ptx_image: bytes
) -> None:
    sessions = [open_session() for _ in range(4)]
    ptrs = [chunks.map(s, 4 * N) for s in sessions]
    failures: list[BaseException] = []
    results: dict[int, set[float]] = {}

    def work(i: int) -> None:
        try:
            s = sessions[i]
            module = s.module_load(ptx_image, {})
            add_one = s.module_get_function(module, "add_one")
            s.memset(ptrs[i], 0, 4, N, None)
            for _ in range(i + 1):
                s.launch(add_one, (N // 256, 1, 1), (256, 1, 1), 0, None, add_one_args(ptrs[i], N))
            s.synchronize()
            results[i] = set(struct.unpack(f"<{N}f", bytes(s.memcpy_dtoh(ptrs[i], 4 * N, None))))
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(sessions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert results == {i: {float(i + 1)} for i in range(len(sessions))}


def test_one_session_used_from_several_threads_in_turn(
    session: BackendSession,
    open_session: Callable[..., BackendSession],
    chunks: ChunkMapper,
    ptx_image: bytes,
) -> None:
    other = open_session()
    module = session.module_load(ptx_image, {})
    add_one = session.module_get_function(module, "add_one")
    ptr = chunks.map(session, 4 * N)
    session.memset(ptr, 0, 4, N, None)
    failures: list[BaseException] = []

    def step() -> None:
        try:
            other.mem_get_info()  # leaves the other session's context current here
            session.launch(add_one, (N // 256, 1, 1), (256, 1, 1), 0, None, add_one_args(ptr, N))
            session.synchronize()
        except BaseException as exc:  # reported below
            failures.append(exc)

    for _ in range(3):
        t = threading.Thread(target=step)
        t.start()
        t.join()
    assert not failures, failures
    assert set(struct.unpack(f"<{N}f", bytes(session.memcpy_dtoh(ptr, 4 * N, None)))) == {3.0}


def test_close_releases_everything_and_new_sessions_work(
    backend: CudaBackend, chunks: ChunkMapper, ptx_image: bytes
) -> None:
    for _ in range(3):
        s = backend.open_session()
        module = s.module_load(ptx_image, {})
        s.library_load(ptx_image, {})
        s.stream_create(0, 0)
        s.event_create(0)
        backing = s.chunk_backing(0)
        addr = chunks.take(backing.granularity)
        token = backing.map_chunk(addr, backing.granularity)
        s.memcpy_htod(addr, memoryview(b"x" * 4096), "per-thread")
        assert s.module_get_function(module, "add_one") is not None
        s.synchronize()  # the staged copy may still be on its way: unmapping under it faults
        backing.unmap_chunk(addr, backing.granularity, token)
        s.close()
        with pytest.raises(CudaError):
            s.mem_get_info()
    last = backend.open_session()
    try:
        free, total = last.mem_get_info()
        assert 0 < free <= total
    finally:
        last.close()
