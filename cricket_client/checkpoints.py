"""Checkpoints from the client side: `cricket_client.checkpoint(path)` and `redirect(address)`.

`checkpoint(path)` asks the server to write a checkpoint of this session into `path` (a
directory on the server's file system; a relative path is made absolute here). The server
takes it between this session's calls, once its streams are synchronized, so it holds
every call made before, and the client logs the calls after it, so that after a reconnect
(`cricket_client.reconnect`) to a server that `cricket-restart` started from it, the calls it
lacks are sent again (`cricket_client.replay`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .connection import Connection, get_connection
from .errors import CricketClientError, error_name
from .reconnect import redirect as _redirect

__all__ = ["CheckpointFailed", "CheckpointInfo", "checkpoint", "redirect"]


class CheckpointFailed(CricketClientError):
    """The server could not write the checkpoint; the message says why."""


@dataclass(frozen=True)
class CheckpointInfo:
    path: str
    sessions: int
    bytes: int  # device memory and module images
    stored_bytes: int  # on disk, after compression


def checkpoint(
    path: str | os.PathLike[str], *, connection: Connection | None = None
) -> CheckpointInfo:
    """Checkpoint this session into directory `path` on the server (replacing an older one
    there atomically); raises CheckpointFailed."""
    conn = connection or get_connection()
    target = os.path.abspath(os.fspath(path))
    pending = conn.drain()
    if pending:
        raise CheckpointFailed(
            f"checkpoint {target}: an earlier asynchronous call failed with {error_name(pending)}; "
            "no checkpoint taken"
        )
    _err, reply = conn.sync("CHECKPOINT_SESSION", target)
    if reply.err != 0:
        raise CheckpointFailed(f"checkpoint {target}: {error_name(reply.err)}: {reply.value}")
    done = reply.value
    conn.replay_log.restart_at(done.calls, target)  # the calls the checkpoint holds
    return CheckpointInfo(target, done.sessions, done.bytes, done.stored_bytes)


def redirect(address: str | None, *, connection: Connection | None = None) -> None:
    """After a loss, reconnect to `address` (a restarted server elsewhere)."""
    _redirect(connection or get_connection(), address)
