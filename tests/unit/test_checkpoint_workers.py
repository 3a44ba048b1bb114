"""Checkpoints across worker processes, in one process: workers stand in as sessions of their
own managers answering `checkpoint` messages; the main side (`checkpoint_workers`) commits
one directory of every part, or leaves the previous checkpoint whole. And the routing of a
restored session's HELLO: its token is read from the first record without consuming it."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint
from cricket_server.backends import make_backend
from cricket_server.checkpoints.sessions import restore_checkpoint
from cricket_server.checkpoints.workers import (
    PartRequests,
    answer_part_request,
    checkpoint_workers,
    decode_path,
)
from cricket_server.memory import AddressArena
from cricket_server.session import Session, SessionManager
from cricket_server.workers.routing import complete_first_record, hello_token
from cricket_xdr.rpc.message import NULL_AUTH, encode_call_header
from rpc_spec import cricket_rpc as proto


def manager() -> SessionManager:
    backend = make_backend("sim")
    return SessionManager(backend, AddressArena(*backend.address_space()))


class FakeWorker:
    """A worker: one session in a manager of its own, answering over a fake channel."""

    def __init__(self, pool: FakePool, pid: int, payload: bytes, fail: str | None = None) -> None:
        self.pool, self.pid, self.fail = pool, pid, fail
        self.manager = manager()
        self.session: Session = self.manager.open("127.0.0.1:1", f"worker{pid}")
        self.session.init(0)
        self.session.ctx_set_current(self.session.primary_ctx_retain(0))
        self.ptr = self.session.mem_alloc(len(payload))
        self.session.memcpy_htod(self.ptr, memoryview(payload))
        self.sessions = [f"{self.session.id:#x}"]
        self.channel = self

    def send(self, *fields: str) -> None:
        """Main -> worker: answer like a worker's control thread would."""
        if fields[0] == "checkpoint":
            threading.Thread(target=self._answer, args=fields[1:]).start()
        else:  # worker -> main
            self.pool.parts.take(self, list(fields))

    def _answer(self, rid: str, tmp: str) -> None:
        if self.fail == "gone":
            self.pool.parts.gone(self)
        elif self.fail is not None:
            decode_path(tmp).joinpath("half-written").write_bytes(b"x")
            self.pool.parts.take(self, ["part-failed", rid, self.fail])
        else:
            answer_part_request(self.manager, self, rid, tmp)


class FakePool:
    backend_name = "sim"

    def __init__(self) -> None:
        self.parts = PartRequests()
        self.workers: list[FakeWorker] = []

    def holding_sessions(self) -> list[FakeWorker]:
        return self.workers


def payloads() -> list[bytes]:
    rng = random.Random(3)
    return [rng.randbytes(n) for n in (70_000, 3 << 20, 12)]


def test_every_worker_writes_its_part_and_the_checkpoint_restores(tmp_path: Path) -> None:
    pool = FakePool()
    pool.workers = [FakeWorker(pool, pid, data) for pid, data in enumerate(payloads(), 1)]
    summary = checkpoint_workers(pool, tmp_path / "c")
    assert summary.sessions == 3 and summary.bytes == sum(map(len, payloads()))
    assert not list(tmp_path.glob("**/SESSION"))  # folded into the manifest
    assert not list(tmp_path.glob(".c.tmp-*"))
    ckpt = Checkpoint.open(tmp_path / "c")
    ckpt.verify()
    for w, data in zip(pool.workers, payloads(), strict=True):  # a worker per session
        (s,) = restore_checkpoint(manager(), tmp_path / "c", only={w.session.id}).sessions
        assert s.id == w.session.id and s.token_digest == w.session.token_digest
        assert bytes(s.memcpy_dtoh(w.ptr, len(data), None)) == data


def test_sessions_of_separate_workers_are_not_restored_into_one_process(tmp_path: Path) -> None:
    """Workers issue handles (and, here, addresses) independently: one process cannot hold
    them all, and the restore says so before it touches the device."""
    pool = FakePool()
    pool.workers = [FakeWorker(pool, pid, data) for pid, data in enumerate(payloads(), 1)]
    checkpoint_workers(pool, tmp_path / "c")
    fresh = manager()
    with pytest.raises(CheckpointError, match="--isolation process"):
        restore_checkpoint(fresh, tmp_path / "c")
    assert fresh.sessions() == []


def test_one_session_only(tmp_path: Path) -> None:
    pool = FakePool()
    pool.workers = [FakeWorker(pool, pid, data) for pid, data in enumerate(payloads(), 1)]
    wanted = pool.workers[1].session.id
    checkpoint_workers(pool, tmp_path / "one", wanted)
    assert [s.session_id for s in Checkpoint.open(tmp_path / "one").manifest.sessions] == [wanted]
    with pytest.raises(CheckpointError, match="no session 0x1234"):
        checkpoint_workers(pool, tmp_path / "none", 0x1234)
    assert not (tmp_path / "none").exists()


def test_a_failed_part_leaves_the_previous_checkpoint_whole(tmp_path: Path) -> None:
    pool = FakePool()
    pool.workers = [FakeWorker(pool, pid, data) for pid, data in enumerate(payloads(), 1)]
    checkpoint_workers(pool, tmp_path / "c")
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    pool.workers[1].fail = "worker 2: cuMemcpyDtoH: the device is gone"
    with pytest.raises(CheckpointError, match="worker 2: cuMemcpyDtoH: the device is gone"):
        checkpoint_workers(pool, tmp_path / "c")
    after = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # no temporary directory left, the old checkpoint untouched
    Checkpoint.open(tmp_path / "c").verify()


def test_a_worker_that_ends_meanwhile_is_left_out(tmp_path: Path) -> None:
    pool = FakePool()
    pool.workers = [FakeWorker(pool, pid, data) for pid, data in enumerate(payloads(), 1)]
    pool.workers[0].fail = "gone"
    summary = checkpoint_workers(pool, tmp_path / "c")
    ids = {s.session_id for s in Checkpoint.open(tmp_path / "c").manifest.sessions}
    assert summary.sessions == 2
    assert ids == {w.session.id for w in pool.workers[1:]}


def _record(proc: int, body: bytes) -> bytes:
    call = encode_call_header(7, proto.CRICKET_PROG, proto.CRICKET_V1, proc, NULL_AUTH, NULL_AUTH)
    return struct.pack(">I", 0x80000000 | (len(call) + len(body))) + call + body


def test_the_token_of_a_hello_is_peeked_and_left_for_the_worker() -> None:
    token = bytes(range(32))
    hello = proto.xdr_hello_args.encode(
        proto.hello_args(protocol_version=1, session_token=token, client_name="x@y")
    )
    record = _record(proto.HELLO, hello)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(record[:10])  # the rest comes later: until then the record is not here
        assert complete_first_record(theirs) is None
        ours.sendall(record[10:])
        deadline = time.monotonic() + 30
        while (first := complete_first_record(theirs)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert first is not None and hello_token(first) == token
        assert theirs.recv(len(record), socket.MSG_WAITALL) == record  # nothing consumed


def test_other_first_records_carry_no_token() -> None:
    assert hello_token(_record(0, b"")[4:]) == b""  # NULL
    empty = proto.xdr_hello_args.encode(
        proto.hello_args(protocol_version=1, session_token=b"", client_name="x")
    )
    assert hello_token(_record(proto.HELLO, empty)[4:]) == b""
    assert hello_token(b"\x16\x03\x01 not rpc") == b""  # e.g. a TLS ClientHello
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.close()
        with pytest.raises(ConnectionError):
            complete_first_record(theirs)
