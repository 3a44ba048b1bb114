"""A call whose record has several pieces (a bulk argument kept by reference, not joined)
takes the direct synchronous path of `RpcClient.call`: one gathered write, its reply read on
the calling thread, no pending-call bookkeeping; the bytes arrive exact at every size."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_harness import serving

from cricket_xdr.rpc import RpcClient, RpcServer
from cricket_xdr.stubs import Procedure
from cricket_xdr.xdr import BIG_PAYLOAD, Encoder, VarOpaque, xdr_u_hyper

PROG = 0x20000097
opaque = VarOpaque()


class SumService:
    """SUM(data): the sum of the bytes (proves every byte arrived)."""

    __test__ = False
    PROGRAM = PROG
    VERSION = 1
    PROCEDURES = {1: Procedure(1, "SUM", (opaque,), xdr_u_hyper)}
    VIEW_ARGS = frozenset({1})

    def SUM(self, ctx, data):
        return sum(bytes(data))


@pytest.fixture
def client() -> Iterator[RpcClient]:
    with serving(RpcServer([SumService()])) as address, RpcClient(address) as c:
        yield c


def _pieces(data: bytes) -> list:
    enc = Encoder()
    opaque.pack(enc, memoryview(data))
    return enc.buffers()


@pytest.mark.parametrize("size", [BIG_PAYLOAD - 1, BIG_PAYLOAD, BIG_PAYLOAD + 1, 200_003])
def test_a_record_of_several_pieces_goes_the_direct_way(
    client: RpcClient, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = bytes(i * 7 % 251 for i in range(size))
    pieces = _pieces(data)
    if size >= BIG_PAYLOAD:
        assert len(pieces) > 1  # the payload is a piece of its own
    # The general path waits for a pending call; the direct path never does.
    waited: list[int] = []
    real = client._result_of
    monkeypatch.setattr(client, "_result_of", lambda p, t: waited.append(1) or real(p, t))
    body = client.call(PROG, 1, 1, pieces)
    assert xdr_u_hyper.decode(body) == sum(data)
    if size < 128 << 10:  # fits the socket buffer: sent whole at once, answered directly
        assert waited == []
    assert client.in_flight == 0
