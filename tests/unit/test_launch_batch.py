"""CU_LAUNCH_KERNEL_BATCH and CU_GRAPH_LAUNCH_BATCH: the server's struct readers agree with the
generated codecs on every input, and the client's LaunchBatcher sends at once, gathers, flushes and times out as told."""

from __future__ import annotations

import random
import threading

import pytest

from cricket_client.launch_batch import GRAPHS, KERNELS, LaunchBatcher
from cricket_server.launch_batch import decode_graph_launch_batch, decode_launch_batch
from cricket_xdr.xdr import XdrDecodeError, XdrError
from rpc_spec import cricket_rpc as proto


def _launch(rng: random.Random, n_params: int) -> proto.launch_args:
    return proto.launch_args(
        function=rng.getrandbits(64),
        grid_x=rng.getrandbits(32),
        grid_y=rng.randrange(1, 9),
        grid_z=1,
        block_x=rng.randrange(1, 1025),
        block_y=1,
        block_z=rng.getrandbits(32),
        shared_mem_bytes=rng.randrange(0, 1 << 16),
        stream=rng.choice([0, 2, rng.getrandbits(64)]),
        params=rng.randbytes(n_params),
    )


def _flat(args: proto.launch_args) -> tuple[object, ...]:
    return (
        args.function, args.grid_x, args.grid_y, args.grid_z, args.block_x, args.block_y,
        args.block_z, args.shared_mem_bytes, args.stream, bytes(args.params),
    )


@pytest.mark.parametrize("count", [0, 1, 2, 17, 128])
def test_reader_agrees_with_the_generated_codec(count: int) -> None:
    rng = random.Random(count)
    batch = [_launch(rng, rng.randrange(0, 40)) for _ in range(count)]
    body = proto.xdr_launch_batch.encode(batch)
    fast = [(*launch[:9], bytes(launch[9])) for launch in decode_launch_batch(body)]
    assert fast == [_flat(a) for a in proto.xdr_launch_batch.decode(body)]


def test_reader_refuses_what_the_codec_refuses() -> None:
    rng = random.Random(5)
    body = proto.xdr_launch_batch.encode([_launch(rng, n) for n in (0, 3, 8, 5)])
    for cut in range(len(body)):  # every truncation
        with pytest.raises(XdrError):
            proto.xdr_launch_batch.decode(body[:cut])
        with pytest.raises(XdrDecodeError):
            decode_launch_batch(body[:cut])
    for extra in (b"\0\0\0\0", b"\1"):  # trailing bytes
        with pytest.raises(XdrError):
            proto.xdr_launch_batch.decode(body + extra)
        with pytest.raises(XdrDecodeError, match="trailing"):
            decode_launch_batch(body + extra)
    too_many = (proto.MAX_LAUNCH_BATCH + 1).to_bytes(4, "big") + body[4:]
    with pytest.raises(XdrDecodeError, match="exceeds the bound"):
        decode_launch_batch(too_many)
    huge_params = bytearray(body)
    huge_params[4 + 44 : 4 + 48] = (1 << 31).to_bytes(4, "big")  # first launch's params length
    with pytest.raises(XdrDecodeError, match="params"):
        decode_launch_batch(bytes(huge_params))


def _graph_launch(rng: random.Random, n: int) -> proto.graph_launch_args:
    return proto.graph_launch_args(
        exec=rng.getrandbits(64), stream=rng.choice([0, 2, rng.getrandbits(64)]),
        host_in=rng.randbytes(n),
    )


@pytest.mark.parametrize("count", [0, 1, 3, 128])
def test_graph_reader_agrees_with_the_generated_codec(count: int) -> None:
    rng = random.Random(count)
    batch = [_graph_launch(rng, rng.randrange(0, 4100)) for _ in range(count)]
    body = proto.xdr_graph_launch_batch.encode(batch)
    fast = [(e, s, bytes(data)) for e, s, data in decode_graph_launch_batch(body)]
    assert fast == [(a.exec, a.stream, bytes(a.host_in)) for a in batch]
    assert fast == [(a.exec, a.stream, bytes(a.host_in)) for a in proto.xdr_graph_launch_batch.decode(body)]


