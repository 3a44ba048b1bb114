"""Bounded busy-polling receives (`cricket_xdr.rpc.spin`) on both RPC ends: answers stay
right whether a reply comes within the spin window or after it, idle timeouts still close
silent and stalled connections, TLS connections skip spinning, and CRICKET_SPIN_US is read."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from server_harness import serving
from tls_certs import TlsFiles, make_tls_files

from cricket_client.errors import CricketClientError
from cricket_client.security import spin_us_from_env
from cricket_server.workers.pool import WorkerSpec
from cricket_xdr.rpc import RpcClient, RpcServer
from cricket_xdr.rpc.connection import NEED_DATA, ServerConnection
from cricket_xdr.rpc.errors import AuthError
from cricket_xdr.rpc.handshake import Admission
from cricket_xdr.rpc.message import CallMessage
from cricket_xdr.rpc.spin import MISSES_BEFORE_BACKOFF, Spinner
from cricket_xdr.rpc.tls import client_context, server_context
from cricket_xdr.stubs import Procedure
from cricket_xdr.xdr import VarOpaque, xdr_int, xdr_u_int, xdr_void

PROG = 0x20000097
opaque = VarOpaque()
SPIN_US = 100.0
LIMIT = 30.0  # seconds before a test gives up waiting


class SpinService:
    """ECHO, COUNT (n bytes counting up), SLEEP (milliseconds, then answer)."""

    __test__ = False
    PROGRAM = PROG
    VERSION = 1
    PROCEDURES = {
        1: Procedure(1, "ECHO", (opaque,), opaque),
        2: Procedure(2, "COUNT", (xdr_int,), opaque),
        3: Procedure(3, "SLEEP", (xdr_u_int,), xdr_void),
    }

    def ECHO(self, ctx, data):
        return data

    def COUNT(self, ctx, n):
        return counting(n)

    def SLEEP(self, ctx, ms):
        time.sleep(ms / 1000)


def counting(n: int) -> bytes:
    return (bytes(range(256)) * (n // 256 + 1))[:n]


def echo(client: RpcClient, data: bytes) -> bytes:
    return bytes(opaque.decode(client.call(PROG, 1, 1, opaque.encode(data))))


@pytest.fixture
def server() -> Iterator[RpcServer]:
    srv = RpcServer([SpinService()], spin_us=SPIN_US, idle_timeout=LIMIT)
    with serving(srv):
        yield srv


def address(srv: RpcServer) -> tuple[str, int]:
    return srv._listeners[0].getsockname()


@pytest.fixture
def client(server: RpcServer) -> Iterator[RpcClient]:
    with RpcClient(address(server), timeout=LIMIT, spin_us=SPIN_US) as c:
        yield c


def wait_for(probe, what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not probe():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


# -- the spinner alone -------------------------------------------------------------------


def test_spinner_returns_what_is_there_and_none_when_nothing_comes() -> None:
    a, b = socket.socketpair()
    with a, b:
        spinner = Spinner(50)
        view = memoryview(bytearray(16))
        assert spinner.recv_into(a, view) is None
        b.sendall(b"hello")
        assert spinner.recv_into(a, view) == 5
        assert bytes(view[:5]) == b"hello"
        b.close()
        assert spinner.recv_into(a, view) == 0  # the peer closed


def test_spinner_backs_off_after_empty_windows_and_recovers_on_data() -> None:
    a, b = socket.socketpair()
    with a, b:
        spinner = Spinner(20)
        view = memoryview(bytearray(16))
        for _ in range(MISSES_BEFORE_BACKOFF):
            assert not spinner.backing_off
            assert spinner.recv_into(a, view) is None
        assert spinner.backing_off
        b.sendall(b"x")
        assert spinner.recv_into(a, view) is None  # sat out, though data waits
        assert not spinner.backing_off
        assert spinner.recv_into(a, view) == 1  # tried again: found it
        for _ in range(MISSES_BEFORE_BACKOFF - 1):  # a hit forgot the misses before it
            assert spinner.recv_into(a, view) is None
        assert not spinner.backing_off


@pytest.mark.parametrize("bad", [-1.0, float("nan"), 2e6])
def test_spin_window_out_of_range_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="spin_us"):
        Spinner(bad)
    with pytest.raises(ValueError, match="spin_us"):
        RpcServer([SpinService()], spin_us=bad)


# -- both ends spinning --------------------------------------------------------------------


def test_many_sequential_calls_are_answered(client: RpcClient) -> None:
    for i in range(2000):
        data = counting(i % 300)
        assert echo(client, data) == data


def test_pipelined_calls_from_several_threads_are_answered(client: RpcClient) -> None:
    failures: list[str] = []

    def pipeline(seed: int) -> None:
        pending = [
            (n, client.call_async(PROG, 1, 2, xdr_int.encode(n)))
            for n in range(seed, seed + 200)
        ]
        for n, call in pending:
            if bytes(opaque.decode(call.result())) != counting(n):
                failures.append(f"COUNT({n}) of thread {seed}")

    threads = [threading.Thread(target=pipeline, args=(s * 1000,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT)
    assert not failures


def test_large_replies_received_into_views(client: RpcClient) -> None:
    size = 8 << 20
    dest = bytearray(size)
    pending = client.call_async(
        PROG, 1, 2, xdr_int.encode(size), into=(struct.pack(">I", size), memoryview(dest))
    )
    pending.result()
    assert pending.placed
    assert dest == counting(size)
    assert len(bytes(opaque.decode(client.call(PROG, 1, 2, xdr_int.encode(size))))) == size


def test_replies_later_than_the_spin_window_are_answered(client: RpcClient) -> None:
    for _ in range(2 * MISSES_BEFORE_BACKOFF + 2):  # enough empty windows to back off
        assert client.call(PROG, 1, 3, xdr_u_int.encode(20)) == b""
        assert echo(client, b"right after") == b"right after"


def test_a_bulk_reply_crossing_from_spinning_to_blocking_lands_whole() -> None:
    """A peer sends a placed reply in pieces with pauses far beyond the spin window: the
    client reads part of it while spinning and the rest blocked, into the same view."""
    size = 1 << 20
    listener = socket.create_server(("127.0.0.1", 0))

    def slow_server() -> None:
        sock, _ = listener.accept()
        with sock:
            conn = ServerConnection()
            call = conn.next_event()
            while call is NEED_DATA:
                conn.receive_data(sock.recv(65536))
                call = conn.next_event()
            assert isinstance(call, CallMessage)
            reply = b"".join(
                bytes(p) for p in conn.reply_success(call.xid, [opaque.encode(counting(size))])
            )
            for start in range(0, len(reply), len(reply) // 5):
                sock.sendall(reply[start : start + len(reply) // 5])
                time.sleep(0.02)
            sock.recv(1)  # until the client hangs up

    thread = threading.Thread(target=slow_server)
    thread.start()
    try:
        with RpcClient(listener.getsockname(), timeout=LIMIT, spin_us=50) as c:
            dest = bytearray(size)
            pending = c.call_async(
                PROG, 1, 2, xdr_int.encode(size), into=(struct.pack(">I", size), memoryview(dest))
            )
            pending.result()
            assert pending.placed
            assert dest == counting(size)
    finally:
        thread.join(LIMIT)
        listener.close()


# -- idle timeouts with spinning on --------------------------------------------------------


def read_until_eof(sock: socket.socket) -> bytes:
    chunks = []
    try:
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


IDLE_LOG = "idle for 0.2 s, closing"


@pytest.fixture
def idle_server(caplog: pytest.LogCaptureFixture) -> Iterator[RpcServer]:
    caplog.set_level(logging.INFO, logger="cricket_xdr.rpc.server")
    srv = RpcServer([SpinService()], spin_us=SPIN_US, idle_timeout=0.2)
    with serving(srv):
        yield srv


def test_idle_timeout_closes_a_silent_connection(
    idle_server: RpcServer, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.create_connection(address(idle_server), timeout=LIMIT) as sock:
        assert read_until_eof(sock) == b""
    wait_for(lambda: IDLE_LOG in caplog.text, "the idle connection's log line")


def test_idle_timeout_closes_a_connection_stalled_inside_a_record(
    idle_server: RpcServer, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.create_connection(address(idle_server), timeout=LIMIT) as sock:
        sock.sendall(struct.pack(">I", 0x80000000 | 100) + b"\0" * 10)
        assert read_until_eof(sock) == b""
    wait_for(lambda: IDLE_LOG in caplog.text, "the stalled connection's log line")


def test_idle_timeout_closes_a_connection_that_stops_reading(
    idle_server: RpcServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The server's reply cannot go out while the client reads nothing: the send times out
    and the connection is dropped, as without spinning."""
    size = 64 << 20
    with socket.create_connection(address(idle_server), timeout=LIMIT) as raw:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 12)
        raw.sendall(struct.pack(">I", 0x80000000 | 44) + struct.pack(
            ">11I", 7, 0, 2, PROG, 1, 2, 0, 0, 0, 0, size
        ))  # fmt: skip  (a CALL of COUNT(size), AUTH_NONE)
        wait_for(lambda: idle_server.connection_count == 1, "the connection")
        wait_for(lambda: idle_server.connection_count == 0, "the stalled connection's end")
        assert IDLE_LOG in caplog.text
    with RpcClient(address(idle_server), timeout=LIMIT, spin_us=SPIN_US) as c:
        assert echo(c, b"still served") == b"still served"


