"""Snapshot and restore of sessions in one process on the sim backend: same handles, same
addresses, bit-exact contents; a refused or failed restore leaves nothing behind."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint, blob_refs
from cricket_server.backends import make_backend
from cricket_server.checkpoints.sessions import restore_checkpoint, write_checkpoint
from cricket_server.memory import AddressArena
from cricket_server.resources import COUNTER_MASK, EventRecord, HandleKind
from cricket_server.session import Session, SessionManager

ROOT = Path(__file__).resolve().parents[2]
CUBIN = (ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin").read_bytes()
SIZES = [1, 300, 70_000, 3 << 20]


def manager() -> SessionManager:
    backend = make_backend("sim")
    return SessionManager(backend, AddressArena(*backend.address_space()))


def build(m: SessionManager) -> tuple[Session, dict[str, object]]:
    s = m.open("127.0.0.1:1", "test")
    s.init(0)
    s.ctx_set_current(s.primary_ctx_retain(0))
    rng = random.Random(7)
    data = {}
    for size in SIZES:
        ptr = s.mem_alloc(size)
        data[ptr] = rng.randbytes(size)
        s.memcpy_htod(ptr, memoryview(data[ptr]))
    module = s.module_load(CUBIN, {})
    function = s.module_get_function(module, "list_sum")
    counter, _ = s.module_get_global(module, "counter")
    s.memcpy_htod(counter, memoryview(b"\x2a\x00\x00\x00"))
    stream = s.stream_create(1, -1)
    event = s.event_create(2)
    pushed = s.ctx_create(0, 0)
    return s, dict(
        data=data,
        module=module,
        function=function,
        counter=counter,
        stream=stream,
        event=event,
        ctx=pushed,
        stack=s.context_stack(),
    )


def test_restore_brings_back_handles_addresses_and_contents(tmp_path: Path) -> None:
    old, state = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    m = manager()
    report = restore_checkpoint(m, tmp_path / "c")
    assert report.moved_globals == [] and report.warnings == []
    (s,) = report.sessions
    assert (s.id, s.token_digest, s.resumable) == (old.id, old.token_digest, True)
    assert m.resume(old.token) is s and not s.resumable
    with pytest.raises(Exception, match="no restored session waits"):
        m.resume(old.token)  # taken once
    assert sorted(r.handle for r in s.handles.records()) == sorted(
        r.handle for r in old.handles.records()
    )
    assert s.context_stack() == state["stack"]
    for ptr, data in state["data"].items():  # type: ignore[attr-defined]
        assert bytes(s.memcpy_dtoh(ptr, len(data))) == data
    assert [(a.ptr, a.size, a.buffer_id) for a in s.memory.allocations()] == [
        (a.ptr, a.size, a.buffer_id) for a in old.memory.allocations()
    ]
    assert s.module_get_function(state["module"], "list_sum") == state["function"]
    assert s.module_get_global(state["module"], "counter")[0] == state["counter"]
    assert bytes(s.memcpy_dtoh(state["counter"], 4)) == b"\x2a\x00\x00\x00"
    s.stream_synchronize(state["stream"])
    s.event_record(state["event"], state["stream"])
    # new handles and buffer ids come after the restored ones
    fresh = s.stream_create(0)
    top = max(r.handle & COUNTER_MASK for r in old.handles.records())
    assert fresh & COUNTER_MASK > top and fresh >> 56 == HandleKind.STREAM
    new_ptr = s.mem_alloc(16)
    assert s.memory.allocation(new_ptr).buffer_id > max(
        a.buffer_id for a in old.memory.allocations()
    )


def test_a_corrupt_checkpoint_is_refused_before_the_device_is_touched(tmp_path: Path) -> None:
    old, _ = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    ref = Checkpoint.open(tmp_path / "c").manifest.sessions[0].allocations[-1].contents
    blob = tmp_path / "c" / ref.file
    blob.write_bytes(blob.read_bytes()[:-1])
    m = manager()
    free = m.arena.free_bytes()
    with pytest.raises(CheckpointError) as info:
        restore_checkpoint(m, tmp_path / "c")
    assert info.value.path == str(blob)
    assert m.sessions() == [] and m.arena.free_bytes() == free


def test_a_restore_failing_half_way_releases_what_it_made(tmp_path: Path) -> None:
    old, state = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    m = manager()
    squatter = m.open("127.0.0.1:2", "squatter")
    squatter.init(0)
    for _ in range(20):  # move the handle counter past the checkpoint's handles
        squatter.handles.remove(
            squatter.handles.add(HandleKind.EVENT, EventRecord, ctx=0, obj=None, flags=0).handle
        )
    squatter.ctx_set_current(squatter.primary_ctx_retain(0))
    taken = squatter.mem_alloc(3 << 20)  # the large allocation's address in the new server
    assert taken in state["data"]  # type: ignore[operator]
    free = m.arena.free_bytes()
    with pytest.raises(CheckpointError, match=f"allocation \\[{taken:#x}") as info:
        restore_checkpoint(m, tmp_path / "c")
    assert "cannot be had at its address" in str(info.value)
    assert m.sessions() == [squatter]
    assert m.arena.free_bytes() == free
    for record in old.handles.records():  # every handle went back
        assert m.registry.owner_of(record.handle) is None


def test_handles_live_here_are_refused_before_the_device_is_touched(tmp_path: Path) -> None:
    old, _ = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    m = manager()
    other = m.open("127.0.0.1:2", "other")
    other.init(0)
    other.primary_ctx_retain(0)  # takes the first handle value, as the old session did
    free = m.arena.free_bytes()
    with pytest.raises(CheckpointError, match=f"is live here in session {other.id:#x}"):
        restore_checkpoint(m, tmp_path / "c")
    assert m.sessions() == [other] and m.arena.free_bytes() == free


def test_a_session_already_living_here_is_refused(tmp_path: Path) -> None:
    old, _ = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    with pytest.raises(CheckpointError, match="already lives on this server"):
        restore_checkpoint(old.manager, tmp_path / "c")


def test_closed_sessions_cannot_be_checkpointed(tmp_path: Path) -> None:
    old, _ = build(manager())
    old.close("test")
    with pytest.raises(CheckpointError, match="is closed"):
        write_checkpoint(old.manager, [old], tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_the_server_trigger_writes_on_request_and_on_sigusr1(tmp_path: Path) -> None:
    import os
    import signal

    from cricket_server.checkpoints.sessions import CheckpointTrigger

    old, state = build(manager())
    trigger = CheckpointTrigger(old.manager, tmp_path / "c").start()
    try:
        trigger.request()
        assert trigger.wait_completed(1, timeout=60)
        assert trigger.last_error is None
        assert [s.session_id for s in Checkpoint.open(tmp_path / "c").manifest.sessions] == [old.id]
        ptr = next(iter(state["data"]))  # type: ignore[call-overload]
        old.memcpy_htod(ptr, memoryview(b"\xee"))
        previous = signal.getsignal(signal.SIGUSR1)
        trigger.install_sigusr1()
        try:
            os.kill(os.getpid(), signal.SIGUSR1)
            assert trigger.wait_completed(2, timeout=60)
        finally:
            signal.signal(signal.SIGUSR1, previous)
        ckpt = Checkpoint.open(tmp_path / "c")
        first = ckpt.manifest.sessions[0].allocations[0]
        assert first.ptr == ptr and ckpt.read_blob(first.contents) == b"\xee"
    finally:
        trigger.stop()


def test_restored_sessions_no_client_took_can_be_freed(tmp_path: Path) -> None:
    from cricket_server.checkpoints.sessions import close_unclaimed

    first, _ = build(manager())
    second, _ = build(first.manager)
    write_checkpoint(first.manager, [first, second], tmp_path / "c")
    m = manager()
    free = m.arena.free_bytes()
    restore_checkpoint(m, tmp_path / "c")
    taken = m.resume(second.token)
    assert close_unclaimed(m) == 1
    assert m.sessions() == [taken]
    taken.close("test")
    assert m.arena.free_bytes() == free


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, int], int]:
    """Reads of each piece, (file, index) -> count."""
    from checkpoint.pieces import Blob, Piece

    reads: dict[tuple[str, int], int] = {}
    original = Blob.read

    def counting(self: Blob, piece: Piece) -> bytes:
        key = (self.ref.file, piece.index)
        reads[key] = reads.get(key, 0) + 1
        return original(self, piece)

    monkeypatch.setattr(Blob, "read", counting)
    return reads


def test_a_restore_reads_each_blob_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, state = build(manager())
    write_checkpoint(old.manager, [old], tmp_path / "c")
    reads = _count_reads(monkeypatch)
    (s,) = restore_checkpoint(manager(), tmp_path / "c").sessions
    every = {(ref.file, i) for _w, ref in blob_refs(Checkpoint.open(tmp_path / "c").manifest)
             for i in range(len(ref.pieces))}  # fmt: skip
    assert set(reads) == every and set(reads.values()) == {1}
    for ptr, data in state["data"].items():  # type: ignore[attr-defined]
        assert bytes(s.memcpy_dtoh(ptr, len(data))) == data
