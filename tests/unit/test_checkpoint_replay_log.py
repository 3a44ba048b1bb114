"""The client's replay log: numbering, copies of payloads, its bound, and what it can replay."""

from __future__ import annotations

from cricket_client.replay import ENTRY_OVERHEAD, ReplayLog
from rpc_spec import cricket_rpc as proto


def test_calls_are_numbered_and_logged_only_after_a_checkpoint() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    book.begin([("CU_MEM_ALLOC", (16,)), ("GET_ERROR_MESSAGE", ())])
    assert (book.seq, len(book.entries)) == (
        1,
        0,
    )  # numbered, not logged; GET_ERROR_MESSAGE uncounted
    book.restart_at(book.seq, "/ckpt")
    book.begin([("CU_MEMSET", (1, 2, 1, 3)), ("CU_LAUNCH_KERNEL", (object(),))])
    assert [(e.seq, e.proc) for e in book.entries] == [(2, "CU_MEMSET"), (3, "CU_LAUNCH_KERNEL")]
    assert [e.seq for e in book.to_replay(2)] == [3]  # type: ignore[union-attr]
    assert book.to_replay(3) == []


def test_payloads_are_copied_so_the_caller_may_reuse_its_buffers() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    book.restart_at(0)
    data = bytearray(b"abcd")
    launch = proto.launch_args(1, 1, 1, 1, 1, 1, 1, 0, 0, memoryview(bytearray(b"\x01\x02")))
    book.begin(
        [("CU_MEMCPY_HTOD", (0x600000000000, memoryview(data))), ("CU_LAUNCH_KERNEL", (launch,))]
    )
    data[:] = b"zzzz"
    launch.params[0] = 9  # type: ignore[index]
    assert book.entries[0].args[1] == b"abcd"
    assert book.entries[1].args[0].params == b"\x01\x02"
    assert book.bytes == 4 + 2 + 2 * ENTRY_OVERHEAD


def test_rollback_forgets_calls_that_are_sent_again() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    book.restart_at(0)
    book.begin([("CU_MEM_ALLOC", (16,))])
    mark = book.begin([("CU_MEMCPY_HTOD", (0, b"x" * 10)), ("CU_MEM_FREE", (0,))])
    book.rollback(mark)
    assert book.seq == 1 and [e.proc for e in book.entries] == ["CU_MEM_ALLOC"]
    assert book.bytes == ENTRY_OVERHEAD


def test_replies_with_pointers_are_kept_to_check_the_replay() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    book.restart_at(0)
    mark = book.begin([("CU_MEM_ALLOC", (16,))])
    reply = proto.ptr_result(0, 0x600000000100)
    book.settle(mark, (0, reply))
    assert book.entries[0].expect == reply


def test_the_bound_and_what_cannot_be_replayed() -> None:
    book = ReplayLog(max_bytes=1000)
    book.begin([("CU_MEM_ALLOC", (16,))])
    assert isinstance(book.to_replay(0), str)  # nothing logged before a checkpoint
    book.restart_at(1)
    book.begin([("CU_MEMCPY_HTOD", (0, b"x" * 2000))])
    assert book.full()
    book.give_up()
    assert not book.full() and "outgrew its bound of 1000 bytes" in book.to_replay(1)  # type: ignore[operator]
    book.restart_at(book.seq)
    assert "older than the replay log" in book.to_replay(0)  # type: ignore[operator]
    assert "more than the" in book.to_replay(5)  # type: ignore[operator]


def test_a_new_checkpoint_keeps_the_calls_that_came_after_it() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    book.restart_at(0)
    book.begin([("CU_MEMSET", (1,)), ("CU_MEMSET", (2,)), ("CU_MEMSET", (3,))])
    book.restart_at(2)  # another thread's call 3 was sent after the checkpoint's cut
    assert [e.seq for e in book.entries] == [3] and book.base == 2
    assert [e.args for e in book.to_replay(2)] == [(3,)]  # type: ignore[union-attr]


def test_a_first_checkpoint_cannot_vouch_for_calls_it_did_not_log() -> None:
    book = ReplayLog(max_bytes=1 << 20)
    book.begin([("CU_MEMSET", (1,)), ("CU_MEMSET", (2,))])
    book.restart_at(1)  # call 2 followed the cut but was not logged
    assert book.base == 2
    assert "older than the replay log" in book.to_replay(1)  # type: ignore[operator]
