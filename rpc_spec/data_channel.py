"""The data-channel wire format both ends share (client and server import it from here).

A channel opens with `HELLO_FORMAT` (the offer's secret, the channel's index). A transfer of
`n` bytes over `k` channels sends part `i` (`part_bounds`) on channel `i`, after an 8-byte
big-endian length; the sender of device data announces 0 when its copy failed.
"""

from __future__ import annotations

import socket
import struct

__all__ = [
    "ChannelError",
    "HELLO_FORMAT",
    "IO_TIMEOUT",
    "LENGTH",
    "SECRET_BYTES",
    "part_bounds",
    "recv_exact",
]

SECRET_BYTES = 32
HELLO_FORMAT = struct.Struct(f">{SECRET_BYTES}sI")  # secret, channel index
LENGTH = struct.Struct(">Q")
IO_TIMEOUT = 60.0  # seconds without progress on a channel before a transfer fails


class ChannelError(OSError):
    """A data channel failed or broke the protocol."""


def part_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """(offset, length) of each channel's part of an `n`-byte transfer over `k` channels."""
    return [(i * n // k, (i + 1) * n // k - i * n // k) for i in range(k)]


def recv_exact(sock: socket.socket, view: memoryview) -> None:
    """Fill `view` from `sock`; ChannelError when the peer closes first."""
    got, n = 0, len(view)
    while got < n:
        r = sock.recv_into(view[got:], n - got)
        if r == 0:
            raise ChannelError(f"data channel closed after {got} of {n} bytes")
        got += r
