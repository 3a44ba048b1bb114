"""Shared-memory copies from a page-locked (registered) segment, against a fake backend that
records the hook's calls: a client (cricket_client, shared-memory path forced) talks to an
in-process server on a loopback port.

What a user would check: the bytes arrive exactly; the backend registers each segment once
and unregisters it while it is still mapped; a backend that refuses still copies (through its
usual path) and says why once; a connection that ends leaves nothing registered."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from unit.test_session_fakes import ARENA_BASE, ARENA_SIZE, GRANULARITY, FakeBackend, FakeSession

import cricket_client
from cricket_client import driver as cuda
from cricket_client.datapath import DataPaths, Mode
from cricket_client.datapath import Path as DataPath
from cricket_client.datapath.paths import SHM_PIECE, SHM_SLOTS
from cricket_server.backends.base import CudaError
from cricket_server.datapath import shm as server_shm
from cricket_server.memory import AddressArena
from cricket_server.service import CricketService
from cricket_server.session import SessionManager
from cricket_xdr.rpc.server import RpcServer

CUDA_ERROR_NOT_PERMITTED = 800
SIZES = [1, 4096 + 3, (8 << 20) + 5, SHM_PIECE * (SHM_SLOTS + 1) + 5]  # the last wraps the ring


def _mapped(view: memoryview) -> bool:
    try:
        return view.nbytes >= 0
    except ValueError:  # released: the segment's mapping is closed
        return False


class RegisteringSession(FakeSession):
    """Registers host memory in name only and copies from and to it at the offsets given."""

    def __init__(self, backend: FakeBackend, refuse: bool) -> None:
        super().__init__(backend)
        self.refuse = refuse
        self.events: list[str] = []
        self.registered: dict[int, tuple[object, memoryview]] = {}
        self.streams_seen: list[object | None] = []

    def register_host(self, view: memoryview) -> object | None:
        self.events.append("register")
        if self.refuse:
            raise CudaError(CUDA_ERROR_NOT_PERMITTED, "cuMemHostRegister: operation not permitted")
        token = object()
        self.registered[id(token)] = (token, view)
        return token

    def unregister_host(self, token: object) -> None:
        entry = self.registered.pop(id(token), None)
        if entry is None:
            self.events.append("unregister (already released)")
        else:
            self.events.append("unregister" if _mapped(entry[1]) else "unregister after unmap")

    def _host(self, token: object, offset: int, size: int) -> memoryview:
        _, view = self.registered[id(token)]  # KeyError: a token not registered (a test failure)
        assert _mapped(view)
        return view[offset : offset + size]

    def memcpy_htod_registered(
        self, dst: int, token: object, offset: int, data: memoryview, stream: object | None
    ) -> None:
        self.events.append("htod")
        self.streams_seen.append(stream)
        self.memory.view(dst, len(data))[:] = self._host(token, offset, len(data))

    def memcpy_dtoh_registered(
        self, src: int, token: object, offset: int, out: memoryview, stream: object | None
    ) -> None:
        self.events.append("dtoh")
        self.streams_seen.append(stream)
        self._host(token, offset, len(out))[:] = self.memory.view(src, len(out))

    def close(self) -> None:
        """As a real backend must: release what is still registered, before anything goes."""
        for _, view in self.registered.values():
            self.events.append("release" if _mapped(view) else "release after unmap")
        self.registered.clear()
        super().close()


class RegisteringBackend(FakeBackend):
    def __init__(self, refuse: bool = False) -> None:
        super().__init__(devices=1)
        self.refuse = refuse

    def open_session(self) -> RegisteringSession:
        session = RegisteringSession(self, self.refuse)
        self.sessions.append(session)
        return session


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[RegisteringBackend, str]]]:
    """Starts an in-process server over a RegisteringBackend; stops it at the end."""
    started: list[tuple[RpcServer, SessionManager]] = []

    def start(refuse: bool = False) -> tuple[RegisteringBackend, str]:
        backend = RegisteringBackend(refuse)
        manager = SessionManager(backend, AddressArena(ARENA_BASE, ARENA_SIZE, GRANULARITY))
        server = RpcServer([CricketService(manager)])
        host, port = server.listen_tcp("127.0.0.1", 0)
        server.start()
        started.append((server, manager))
        return backend, f"{host}:{port}"

    yield start
    for server, manager in started:
        server.shutdown()
        manager.close_all()


def _connect(address: str) -> cricket_client.Connection:
    conn = cricket_client.connect(address, make_default=False)
    conn.datapaths = DataPaths(conn, mode=Mode.SHM)
    with conn.active():
        assert cuda.cuInit(0)[0] == 0
        ctx = cuda.cuDevicePrimaryCtxRetain(0)[1]
        assert cuda.cuCtxSetCurrent(ctx)[0] == 0
    return conn


def _ok(result: tuple[Any, ...]) -> Any:
    assert result[0] == 0, f"{result[0]!r}: {cricket_client.last_error_message()}"
    return result[1] if len(result) == 2 else None


def _round_trip(conn: cricket_client.Connection, size: int, seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    out = np.zeros_like(data)
    with conn.active():
        ptr = _ok(cuda.cuMemAlloc(size))
        _ok(cuda.cuMemcpyHtoD(ptr, data, size))
        _ok(cuda.cuMemcpyDtoH(out, ptr, size))
        _ok(cuda.cuMemFree(ptr))
    assert conn.datapaths is not None and conn.datapaths.last_path is DataPath.SHM
    assert np.array_equal(out, data), f"{size} bytes came back different"


def _ended(session: RegisteringSession) -> bool:
    """The session closed and the connection's segment went too."""
    return session.closed > 0 and any(e.startswith("unregister") for e in session.events)


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"the server did not {what} within 60 s")
        time.sleep(0.01)