def test_graph_reader_refuses_what_the_codec_refuses() -> None:
    rng = random.Random(9)
    body = proto.xdr_graph_launch_batch.encode([_graph_launch(rng, n) for n in (0, 3, 8, 5)])
    for cut in range(len(body)):
        with pytest.raises(XdrError):
            proto.xdr_graph_launch_batch.decode(body[:cut])
        with pytest.raises(XdrDecodeError):
            decode_graph_launch_batch(body[:cut])
    with pytest.raises(XdrDecodeError, match="trailing"):
        decode_graph_launch_batch(body + b"\0\0\0\0")
    too_many = (proto.MAX_LAUNCH_BATCH + 1).to_bytes(4, "big") + body[4:]
    with pytest.raises(XdrDecodeError, match="exceeds the bound"):
        decode_graph_launch_batch(too_many)
    huge = bytearray(body)
    huge[4 + 16 : 4 + 20] = (1 << 31).to_bytes(4, "big")  # first launch's host_in length
    with pytest.raises(XdrDecodeError, match="host_in"):
        decode_graph_launch_batch(bytes(huge))


class _Sink:
    def __init__(self) -> None:
        self.sent: list[tuple[int, bytes]] = []
        self.arrived = threading.Event()
        self.procs: list[str] = []

    def __call__(self, proc: str, count: int, body: bytes) -> None:
        self.procs.append(proc)
        self.sent.append((count, body))
        self.arrived.set()

    def launches(self) -> list[bytes]:
        out = []
        for count, body in self.sent:
            assert int.from_bytes(body[:4], "big") == count
            out += [body[4 + 4 * i : 8 + 4 * i] for i in range(count)]
        return out


def test_batcher_sends_at_once_gathers_and_flushes_in_order() -> None:
    sink = _Sink()
    batcher = LaunchBatcher(sink, max_launches=4, delay=60.0)
    batcher.add(b"L000", at_once=True)
    assert sink.sent == [(1, b"\0\0\0\1L000")]
    for i in range(1, 10):
        batcher.add(f"L{i:03}".encode(), at_once=False)
    assert [count for count, _ in sink.sent] == [1, 4, 4]  # full batches left, one waits
    assert len(batcher) == 1
    batcher.flush()
    assert [count for count, _ in sink.sent] == [1, 4, 4, 1]
    assert sink.launches() == [f"L{i:03}".encode() for i in range(10)]
    batcher.flush()  # nothing queued: nothing sent
    assert len(sink.sent) == 4
    batcher.close()


def test_a_batch_holds_one_kind_of_launch_and_keeps_the_order_between_kinds() -> None:
    sink = _Sink()
    batcher = LaunchBatcher(sink, max_launches=100, delay=60.0)
    batcher.add(b"K000", at_once=False)
    batcher.add(b"K001", at_once=False)
    batcher.add(b"G000", at_once=False, proc=GRAPHS)  # the kernels' batch leaves first
    batcher.add(b"G001", at_once=False, proc=GRAPHS)
    batcher.add(b"K002", at_once=False)
    batcher.flush()
    assert sink.procs == [KERNELS, GRAPHS, KERNELS]
    assert [count for count, _ in sink.sent] == [2, 2, 1]
    assert sink.launches() == [b"K000", b"K001", b"G000", b"G001", b"K002"]
    batcher.close()


def test_batcher_bounds_a_batch_by_bytes() -> None:
    sink = _Sink()
    batcher = LaunchBatcher(sink, max_launches=100, max_bytes=12, delay=60.0)
    for i in range(6):
        batcher.add(f"L{i:03}".encode(), at_once=False)
    assert [count for count, _ in sink.sent] == [3, 3]
    batcher.close()
