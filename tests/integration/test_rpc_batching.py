"""Small calls written together: deferred calls on the client, held replies on the server."""

from __future__ import annotations

import select
import threading

import pytest
from server_harness import serving

from cricket_xdr.rpc import ConnectionLost, RpcClient, RpcServer, SystemErr
from cricket_xdr.stubs import Procedure
from cricket_xdr.xdr import xdr_int, xdr_void

PROG = 0x20000097


class OrderService:
    """APPEND(n) records n and answers how many came before; TOTAL answers the count."""

    __test__ = False
    PROGRAM = PROG
    VERSION = 1
    PROCEDURES = {
        1: Procedure(1, "APPEND", (xdr_int,), xdr_int),
        2: Procedure(2, "TOTAL", (), xdr_int),
        3: Procedure(3, "FAIL", (), xdr_void),
        4: Procedure(4, "ASK_FOR_HELD", (), xdr_void),
    }
    DEFERRED_REPLIES = frozenset({1, 3})

    def __init__(self) -> None:
        self.seen: list[int] = []

    def APPEND(self, ctx, n):
        self.seen.append(n)
        return len(self.seen) - 1

    def TOTAL(self, ctx):
        return len(self.seen)

    def FAIL(self, ctx):
        raise RuntimeError("handler exploded")

    def ASK_FOR_HELD(self, ctx):
        """The client says it asks for held replies itself (as cricket's HELLO of version 2)."""
        ctx.connection.replies_may_wait = True


@pytest.fixture
def service():
    return OrderService()


@pytest.fixture
def client(service):
    with serving(RpcServer([service])) as address, RpcClient(address, timeout=10) as c:
        yield c


def append(client: RpcClient, n: int, *, defer: bool):
    return client.call_async(PROG, 1, 1, xdr_int.encode(n), defer=defer)


def test_deferred_calls_go_out_before_the_next_call_in_order(client, service):
    pendings = [append(client, n, defer=True) for n in range(10)]
    assert xdr_int.decode(client.call(PROG, 1, 2)) == 10
    assert service.seen == list(range(10))
    assert [xdr_int.decode(p.result()) for p in pendings] == list(range(10))


def test_waiting_for_a_deferred_call_sends_it(client, service):
    pending = append(client, 7, defer=True)
    assert xdr_int.decode(pending.result()) == 0
    assert service.seen == [7]


def test_explicit_flush_and_many_deferred_calls(client, service):
    pendings = [append(client, n, defer=True) for n in range(1000)]
    client.flush()
    assert [xdr_int.decode(p.result()) for p in pendings] == list(range(1000))
    assert service.seen == list(range(1000))


def test_held_replies_of_many_threads_all_arrive(client, service):
    def work(base: int) -> None:
        pendings = [append(client, base + n, defer=n % 3 != 0) for n in range(200)]
        for p in pendings:
            p.result()

    threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(service.seen) == sorted(k * 1000 + n for k in range(4) for n in range(200))
    assert xdr_int.decode(client.call(PROG, 1, 2)) == 800


def test_an_error_reply_among_held_ones_reaches_its_call(client):
    pendings = [append(client, 1, defer=True), client.call_async(PROG, 1, 3, defer=True)]
    with pytest.raises(SystemErr):
        pendings[1].result()
    assert xdr_int.decode(pendings[0].result()) == 0


def test_deferred_calls_fail_when_the_client_closes(service):
    with serving(RpcServer([service])) as address:
        c = RpcClient(address, timeout=10)
        pending = append(c, 1, defer=True)
        c.close()
        with pytest.raises(ConnectionLost):
            pending.result()


def _readable(client: RpcClient, seconds: float) -> bool:
    poller = select.poll()
    poller.register(client._fd, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def test_held_replies_wait_for_a_later_reply_when_the_client_asks_for_them(client, service):
    client.call(PROG, 1, 4)
    client.replies_may_wait(PROG, 1, OrderService.DEFERRED_REPLIES)
    first = append(client, 5, defer=False)
    assert not _readable(client, 0.3)  # nothing wakes a client waiting for something else
    assert xdr_int.decode(client.call(PROG, 1, 2)) == 1  # a later reply brings it along
    assert first.done() and xdr_int.decode(first.result()) == 0
    alone = append(client, 6, defer=False)
    assert xdr_int.decode(alone.result()) == 1  # waited for alone: a NULL call asks for it
    assert xdr_int.decode(client.call(PROG, 1, 1, xdr_int.encode(7))) == 2  # and synchronously
    assert service.seen == [5, 6, 7]


def test_without_the_clients_word_held_replies_go_when_nothing_is_left(client, service):
    pending = append(client, 5, defer=False)
    assert _readable(client, 10)  # the server wrote it, idle, with no later call
    assert xdr_int.decode(pending.result()) == 0
