"""Fuzzing a live cricket-server (sim, thread isolation) with 10^5 records.

Arguments of every CRICKET_V1 procedure are generated from the generated PROCEDURES table and
its codecs (random values of each XDR type, biased to edge values), encoded, and half of them
mutated (bytes flipped, cut, grown; procedure, version and program numbers changed). They are
sent pipelined on a few connections (`call_async`) and every answer is counted. A smaller share
of raw records with broken record marks, xids and message types goes over plain sockets.
Afterwards: no Traceback in the server's log, its threads and descriptors back to where they
were, the device memory back to where it was, and a fresh session works.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from server_harness import Server, running_server, steady

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr import xdr
from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import RemoteRpcError
from rpc_spec import cricket_rpc as proto

E = cuda.CUresult
RECORDS = 100_000
CONNECTIONS = 4
WINDOW = 256  # calls in flight per connection
RAW_RECORDS = 2_000
SETTLE_LIMIT = 120.0  # seconds the server may take to close what 10^5 records opened
SERVER = proto.CRICKET_V1_Server
NOT_FUZZED = {proto.GOODBYE}  # ends the session: the rest would only see NOT_INITIALIZED
PATH_PROCS = {proto.CHECKPOINT_SESSION, proto.CHECKPOINT_SERVER}  # paths stay in tmp
EDGE_INTS = (0, 1, -1, 2, 3, 4, 16, 255, 256, 4096, 1 << 20, 1 << 31, (1 << 31) - 1, 1 << 32)


def random_value(codec: xdr.Codec, rng: random.Random, depth: int = 0) -> Any:
    """A random value that `codec` encodes, biased to edge values."""
    if isinstance(codec, xdr.Enum):
        return rng.choice(list(codec.members.values()))
    if isinstance(codec, xdr._Bool):
        return rng.random() < 0.5
    if isinstance(codec, xdr._Void):
        return None
    if isinstance(codec, xdr._Scalar):
        return _scalar(codec.fmt or "i", rng)
    if isinstance(codec, xdr.FixedOpaque):
        return rng.randbytes(codec.size)
    if isinstance(codec, xdr.VarOpaque):
        return rng.randbytes(min(codec.bound, rng.choice((0, 1, 7, 64, 4096))))
    if isinstance(codec, xdr.String):
        return "".join(rng.choice("abc/._-x") for _ in range(min(codec.bound, rng.randrange(12))))
    if isinstance(codec, xdr.FixedArray):
        return [random_value(codec.elem, rng, depth + 1) for _ in range(codec.size)]
    if isinstance(codec, xdr.VarArray):
        count = 0 if depth > 3 else min(codec.bound, rng.choice((0, 1, 2, 5)))
        return [random_value(codec.elem, rng, depth + 1) for _ in range(count)]
    if isinstance(codec, xdr.Optional):
        return None if depth > 3 or rng.random() < 0.5 else random_value(codec.elem, rng, depth + 1)
    if isinstance(codec, xdr.Struct):
        assert codec.cls is not None
        return codec.cls(*(random_value(c, rng, depth + 1) for _, c in codec.fields))
    if isinstance(codec, xdr.Union):
        assert codec.cls is not None
        cases = list(codec.arms)
        disc = rng.choice(cases) if cases else 0
        arm = codec.arms.get(disc, codec.default)
        return codec.cls(disc, None if arm is None else random_value(arm, rng, depth + 1))
    raise AssertionError(f"no generator for {codec!r}")


def _scalar(fmt: str, rng: random.Random) -> int | float:
    if fmt in "fd":
        return rng.choice((0.0, 1.0, -1.5, 1e30, float("inf")))
    bits = {"i": 32, "I": 32, "q": 64, "Q": 64}.get(fmt, 32)
    signed = fmt.islower()
    value = rng.choice(EDGE_INTS) if rng.random() < 0.6 else rng.getrandbits(bits)
    value &= (1 << bits) - 1
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def encode_args(proc: Any, rng: random.Random, tmp: Path) -> bytes:
    values = [random_value(c, rng) for c in proc.arg_codecs]
    if proc.number in PATH_PROCS:
        values[0] = str(tmp / f"ckpt-{rng.randrange(4)}")
    return b"".join(c.encode(v) for c, v in zip(proc.arg_codecs, values, strict=True))


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    how = rng.randrange(5)
    if how == 0 and buf:
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif how == 1:
        del buf[rng.randrange(len(buf) + 1) :]
    elif how == 2:
        buf += rng.randbytes(rng.choice((1, 3, 4, 8, 100)))
    elif how == 3 and len(buf) >= 4:  # a length or count word out of bounds
        at = rng.randrange(0, len(buf) - 3, 4) if len(buf) >= 4 else 0
        buf[at : at + 4] = struct.pack(">I", rng.choice((0x7FFFFFFF, 0xFFFFFFFF, 1 << 20)))
    else:
        buf = bytearray(rng.randbytes(rng.randrange(64)))
    return bytes(buf)


def fuzz_connection(address: str, seed: int, count: int, tmp: Path, answers: list[int]) -> None:
    """`count` generated or mutated calls, pipelined on one connection with a session."""
    rng = random.Random(seed)
    procs = [p for n, p in sorted(SERVER.PROCEDURES.items()) if n not in NOT_FUZZED]
    host, port = address.rsplit(":", 1)
    rpc = RpcClient((host, int(port)), timeout=120)
    stub = proto.CRICKET_V1_Client(rpc)
    assert stub.HELLO(proto.hello_args(proto.CRICKET_PROTOCOL_VERSION, b"", "fuzz")).err == 0
    stub.CU_INIT(0)
    pending: list[Any] = []
    answered = 0
    for _ in range(count):
        proc = rng.choice(procs)
        args = encode_args(proc, rng, tmp)
        prog, vers, number = proto.CRICKET_PROG, proto.CRICKET_V1, proc.number
        if rng.random() < 0.5 and number not in PATH_PROCS:
            args = mutate(args, rng)
            roll = rng.random()
            if roll < 0.05:
                number = rng.choice((rng.randrange(1 << 32), rng.randrange(1000)))
            elif roll < 0.08:
                vers = rng.choice((0, 2, 0xFFFFFFFF))
            elif roll < 0.1:
                prog = rng.randrange(1 << 32)
        pending.append(rpc.call_async(prog, vers, number, args))
        if len(pending) >= WINDOW:
            answered += _collect(pending[: WINDOW // 2])
            del pending[: WINDOW // 2]
    answered += _collect(pending)
    rpc.close()
    answers.append(answered)


def _collect(pending: list[Any]) -> int:
    answered = 0
    for call in pending:
        try:
            call.result(timeout=120)
        except RemoteRpcError:
            pass  # GARBAGE_ARGS, PROC_UNAVAIL, PROG_MISMATCH, ...: an answer all the same
        answered += 1
    return answered


def raw_garbage(address: str, seed: int, count: int) -> None:
    """Records with broken marks, xids, message types and bodies, on plain sockets; the
    server may close a connection that sent garbage (a new one is made), never crash."""
    rng = random.Random(seed)
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    for i in range(count):
        xid = rng.getrandbits(32)
        body = struct.pack(">IIIIII", xid, rng.choice((0, 1, 2, 7)), rng.choice((2, 3)),
                           proto.CRICKET_PROG, proto.CRICKET_V1, rng.randrange(400))  # fmt: skip
        body += rng.randbytes(rng.randrange(40))
        length = len(body) if rng.random() < 0.7 else rng.getrandbits(31)
        mark = (0x80000000 if rng.random() < 0.9 else 0) | length
        try:
            sock.sendall(struct.pack(">I", mark) + body)
            if i % 50 == 49:
                sock.settimeout(0.01)
                try:
                    sock.recv(1 << 16)
                except TimeoutError:
                    pass
                sock.settimeout(10)
        except OSError:
            sock.close()
            sock = socket.create_connection((host, int(port)), timeout=10)
    sock.close()


def free_memory(address: str) -> int:
    conn = cricket_client.connect(address, make_default=False, timeout=60)
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
        err, free, _ = cuda.cuMemGetInfo()
        assert err == E.CUDA_SUCCESS
    conn.close()
    return int(free)


def serves_correctly(address: str) -> bool:
    conn = cricket_client.connect(address, make_default=False, timeout=60)
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
        data = np.arange(4096, dtype=np.uint32)
        _, ptr = cuda.cuMemAlloc(data.nbytes)
        assert cuda.cuMemcpyHtoD(ptr, data, data.nbytes) == (E.CUDA_SUCCESS,)
        out = np.empty_like(data)
        assert cuda.cuMemcpyDtoH(out, ptr, out.nbytes) == (E.CUDA_SUCCESS,)
    conn.close()
    return bool((out == data).all())


def idle_usage(server: Server) -> tuple[int, int]:
    """The server's (threads, descriptors) with no client left, once steady."""
    return steady(
        lambda: None if server.client_connections() else server.usage(),
        "the idle server's (threads, fds)",
        SETTLE_LIMIT,
    )


