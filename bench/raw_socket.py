"""Baseline: a raw Python socket 100-byte round trip and a one-stream bulk transfer.

The echo peer runs in another process (`python -m bench.raw_socket serve ADDRESS_FILE`), as
an RPC server would, so the baseline pays the same process switches as the RPC it is set
against. With `spin` (`serve ... --spin` and `round_trip_fn(sock, spin=True)`) both ends
receive the echo by polling with MSG_DONTWAIT instead of blocking: no thread wake-up, the
floor a spinning RPC runtime can approach. A message starting with b'W' carries a payload
that the peer takes without answering (a one-way write: `step_fn`'s host-to-device copy).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

MESSAGE = 100


def _recv_exact(sock: socket.socket, view: memoryview, spin: bool = False) -> None:
    got = 0
    while got < len(view):
        if spin:
            try:
                n = sock.recv_into(view[got:], 0, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
        else:
            n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("peer closed")
        got += n


def serve(address_file: str, unix_path: str | None = None, spin: bool = False) -> None:
    """Echo every 100-byte message; for a message starting with b'B', sink a bulk payload
    (then echo); for one starting with b'W', sink a payload and answer nothing."""
    if unix_path:
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(unix_path)
        where = f"unix:{unix_path}"
    else:
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.bind(("127.0.0.1", 0))
        host, port = lsock.getsockname()
        where = f"{host}:{port}"
    lsock.listen(4)
    tmp = address_file + ".tmp"
    Path(tmp).write_text(where + "\n")
    os.replace(tmp, address_file)
    while True:
        conn, _ = lsock.accept()
        if conn.family == socket.AF_INET:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray(MESSAGE)
        view = memoryview(buf)
        sink = bytearray(1 << 20)
        try:
            while True:
                _recv_exact(conn, view, spin)
                if buf[0:1] == b"W":
                    payload = int.from_bytes(buf[1:9], "big")
                    _recv_exact(conn, memoryview(sink)[:payload], spin)
                    continue
                if buf[0:1] == b"B":
                    remaining = int.from_bytes(buf[1:9], "big")
                    sview = memoryview(sink)
                    while remaining:
                        n = conn.recv_into(sview[: min(remaining, len(sink))])
                        if n == 0:
                            raise ConnectionError("peer closed")
                        remaining -= n
                conn.sendall(view)
        except ConnectionError:
            conn.close()


@contextmanager
def echo_peer(unix: bool = False, spin: bool = False):
    """Start the echo peer in a subprocess (spinning on its receives with `spin`); yield a
    connected client socket."""
    with tempfile.TemporaryDirectory() as tmp:
        address_file = os.path.join(tmp, "addr")
        args = [sys.executable, "-m", "bench.raw_socket", "serve", address_file]
        if unix:
            args.append(os.path.join(tmp, "echo.sock"))
        if spin:
            args.append("--spin")
        proc = subprocess.Popen(args)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(address_file):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("echo peer did not start")
                time.sleep(0.01)
            where = Path(address_file).read_text().strip()
            if where.startswith("unix:"):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(where[5:])
            else:
                host, port = where.rsplit(":", 1)
                sock = socket.create_connection((host, int(port)))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                yield sock
            finally:
                sock.close()
        finally:
            proc.kill()
            proc.wait()


def round_trip_fn(sock: socket.socket, spin: bool = False):
    """One 100-byte round trip; with `spin` the echo is received by polling (MSG_DONTWAIT)."""
    out = bytes(MESSAGE)
    buf = bytearray(MESSAGE)
    view = memoryview(buf)

    def once() -> None:
        sock.sendall(out)
        _recv_exact(sock, view, spin)

    return once


def step_fn(sock: socket.socket, payload: int = 4096, gap_us: float = 0.0):
    """The decoding step's messages on a raw socket, nothing else: a one-way write of
    `payload` bytes (the early HtoD), `gap_us` of the client's own work (busy, as the
    launches are), then one 100-byte round trip (the launches and the read that waits)."""
    write = bytearray(MESSAGE + payload)
    write[0:1] = b"W"
    write[1:9] = payload.to_bytes(8, "big")
    one_way = bytes(write)
    out = bytes(MESSAGE)
    view = memoryview(bytearray(MESSAGE))
    gap_ns = int(gap_us * 1000)

    def once() -> None:
        sock.sendall(one_way)
        if gap_ns:
            until = time.perf_counter_ns() + gap_ns
            while time.perf_counter_ns() < until:
                pass
        sock.sendall(out)
        _recv_exact(sock, view)

    return once


def stream_gbps(sock: socket.socket, nbytes: int) -> float:
    """One-stream throughput: send nbytes after a header, wait for the echo of the header."""
    payload = memoryview(bytearray(min(nbytes, 64 << 20)))
    header = bytearray(MESSAGE)
    header[0:1] = b"B"
    header[1:9] = nbytes.to_bytes(8, "big")
    ack = memoryview(bytearray(MESSAGE))
    t0 = time.perf_counter()
    sock.sendall(header)
    left = nbytes
    while left:
        chunk = payload[: min(left, len(payload))]
        sock.sendall(chunk)
        left -= len(chunk)
    _recv_exact(sock, ack)
    return nbytes / (time.perf_counter() - t0) / 1e9


if __name__ == "__main__":
    argv = [a for a in sys.argv[1:] if a != "--spin"]
    if len(argv) >= 2 and argv[0] == "serve":
        serve(argv[1], argv[2] if len(argv) > 2 else None, spin="--spin" in sys.argv)
    else:
        sys.exit("usage: python -m bench.raw_socket serve ADDRESS_FILE [UNIX_PATH] [--spin]")
