"""Client and server over real loopback sockets: every reply state, concurrency, timeouts,
misbehaving peers, and a fuzz run against a live server."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time

import pytest
from server_harness import serving

from cricket_xdr.rpc import (
    AuthError,
    AuthSys,
    AuthSysParams,
    ConnectionLost,
    GarbageArgs,
    ProcUnavail,
    ProgMismatch,
    ProgUnavail,
    RecordTooLarge,
    RpcClient,
    RpcMismatch,
    RpcServer,
    RpcTimeout,
    SystemErr,
)
from cricket_xdr.rpc import message as m
from cricket_xdr.rpc.auth import default_verifiers
from cricket_xdr.rpc.errors import LocalRpcError, RemoteRpcError, ReplyDecodeError
from cricket_xdr.stubs import Procedure
from cricket_xdr.xdr import String, VarOpaque, xdr_int, xdr_u_int, xdr_void

PROG = 0x20000099
OTHER_PROG = 0x2000009A
opaque = VarOpaque()
string = String()


class TestService:
    """Version 1 of a small test program."""

    __test__ = False
    PROGRAM = PROG
    VERSION = 1
    PROCEDURES = {
        1: Procedure(1, "ECHO", (opaque,), opaque),
        2: Procedure(2, "ADD", (xdr_int, xdr_int), xdr_int),
        3: Procedure(3, "FAIL", (), xdr_void),
        4: Procedure(4, "UNIMPL", (), xdr_void),
        5: Procedure(5, "SLEEP", (xdr_u_int,), xdr_void),
        6: Procedure(6, "WHOAMI", (), string),
        7: Procedure(7, "APPEND", (xdr_int,), xdr_int),
        8: Procedure(8, "CLOSE_ME", (), xdr_void),
        9: Procedure(9, "BAD_RESULT", (), xdr_int),
    }

    def __init__(self) -> None:
        self.closed: list[int] = []
        self.connections: list = []

    def ECHO(self, ctx, data):
        return data

    def ADD(self, ctx, a, b):
        return a + b

    def FAIL(self, ctx):
        raise RuntimeError("handler exploded")

    def UNIMPL(self, ctx):
        raise NotImplementedError

    def SLEEP(self, ctx, ms):
        time.sleep(ms / 1000)

    def WHOAMI(self, ctx):
        p = ctx.cred.principal
        return "anonymous" if p is None else f"{p.machinename}:{p.uid}"

    def APPEND(self, ctx, value):
        seen = ctx.connection.state.setdefault("seen", [])
        if not seen:
            self.connections.append(ctx.connection)
            ctx.connection.add_close_callback(lambda: self.closed.append(ctx.connection.id))
        seen.append(value)
        return len(seen)

    def CLOSE_ME(self, ctx):
        ctx.connection.close()

    def BAD_RESULT(self, ctx):
        return "not an int"


class TestServiceV3(TestService):
    __test__ = False
    VERSION = 3


@pytest.fixture
def service():
    return TestService()


@pytest.fixture
def server(service):
    srv = RpcServer([service, TestServiceV3()], max_record=8 << 20)
    with serving(srv) as address:
        srv.address = address
        yield srv
    assert srv.connection_count == 0


@pytest.fixture
def client(server):
    with RpcClient(server.address, timeout=10) as c:
        yield c


def add(client, a, b):
    return xdr_int.decode(client.call(PROG, 1, 2, [xdr_int.encode(a), xdr_int.encode(b)]))


def raw_connect(server) -> socket.socket:
    sock = socket.create_connection(server.address, timeout=10)
    return sock


def read_until_eof(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def records_of(data: bytes) -> list[bytes]:
    """Split a reply stream into records (test-side reassembly)."""
    records, current, pos = [], b"", 0
    while pos + 4 <= len(data):
        (header,) = struct.unpack_from(">I", data, pos)
        length = header & 0x7FFFFFFF
        current += data[pos + 4 : pos + 4 + length]
        pos += 4 + length
        if header & 0x80000000:
            records.append(current)
            current = b""
    return records


# -- results and reply states -----------------------------------------------------------------


def test_null_procedure_for_every_served_version(client):
    assert client.call(PROG, 1, 0) == b""
    assert client.call(PROG, 3, 0) == b""


def test_procedures_return_results(client):
    assert add(client, 2, 40) == 42
    assert opaque.decode(client.call(PROG, 1, 1, opaque.encode(b"hello"))) == b"hello"
    assert string.decode(client.call(PROG, 3, 6)) == "anonymous"


def test_large_payload_both_ways(client):
    payload = bytes(random.Random(1).randbytes(5 << 20))
    assert opaque.decode(client.call(PROG, 1, 1, opaque.encode(payload))) == payload


def test_prog_unavail(client):
    with pytest.raises(ProgUnavail, match=f"program {OTHER_PROG:#x} version 1 procedure 0"):
        client.call(OTHER_PROG, 1, 0)


def test_prog_mismatch_reports_versions_served(client):
    with pytest.raises(ProgMismatch) as info:
        client.call(PROG, 2, 1)
    assert (info.value.low, info.value.high) == (1, 3)
    assert f"program {PROG:#x} version 2 procedure 1" in str(info.value)


@pytest.mark.parametrize("proc", [4, 99])
def test_proc_unavail(client, proc):
    with pytest.raises(ProcUnavail, match=f"procedure {proc}"):
        client.call(PROG, 1, proc)


@pytest.mark.parametrize(
    "args",
    [
        xdr_int.encode(1),  # one int short
        xdr_int.encode(1) * 3,  # trailing bytes
        b"\0\0",  # not even a word
    ],
)
def test_garbage_args(client, args):
    with pytest.raises(GarbageArgs, match="procedure 2"):
        client.call(PROG, 1, 2, args)
    assert add(client, 1, 1) == 2  # the connection stays usable


def test_arguments_to_a_procedure_without_any_are_garbage(client):
    with pytest.raises(GarbageArgs):
        client.call(PROG, 1, 3, b"\0\0\0\0")
    with pytest.raises(GarbageArgs):
        client.call(PROG, 1, 0, b"\0\0\0\0")


@pytest.mark.parametrize("proc", [3, 9])
def test_system_err_for_failing_handler_or_result(client, proc, caplog):
    with pytest.raises(SystemErr, match=f"procedure {proc}"):
        client.call(PROG, 1, proc)
    assert any(r.exc_info for r in caplog.records)  # the traceback is logged


def test_remote_errors_are_remote_and_local_errors_local():
    assert issubclass(GarbageArgs, RemoteRpcError) and not issubclass(GarbageArgs, LocalRpcError)
    for cls in (ConnectionLost, RpcTimeout, RecordTooLarge, ReplyDecodeError):
        assert issubclass(cls, LocalRpcError)


def test_rpc_mismatch(server):
    with raw_connect(server) as sock:
        call = struct.pack(">6I", 0x1234, 0, 3, PROG, 1, 0) + b"\0" * 16
        sock.sendall(struct.pack(">I", 0x80000000 | len(call)) + call)
        sock.shutdown(socket.SHUT_WR)
        (record,) = records_of(read_until_eof(sock))
    reply = m.decode_reply(record)
    assert reply.xid == 0x1234
    exc = reply.error(PROG, 1, 0)
    assert isinstance(exc, RpcMismatch) and (exc.low, exc.high) == (2, 2)


class _Flavor:
    def __init__(self, flavor: int, body: bytes = b"") -> None:
        self.cred = m.OpaqueAuth(flavor, body)

    def credentials(self):
        return self.cred, m.NULL_AUTH


@pytest.mark.parametrize(
    ("auth", "stat"),
    [
        (_Flavor(99), m.AUTH_REJECTEDCRED),  # flavor nobody verifies
        (_Flavor(m.AUTH_SYS, b"\0\0\0\1"), m.AUTH_BADCRED),  # truncated authsys_parms
    ],
)
def test_auth_error(server, auth, stat):
    with RpcClient(server.address, auth=auth, timeout=10) as c, pytest.raises(AuthError) as info:
        c.call(PROG, 1, 0)
    assert info.value.stat == stat


def test_auth_sys_principal_reaches_handler(server):
    auth = AuthSys(AuthSysParams("node7", 1234, 55, (1, 2)))
    with RpcClient(server.address, auth=auth, timeout=10) as c:
        assert string.decode(c.call(PROG, 1, 6)) == "node7:1234"


def test_custom_verifier_can_deny(service):
    def only_root(cred, verf):
        principal = default_verifiers()[m.AUTH_SYS](cred, verf)
        if principal.uid != 0:
            raise AuthError(m.AUTH_TOOWEAK, f"uid {principal.uid} is not root")
        return principal

    with serving(RpcServer([service], auth_verifiers={m.AUTH_SYS: only_root})) as address:
        root = AuthSys(AuthSysParams("h", 0, 0))
        with RpcClient(address, auth=root, timeout=10) as c:
            assert string.decode(c.call(PROG, 1, 6)) == "h:0"
        user = AuthSys(AuthSysParams("h", 5, 5))
        with (
            RpcClient(address, auth=user, timeout=10) as c,
            pytest.raises(AuthError, match="AUTH_TOOWEAK"),
        ):
            c.call(PROG, 1, 6)
        with (  # AUTH_NONE is not in this registry
            RpcClient(address, timeout=10) as c,
            pytest.raises(AuthError, match="AUTH_REJECTEDCRED"),
        ):
            c.call(PROG, 1, 0)


# -- framing, concurrency, timeouts -------------------------------------------------------------


def test_multi_fragment_records_both_ways(service):
    with serving(RpcServer([service], max_fragment=1000)) as address:
        payload = bytes(range(256)) * 40
        with RpcClient(address, max_fragment=1000, timeout=10) as c:
            assert opaque.decode(c.call(PROG, 1, 1, opaque.encode(payload))) == payload
        with socket.create_connection(address, timeout=10) as sock:
            body = opaque.encode(payload)
            call = m.encode_call_header(9, PROG, 1, 1, m.NULL_AUTH, m.NULL_AUTH) + body
            sock.sendall(struct.pack(">I", 0x80000000 | len(call)) + call)
            sock.shutdown(socket.SHUT_WR)
            data = read_until_eof(sock)
    (first,) = struct.unpack_from(">I", data)
    assert first == 1000  # the reply came in several fragments
    (record,) = records_of(data)
    assert opaque.decode(m.decode_reply(record).body) == payload


def test_unix_socket(service, tmp_path):
    srv = RpcServer([service])
    path = srv.listen_unix(str(tmp_path / "rpc.sock"))
    srv.start()
    try:
        with RpcClient(f"unix:{path}", timeout=10) as c:
            assert add(c, 20, 22) == 42
    finally:
        srv.shutdown()
    assert not (tmp_path / "rpc.sock").exists()


def test_many_threads_share_one_connection(client):
    errors: list[BaseException] = []

    def worker(base: int) -> None:
        try:
            for i in range(200):
                assert add(client, base, i) == base + i
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k * 100000,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert client.in_flight == 0


def test_pipelined_calls_answered_in_order_of_sending(client, service):
    pending = [client.call_async(PROG, 1, 7, xdr_int.encode(i)) for i in range(500)]
    results = [xdr_int.decode(p.result()) for p in reversed(pending)]
    assert results == list(range(500, 0, -1))


def test_pipelined_large_calls_do_not_deadlock(client):
    """Replies nobody asked for yet fill the socket buffers; sending must still progress."""
    payload = b"\xab" * (256 << 10)
    pending = [client.call_async(PROG, 1, 1, opaque.encode(payload)) for _ in range(64)]
    assert all(opaque.decode(p.result()) == payload for p in pending)


def test_timeout_then_late_reply_is_dropped(client):
    with pytest.raises(RpcTimeout, match="procedure 5"):
        client.call(PROG, 1, 5, xdr_u_int.encode(300), timeout=0.05)
    assert client.in_flight == 0
    assert add(client, 3, 4) == 7  # waits behind the sleep; the late reply is ignored


def test_follower_timeout_while_another_thread_reads(client):
    slow = client.call_async(PROG, 1, 5, xdr_u_int.encode(300))
    reader = threading.Thread(target=slow.result)
    reader.start()
    with pytest.raises(RpcTimeout):
        client.call_async(PROG, 1, 0).result(timeout=0.05)
    reader.join()
    assert slow.result() == b""


def test_connection_closed_by_server_fails_pending_calls(client):
    closing = client.call_async(PROG, 1, 8)
    after = client.call_async(PROG, 1, 0)  # sent, never answered: the server hangs up first
    assert closing.result() == b""
    with pytest.raises(ConnectionLost):
        after.result()
    with pytest.raises(ConnectionLost, match="procedure 0"):
        client.call(PROG, 1, 0)


def test_mixed_timeouts_from_many_threads_all_finish(client):
    """Readers time out and hand over the reading role; no waiter is left without a reader."""
    outcomes: list[str] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(40):
            ms = rng.choice([0, 0, 1, 3])
            timeout = rng.choice([None, 0.001, 0.002, 10])
            try:
                client.call(PROG, 1, 5, xdr_u_int.encode(ms), timeout=timeout)
                outcomes.append("ok")
            except RpcTimeout:
                outcomes.append("timeout")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert len(outcomes) == 8 * 40
    assert client.in_flight == 0
    assert add(client, 1, 2) == 3


def test_server_side_close_from_another_thread(client, service):
    client.call(PROG, 1, 7, xdr_int.encode(1))
    (connection,) = service.connections
    connection.close()
    with pytest.raises(ConnectionLost):
        client.call(PROG, 1, 0)
    deadline = time.monotonic() + 60
    while connection.id not in service.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert service.closed == [connection.id]


def test_close_fails_calls_in_flight(server):
    c = RpcClient(server.address)
    pending = c.call_async(PROG, 1, 5, xdr_u_int.encode(200))
    c.close()
    with pytest.raises(ConnectionLost):
        pending.result()


def test_close_callbacks_run_once_per_connection(server, service):
    for _ in range(2):
        with RpcClient(server.address, timeout=10) as c:
            assert xdr_int.decode(c.call(PROG, 1, 7, xdr_int.encode(1))) == 1
            assert xdr_int.decode(c.call(PROG, 1, 7, xdr_int.encode(2))) == 2
    deadline = time.monotonic() + 60
    while len(service.closed) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(service.closed) == 2 and len(set(service.closed)) == 2


def test_shutdown_runs_close_callbacks_of_open_connections(service):
    srv = RpcServer([service])
    address = srv.listen_tcp("127.0.0.1", 0)
    srv.start()
    c = RpcClient(address, timeout=10)
    c.call(PROG, 1, 7, xdr_int.encode(1))
    srv.shutdown()
    assert len(service.closed) == 1
    with pytest.raises(ConnectionLost):
        c.call(PROG, 1, 0)
    c.close()


# -- misbehaving peers --------------------------------------------------------------------------


def test_stalled_half_record_does_not_block_others(server, client):
    with raw_connect(server) as stalled:
        call = m.encode_call_header(1, PROG, 1, 0, m.NULL_AUTH, m.NULL_AUTH)
        stalled.sendall(struct.pack(">I", 0x80000000 | (len(call) + 100)) + call)
        assert add(client, 5, 6) == 11
        with RpcClient(server.address, timeout=10) as other:
            assert add(other, 1, 2) == 3


def test_connection_reset_mid_record_does_not_block_others(server, client):
    bad = raw_connect(server)
    call = m.encode_call_header(1, PROG, 1, 1, m.NULL_AUTH, m.NULL_AUTH)
    bad.sendall(struct.pack(">I", 0x80000000 | (len(call) + 1000)) + call + b"\0" * 100)
    bad.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    bad.close()  # RST with half a record sent
    assert add(client, 2, 2) == 4
    with RpcClient(server.address, timeout=10) as other:
        assert add(other, 3, 3) == 6


def test_serve_forever_on_own_thread_stops_at_shutdown(service):
    srv = RpcServer([service])
    address = srv.listen_tcp("127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever)
    thread.start()
    with RpcClient(address, timeout=10) as c:
        assert add(c, 1, 2) == 3
        srv.shutdown()
        thread.join(timeout=60)
        assert not thread.is_alive()
        with pytest.raises(ConnectionLost):
            c.call(PROG, 1, 0)


def test_idle_timeout_closes_a_stalled_connection(service):
    with (
        serving(RpcServer([service], idle_timeout=0.1)) as address,
        socket.create_connection(address, timeout=10) as sock,
    ):
        sock.sendall(struct.pack(">I", 0x80000000 | 100) + b"\0" * 10)
        assert read_until_eof(sock) == b""


@pytest.mark.parametrize(
    "data",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # garbage: a 1.2 GB fragment header
        struct.pack(">I", 0x80000000 | 0x7FFFFFFF),  # 2 GiB record
        struct.pack(">I", 0x80000000 | 24) + struct.pack(">6I", 1, 1, 0, 0, 0, 0),  # a REPLY
        struct.pack(">I", 0x80000000 | 8) + b"\0" * 8,  # too short for a call
    ],
)
def test_misbehaving_connection_is_closed_alone(server, client, data):
    with raw_connect(server) as bad:
        bad.sendall(data)
        assert read_until_eof(bad) == b""
    assert add(client, 1, 1) == 2


def test_client_refuses_huge_reply_header():
    listener = socket.create_server(("127.0.0.1", 0))

    def fake_server() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(struct.pack(">I", 0x80000000 | 0x7FFFFFFF))
            conn.recv(1024)  # until the client hangs up

    thread = threading.Thread(target=fake_server)
    thread.start()
    try:
        with RpcClient(listener.getsockname(), max_record=1 << 20, timeout=10) as c:
            with pytest.raises(RecordTooLarge, match="2147483647"):
                c.call(PROG, 1, 0)
            with pytest.raises(ConnectionLost):
                c.call(PROG, 1, 0)
    finally:
        thread.join()
        listener.close()


def test_fuzzed_records_get_valid_replies_or_a_closed_connection(server):
    rng = random.Random(5531)
    valid = [
        m.encode_call_header(1, PROG, 1, 2, m.NULL_AUTH, m.NULL_AUTH) + struct.pack(">ii", 1, 2),
        m.encode_call_header(2, PROG, 1, 1, m.NULL_AUTH, m.NULL_AUTH) + opaque.encode(b"abc"),
        m.encode_call_header(3, PROG, 1, 7, *AuthSys(AuthSysParams("x", 1, 1)).credentials())
        + struct.pack(">i", 5),
    ]
    for _ in range(300):
        record = bytearray(rng.choice(valid))
        kind = rng.randrange(4)
        if kind == 0:
            record = bytearray(rng.randbytes(rng.randrange(0, 80)))
        elif kind == 1:
            for _ in range(rng.randrange(1, 4)):
                record[rng.randrange(len(record))] = rng.randrange(256)
        elif kind == 2:
            record = record[: rng.randrange(len(record) + 1)]
        else:
            pos = rng.randrange(0, len(record) - 3, 4)
            record[pos : pos + 4] = struct.pack(">I", rng.choice([0, 1, 2, 0xFFFFFFFF, 400, 401]))
        header = 0x80000000 | len(record)
        if rng.random() < 0.1:
            header = rng.getrandbits(32)
        with raw_connect(server) as sock:
            sock.sendall(struct.pack(">I", header) + bytes(record))
            sock.shutdown(socket.SHUT_WR)
            for reply in records_of(read_until_eof(sock)):
                m.decode_reply(reply)  # whatever came back is a well-formed reply
    with RpcClient(server.address, timeout=10) as fresh:
        assert add(fresh, 20, 22) == 42


def test_large_calls_from_many_threads_stay_whole(client):
    """Records sent in several steps by one thread are not interleaved with others' calls."""
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        payload = bytes([k]) * (300 << 10)
        try:
            for _ in range(5):
                assert opaque.decode(client.call(PROG, 1, 1, opaque.encode(payload))) == payload
                assert add(client, k, 1) == k + 1
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
