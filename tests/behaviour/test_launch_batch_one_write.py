"""Gathered launches leave in one write with the synchronizing call after them (one wake-up
of the server for both), and still behave as if each came alone: their order, their results
and the first failure among them reported by that call. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
ONE = ((1,), (ctypes.c_int,))


class CountingSocket:
    """A client socket that records the size of each write (send or sendmsg)."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self.writes: list[int] = []

    def send(self, data: Any, *flags: int) -> int:
        sent = self._sock.send(data, *flags)
        self.writes.append(sent)
        return int(sent)

    def sendmsg(self, buffers: Any, *rest: Any) -> int:
        sent = self._sock.sendmsg(buffers, *rest)
        self.writes.append(sent)
        return int(sent)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@pytest.fixture
def writes(session: cricket_client.Connection) -> Iterator[CountingSocket]:
    """The session's writes, counted; its launches gathered until a call sends them."""
    rpc = session._rpc
    session.pipeline.launches.delay = 60.0  # no timer flush during the test
    counting = CountingSocket(rpc._sock)
    rpc._sock = counting
    yield counting
    rpc._sock = counting._sock


def _gather(session: cricket_client.Connection, kernels: Any, launches: int, bad: int = -1) -> Any:
    """A zeroed counter and `launches` launches adding 1 to it, at least one of them gathered
    (launch `bad` asks for too many threads)."""
    counter, _size = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    check(cuda.cuMemsetD32(counter, 0, 1))
    for i in range(launches):
        block = 2048 if i == bad else 1  # over the 1024 threads a block allows
        cuda.cuLaunchKernel(add, 1, 1, 1, block, 1, 1, 0, 0, ONE, 0)
    assert len(session.pipeline.launches) > 0
    return counter


def test_gathered_launches_and_the_read_after_them_leave_in_one_write(
    session: cricket_client.Connection, kernels: Any, writes: CountingSocket
) -> None:
    counter = _gather(session, kernels, 10)
    before = len(writes.writes)
    word = bytearray(4)
    check(cuda.cuMemcpyDtoH(word, counter, 4))
    assert struct.unpack("<i", word)[0] == 10
    assert len(writes.writes) - before == 1, writes.writes[before:]
    assert len(session.pipeline.launches) == 0


def test_a_failure_in_the_batch_is_the_result_of_the_read_that_took_it_along(
    session: cricket_client.Connection, kernels: Any, writes: CountingSocket
) -> None:
    counter = _gather(session, kernels, 10, bad=7)
    before = len(writes.writes)
    word = bytearray(4)
    assert cuda.cuMemcpyDtoH(word, counter, 4) == (E.CUDA_ERROR_INVALID_VALUE,)
    assert len(writes.writes) - before == 1
    assert "cuLaunchKernel" in cricket_client.last_error_message()
    check(cuda.cuMemcpyDtoH(word, counter, 4))  # not sticky; the other launches ran
    assert struct.unpack("<i", word)[0] == 9


def test_gathered_launches_leave_when_the_call_after_them_sends_nothing(
    session: cricket_client.Connection, kernels: Any, writes: CountingSocket
) -> None:
    counter = _gather(session, kernels, 10)
    before = len(writes.writes)
    session.set_local_error("answered here")
    assert session.last_error_message() == "answered here"  # sends no call
    assert len(writes.writes) - before == 1  # the launches left anyway
    assert len(session.pipeline.launches) == 0
    word = bytearray(4)
    check(cuda.cuMemcpyDtoH(word, counter, 4))
    assert struct.unpack("<i", word)[0] == 10
