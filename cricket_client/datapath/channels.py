"""The client's data channels: `k` TCP connections to the listener a DATA_TCP_OFFER named,
each opened with the offer's secret and its index; transfers split as the server's
`cricket_server.datapath.channels` describes."""

from __future__ import annotations

import socket
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from rpc_spec.data_channel import (
    HELLO_FORMAT,
    IO_TIMEOUT,
    LENGTH,
    ChannelError,
    part_bounds,
    recv_exact,
)

__all__ = ["ClientChannels", "ChannelError", "secure_channel"]


def secure_channel(sock: socket.socket, host: str) -> socket.socket:
    """Hook for transport security of data channels (TLS as on the RPC connection)."""
    return sock


class ClientChannels:
    """Connected, authenticated data channels; `start_send`/`start_receive` queue one
    transfer's parts (one thread per channel, so transfers queued one after another keep
    their order on every channel) and give futures to wait on."""

    def __init__(
        self, host: str, port: int, secret: bytes, count: int, source: str | None = None
    ) -> None:
        self.socks: list[socket.socket] = []
        try:
            for i in range(count):
                sock = socket.create_connection(
                    (host, port), timeout=IO_TIMEOUT, source_address=(source, 0) if source else None
                )
                self.socks.append(sock)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.sendall(HELLO_FORMAT.pack(secret, i))
                self.socks[i] = secure_channel(sock, host)
        except BaseException:
            self.close()
            raise
        # One thread per channel: transfers queued on a channel run in order, never together.
        self._pools = [
            ThreadPoolExecutor(1, thread_name_prefix=f"data-channel-{i}") for i in range(count)
        ]

    def __len__(self) -> int:
        return len(self.socks)

    def start_send(self, view: memoryview) -> list[Future[None]]:
        def part(i: int, off: int, m: int) -> None:
            self.socks[i].sendall(LENGTH.pack(m))
            self.socks[i].sendall(view[off : off + m])

        return self._each(part, len(view))

    def start_receive(self, view: memoryview) -> list[Future[None]]:
        """Receive into `view`; a part announced empty (the server's copy failed) is left."""

        def part(i: int, off: int, m: int) -> None:
            head = bytearray(LENGTH.size)
            recv_exact(self.socks[i], memoryview(head))
            (length,) = LENGTH.unpack(head)
            if length == 0:
                return
            if length != m:
                raise ChannelError(f"data channel {i}: {length} bytes announced, {m} expected")
            recv_exact(self.socks[i], view[off : off + m])

        return self._each(part, len(view))

    def _each(self, fn: Callable[[int, int, int], None], n: int) -> list[Future[None]]:
        return [
            self._pools[i].submit(fn, i, off, m)
            for i, (off, m) in enumerate(part_bounds(n, len(self.socks)))
        ]

    def close(self) -> None:
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)  # wakes threads blocked on it
            except OSError:
                pass
            s.close()
        for pool in getattr(self, "_pools", ()):
            pool.shutdown(wait=False)