def test_bytes_go_through_the_registered_segment_exactly_and_it_is_registered_once(
    serve: Callable[..., tuple[RegisteringBackend, str]],
) -> None:
    backend, address = serve()
    conn = _connect(address)
    for i, size in enumerate(SIZES):
        _round_trip(conn, size, i)
    session = backend.sessions[0]
    assert session.events.count("register") == 1
    pieces = sum(-(-size // SHM_PIECE) for size in SIZES)
    assert session.events.count("htod") == session.events.count("dtoh") == pieces
    assert not any(name.startswith("memcpy_") for name, _ in session.calls)  # nothing staged
    assert set(session.streams_seen) == {None}  # synchronous copies: the legacy stream
    conn.close()
    _wait_for(lambda: _ended(session), "close the session and the segment")
    assert session.registered == {}
    assert "unregister after unmap" not in session.events
    assert "release after unmap" not in session.events


def test_an_asynchronous_copy_names_its_stream_and_wraps_the_ring_exactly(
    serve: Callable[..., tuple[RegisteringBackend, str]],
) -> None:
    backend, address = serve()
    conn = _connect(address)
    size = SIZES[-1]
    data = np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8)
    out = np.zeros_like(data)
    with conn.active():
        stream = _ok(cuda.cuStreamCreate(0))
        ptr = _ok(cuda.cuMemAlloc(size))
        _ok(cuda.cuMemcpyHtoDAsync(ptr, data, size, stream))
        _ok(cuda.cuMemcpyDtoHAsync(out, ptr, size, stream))
        _ok(cuda.cuStreamSynchronize(stream))
    assert np.array_equal(out, data)
    session = backend.sessions[0]
    assert len(session.streams_seen) == 2 * -(-size // SHM_PIECE)
    assert None not in session.streams_seen and len(set(map(id, session.streams_seen))) == 1
    conn.close()


def test_a_new_segment_is_registered_anew_after_the_old_one_was_unregistered_while_mapped(
    serve: Callable[..., tuple[RegisteringBackend, str]],
) -> None:
    backend, address = serve()
    conn = _connect(address)
    _round_trip(conn, 4096 + 3, 1)
    assert conn.datapaths is not None
    conn.datapaths._drop(DataPath.SHM)  # the next copy asks for a new segment
    _round_trip(conn, 4096 + 3, 2)
    session = backend.sessions[0]
    assert session.events[:5] == ["register", "htod", "dtoh", "unregister", "register"]
    assert len(session.registered) == 1
    conn.close()


def test_a_backend_that_refuses_to_register_still_copies_and_says_why_once(
    serve: Callable[..., tuple[RegisteringBackend, str]],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_shm, "_refusal_logged", False)
    caplog.set_level(logging.DEBUG, logger="cricket_server.datapath")
    backend, address = serve(refuse=True)
    conns = [_connect(address) for _ in range(2)]
    for i, conn in enumerate(conns):
        for size in SIZES[:3]:
            _round_trip(conn, size, i)
    for session in backend.sessions:
        assert session.events == ["register"]  # tried once per segment, not per copy
        assert [name for name, _ in session.calls].count("memcpy_htod") == 1 + 1 + 2
    refusals = [r for r in caplog.records if "not page-locked" in r.getMessage()]
    assert [r.levelno for r in refusals] == [logging.WARNING, logging.DEBUG]
    assert "operation not permitted" in refusals[0].getMessage()
    for conn in conns:
        conn.close()


def test_a_connection_dropped_between_copies_leaves_nothing_registered(
    serve: Callable[..., tuple[RegisteringBackend, str]],
) -> None:
    backend, address = serve()
    conn = _connect(address)
    _round_trip(conn, (8 << 20) + 5, 3)
    session = backend.sessions[0]
    assert len(session.registered) == 1
    conn._rpc.close()  # the client goes away without GOODBYE
    _wait_for(lambda: _ended(session), "close the session and the segment")
    assert session.registered == {}
    assert session.events[-1] in ("release", "unregister", "unregister (already released)")
    assert "unregister after unmap" not in session.events
    assert "release after unmap" not in session.events
    with contextlib.suppress(Exception):
        conn.close()
