"""The control channel between the main process and one worker, and the worker's tie to it.

One `socket.socketpair(AF_UNIX, SOCK_SEQPACKET)` per worker; each message is one datagram of
ASCII text, a verb then its fields separated by single spaces:

    | direction        | message                  | meaning                                   |
    |------------------|--------------------------|-------------------------------------------|
    | worker -> main   | `ready BACKEND`          | warmed up (backend created), may serve    |
    | worker -> main   | `session ID PEER`        | HELLO opened session ID (hex) for PEER    |
    | main -> worker   | `serve` + one socket fd  | serve this accepted connection (SCM_RIGHTS)|
    | main -> worker   | `serve-admitted` + fd    | the same, its setup (token) done already  |
    | worker -> main   | `admitted`               | a connection's setup is done              |
    | worker -> main   | `setup-failed`           | a connection ended during its setup       |
    | worker -> main   | `resumed ID`             | cricket-restart: its session was taken    |
    | main -> worker   | `checkpoint RID TMP`     | write your session's part into TMP (hex)  |
    | worker -> main   | `part RID IDS ...`       | part written (`part-failed RID WHY`: not) |
    | worker -> main   | `checkpoint-server RID SESSION PATH` | a CHECKPOINT_SERVER call, forwarded |
    | main -> worker   | `checkpoint-server-result RID CODE TEXT` | its answer               |
    | worker -> main   | `restore-failed WHY`     | cricket-restart: the session did not come back |

The checkpoint messages are described in `cricket_server.checkpoints.workers`.

End of file on either side means the other process is gone: the main process reaps the worker,
the worker shuts down.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys

log = logging.getLogger("cricket_server.workers")

MAX_MESSAGE = 4096
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class ControlChannel:
    """One end of a worker's control channel (see the module docstring)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @classmethod
    def pair(cls) -> tuple[ControlChannel, socket.socket]:
        """(the main process's end, the socket to pass to the worker)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        return cls(ours), theirs

    @classmethod
    def from_fd(cls, fd: int) -> ControlChannel:
        return cls(socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd))

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, *fields: str) -> None:
        self.sock.send(" ".join(fields).encode("ascii", "replace"))

    def send_socket(self, conn: socket.socket, verb: str = "serve") -> None:
        """Pass `conn`'s descriptor (the caller still closes its own copy)."""
        socket.send_fds(self.sock, [verb.encode("ascii")], [conn.fileno()])

    def receive(self) -> tuple[list[str], list[int]] | None:
        """The next message's fields and the descriptors it carried; None at end of file."""
        data, fds, _flags, _addr = socket.recv_fds(self.sock, MAX_MESSAGE, 4)
        if not data and not fds:
            return None
        return data.decode("ascii", "replace").split(" "), list(fds)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def die_with_parent(parent_pid: int) -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False if it already has.

    A parent that stops cleanly ends its workers gracefully itself; one that dies without
    doing so has crashed, and its workers must not serve on as orphans (a checkpoint, not
    the orphan, is what survives a crash). The control channel's end of file is the portable
    way to notice; this also catches a parent killed while the worker sits in a long call."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG): %s", os.strerror(ctypes.get_errno()))
    return os.getppid() == parent_pid