def test_a_connection_busy_between_short_pauses_is_not_idle(idle_server: RpcServer) -> None:
    with RpcClient(address(idle_server), timeout=LIMIT, spin_us=SPIN_US) as c:
        for _ in range(5):
            assert echo(c, b"x") == b"x"
            time.sleep(0.05)  # a quarter of the idle timeout


# -- TLS -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


def test_tls_connections_work_with_spin_set(certs: TlsFiles) -> None:
    tls = server_context(str(certs.server.cert), str(certs.server.key))
    srv = RpcServer(
        [SpinService()], spin_us=SPIN_US, idle_timeout=LIMIT, admission=Admission(tls=tls)
    )
    with serving(srv) as where, RpcClient(
        where,
        timeout=LIMIT,
        spin_us=SPIN_US,
        tls=client_context(str(certs.server_ca.cert)),
        program=(PROG, 1),
    ) as c:
        assert c._sock.version() == "TLSv1.3"
        for i in range(200):
            assert echo(c, counting(i)) == counting(i)
        size = 4 << 20
        assert bytes(opaque.decode(c.call(PROG, 1, 2, xdr_int.encode(size)))) == counting(
            size
        )
        assert c.call(PROG, 1, 3, xdr_u_int.encode(20)) == b""


def test_plain_client_refused_by_a_tls_server_with_spin_set(certs: TlsFiles) -> None:
    tls = server_context(str(certs.server.cert), str(certs.server.key))
    srv = RpcServer([SpinService()], spin_us=SPIN_US, admission=Admission(tls=tls))
    with (
        serving(srv) as where,
        RpcClient(where, timeout=LIMIT, spin_us=SPIN_US) as c,
        pytest.raises(AuthError),
    ):
        echo(c, b"no")


