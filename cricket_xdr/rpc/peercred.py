"""Who is at the other end of a local Unix socket: SO_PEERCRED (Linux).

The kernel records the peer's uid when the connection is made; the peer cannot choose it.
A server can trust it to tell a local operator (the server's own user) from everyone else.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["peer_uid"]

_UCRED = struct.Struct("iII")  # pid, uid, gid


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process that connected `sock`, when it is a Unix socket whose kernel
    says so (SO_PEERCRED); None for TCP or where the kernel does not tell."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or getattr(sock, "family", None) != socket.AF_UNIX:
        return None
    try:
        _pid, uid, _gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, option, _UCRED.size))
    except (OSError, struct.error):
        return None
    return uid