@pytest.mark.slow
def test_generated_and_mutated_records_do_not_hurt_the_server(tmp_path: Path) -> None:
    options = ("--sim-memory", "256M", "--max-session-memory", "32M", "--max-record", "1M",
               "--checkpoint-root", str(tmp_path))  # fmt: skip
    with running_server(tmp_path / "server", *options, backend="sim") as srv:
        assert serves_correctly(srv.address)
        free_before = free_memory(srv.address)
        baseline = idle_usage(srv)
        answers: list[int] = []
        per = RECORDS // CONNECTIONS
        threads = [
            threading.Thread(target=fuzz_connection, args=(srv.address, i, per, tmp_path, answers))
            for i in range(CONNECTIONS)
        ]
        threads.append(threading.Thread(target=raw_garbage, args=(srv.address, 99, RAW_RECORDS)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [per] * CONNECTIONS  # every call answered, none lost
        assert srv.process.poll() is None
        after = idle_usage(srv)
        assert after == baseline, f"(threads, fds) idle: {baseline} before, {after} after"
        assert free_memory(srv.address) == free_before
        assert serves_correctly(srv.address)
        log = srv.log()
        assert "Traceback" not in log, log[log.index("Traceback") - 200 :][:3000]


def test_every_procedure_gets_generated_arguments() -> None:
    rng = random.Random(1)
    for number, proc in SERVER.PROCEDURES.items():
        for _ in range(20):
            args = encode_args(proc, rng, Path("/tmp"))
            values = [None] * len(proc.arg_codecs)
            dec = xdr.Decoder(args)
            for i, codec in enumerate(proc.arg_codecs):
                values[i] = codec.unpack(dec)
            dec.done()
        assert number in SERVER.PROCEDURES

