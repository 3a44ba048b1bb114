"""Data channels: extra TCP connections of one session that carry a copy's bytes in parallel.

DATA_TCP_OFFER opens a listener on the IP address the client named (port 0) and answers its port
and a fresh secret. Each data channel the client opens starts with the secret and its index
(`HELLO_FORMAT`); a connection with anything else is closed. A transfer of `n` bytes over
`k` channels sends part `i` = bytes `[i*n//k, (i+1)*n//k)` on channel `i`, each part after
an 8-byte big-endian length (0 from the sender when it has nothing to send: a failed copy).

Security: `secure_channel` is the one place a channel socket is wrapped once accepted (TLS
of the RPC connection applies here the same way); it returns the socket unchanged today.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from rpc_spec.data_channel import (
    HELLO_FORMAT,
    IO_TIMEOUT,
    LENGTH,
    SECRET_BYTES,
    ChannelError,
    part_bounds,
    recv_exact,
)

__all__ = [
    "ChannelListener",
    "DataChannels",
    "ChannelError",
    "MAX_CHANNELS",
    "secure_channel",
]

log = logging.getLogger("cricket_server.datapath")

MAX_CHANNELS = 16
ACCEPT_TIMEOUT = 20.0


def secure_channel(sock: socket.socket, server_side: bool) -> socket.socket:
    """Hook for transport security of data channels (e.g. TLS, as the RPC connection)."""
    return sock


class DataChannels:
    """The accepted channels of one offer, indexed; transfers split over all of them."""

    def __init__(self, socks: list[socket.socket]) -> None:
        self.socks = socks
        self._pool = ThreadPoolExecutor(len(socks), thread_name_prefix="data-channel")

    def __len__(self) -> int:
        return len(self.socks)

    def receive_into(self, view: memoryview) -> None:
        """Receive `len(view)` bytes, each channel's part straight into its place."""

        def part(i: int, off: int, m: int) -> None:
            head = bytearray(LENGTH.size)
            recv_exact(self.socks[i], memoryview(head))
            (length,) = LENGTH.unpack(head)
            if length != m:
                raise ChannelError(f"data channel {i}: {length} bytes announced, {m} expected")
            recv_exact(self.socks[i], view[off : off + m])

        self._all(part, len(view))

    def send(self, view: memoryview | None, n: int) -> None:
        """Send `view` (`n` bytes) split over the channels; None sends empty parts (failure)."""

        def part(i: int, off: int, m: int) -> None:
            if view is None:
                self.socks[i].sendall(LENGTH.pack(0))
                return
            self.socks[i].sendall(LENGTH.pack(m))
            self.socks[i].sendall(view[off : off + m])

        self._all(part, n)

    def _all(self, fn: Callable[[int, int, int], None], n: int) -> None:
        futures = [
            self._pool.submit(fn, i, off, m)
            for i, (off, m) in enumerate(part_bounds(n, len(self.socks)))
        ]
        errors = [e for f in futures if (e := f.exception()) is not None]
        if errors:
            raise ChannelError(f"data channel transfer of {n} bytes failed: {errors[0]}")

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self._pool.shutdown(wait=False)


class ChannelListener:
    """Listens for the `count` channels of one offer; `wait()` gives them once all arrived."""

    def __init__(self, host: str, count: int) -> None:
        if not 1 <= count <= MAX_CHANNELS:
            raise ValueError(f"data channels: {count} asked for, 1..{MAX_CHANNELS} allowed")
        try:
            ip = ipaddress.ip_address(host)  # an address of this host, never a name to resolve
        except ValueError:
            raise ValueError(f"data channels: {host!r} is not an IP address") from None
        self.count = count
        self.secret = secrets.token_bytes(SECRET_BYTES)
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.bind((host, 0))
            self._listener.listen(count + 4)
        except OSError:
            self._listener.close()
            raise
        self.port = self._listener.getsockname()[1]
        self.refused = 0
        self._socks: list[socket.socket | None] = [None] * count
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._accept, name="data-channel-accept", daemon=True
        )
        self._thread.start()

    def _accept(self) -> None:
        self._listener.settimeout(ACCEPT_TIMEOUT)
        try:
            while any(s is None for s in self._socks):
                sock, peer = self._listener.accept()
                self._admit(sock, peer)
        except OSError:
            pass  # closed or timed out: wait() reports the missing channels
        finally:
            self._listener.close()
            self._done.set()

    def _admit(self, sock: socket.socket, peer: object) -> None:
        sock.settimeout(5.0)
        try:
            head = bytearray(HELLO_FORMAT.size)
            recv_exact(sock, memoryview(head))
            secret, index = HELLO_FORMAT.unpack(head)
        except OSError:
            secret, index = b"", -1
        if (
            not hmac.compare_digest(secret, self.secret)
            or not 0 <= index < self.count
            or (self._socks[index] is not None)
        ):
            self.refused += 1
            log.warning("data channel from %s refused: wrong secret or index", peer)
            sock.close()
            return
        sock.settimeout(IO_TIMEOUT)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socks[index] = secure_channel(sock, server_side=True)

    def wait(self, timeout: float = ACCEPT_TIMEOUT) -> DataChannels:
        if not self._done.wait(timeout) or any(s is None for s in self._socks):
            missing = sum(s is None for s in self._socks)
            raise ChannelError(f"{missing} of {self.count} data channels never connected")
        return DataChannels([s for s in self._socks if s is not None])

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        self._listener.close()
        for s in self._socks:
            if s is not None:
                s.close()