# -- configuration -------------------------------------------------------------------------


def test_cricket_spin_us_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRICKET_SPIN_US", "25")
    assert spin_us_from_env() == 25.0
    monkeypatch.setenv("CRICKET_SPIN_US", "0")
    assert spin_us_from_env() == 0.0
    for bad in ("-5", "fast", "nan"):
        monkeypatch.setenv("CRICKET_SPIN_US", bad)
        with pytest.raises(CricketClientError, match="CRICKET_SPIN_US"):
            spin_us_from_env()


@pytest.mark.parametrize(("cpus", "expected"), [(16, 100.0), (4, 100.0), (2, 0.0), (None, 0.0)])
def test_default_spin_depends_on_the_cores(
    monkeypatch: pytest.MonkeyPatch, cpus: int | None, expected: float
) -> None:
    monkeypatch.delenv("CRICKET_SPIN_US", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: cpus)
    assert spin_us_from_env() == expected
    assert WorkerSpec("sim").spin_us == expected


def test_worker_command_line_carries_the_spin() -> None:
    command = WorkerSpec("sim", spin_us=50.0).command(5, 0)
    assert command[command.index("--spin-us") + 1] == "50.0"
    assert "--spin-us" not in WorkerSpec("sim", spin_us=0.0).command(5, 0)


def test_server_cli_default_spin_is_off_for_thread_isolation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cricket_server.cli import default_spin

    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert default_spin("thread") == 0.0
    assert default_spin("process") == 100.0

