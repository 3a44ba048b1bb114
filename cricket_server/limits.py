"""Per-server limits: what one client may hold or send (`cricket-server --max-*` options).

| limit               | option                 | when exceeded                                      |
| ------------------- | ---------------------- | -------------------------------------------------- |
| max_session_memory  | --max-session-memory   | the allocation: CUDA_ERROR_OUT_OF_MEMORY            |
| max_sessions        | --max-sessions         | HELLO: CUDA_ERROR_OUT_OF_MEMORY, message says why   |
| max_record          | --max-record           | the connection is closed (record marking)          |
| idle_timeout        | --idle-timeout         | the connection is closed, its session freed        |
| max_in_flight       | --max-in-flight        | the server stops reading that connection (TCP)     |
| resume_grace        | --resume-grace         | a dropped session waits that long for its token    |
| checkpoint_root     | --checkpoint-root      | a client-named checkpoint path outside it: refused |

None means no limit (resume_grace None: a session ends with its connection).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    CudaError,
)
from cricket_xdr.rpc.handshake import Admission
from cricket_xdr.rpc.server import RpcServer
from rpc_spec import cricket_rpc as proto

log = logging.getLogger("cricket_server")


@dataclass(frozen=True)
class ServerLimits:
    """See the module docstring."""

    max_session_memory: int | None = None
    max_sessions: int | None = None
    max_record: int | None = None
    idle_timeout: float | None = None
    max_in_flight: int | None = None
    resume_grace: float | None = None
    checkpoint_root: str | None = None


def confine_checkpoint_path(path: str, root: str | None) -> str:
    """The checkpoint directory a client named, inside `root` when one is set (a relative
    path is taken from `root`); CudaError(CUDA_ERROR_INVALID_VALUE) when it lies outside."""
    if root is None:
        return path
    base = os.path.realpath(root)
    target = os.path.realpath(os.path.join(base, path))
    if os.path.commonpath([base, target]) != base or target == base:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"checkpoint: {path!r} is not inside the server's checkpoint root (--checkpoint-root)",
        )
    return target


def session_limit_error(count: int, limit: int) -> CudaError:
    """The refusal of a HELLO beyond --max-sessions."""
    return CudaError(
        CUDA_ERROR_OUT_OF_MEMORY,
        f"HELLO: the server already serves {count} sessions, its limit "
        f"(--max-sessions {limit}); try again later",
    )


def memory_quota_error(call: str, size: int, used: int, quota: int) -> CudaError:
    """The refusal of an allocation beyond --max-session-memory."""
    return CudaError(
        CUDA_ERROR_OUT_OF_MEMORY,
        f"{call}: {size} bytes more would exceed this session's device memory quota of "
        f"{quota} bytes (--max-session-memory); it holds {used} bytes",
    )


def rpc_limits(limits: ServerLimits) -> dict[str, Any]:
    """The keyword arguments of `RpcServer` that enforce `limits`."""
    kwargs: dict[str, Any] = {
        "idle_timeout": limits.idle_timeout,
        "max_in_flight": limits.max_in_flight,
    }
    if limits.max_record is not None:
        kwargs["max_record"] = limits.max_record
    return kwargs


class RefusingService(proto.CRICKET_V1_Server):
    """Answers HELLO with a refusal and GET_ERROR_MESSAGE with its reason; nothing else."""

    def __init__(self, error: CudaError) -> None:
        self.error = error

    def HELLO(self, ctx: Any, args: proto.hello_args) -> proto.hello_result:
        return proto.hello_result(self.error.code, None)

    def GET_ERROR_MESSAGE(self, ctx: Any) -> str:
        return self.error.message


class SessionGate:
    """`--max-sessions` under process isolation: a `hand_off` in front of the worker pool.

    A connection beyond the limit (counted in `serving()` workers) is served here by a
    `RefusingService` instead, so its client gets a clear refusal, not a closed socket; only
    after it passed `admission` (TLS, the token), as everywhere else on that server."""

    def __init__(
        self,
        limit: int,
        serving: Callable[[], int],
        hand_off: Callable[[socket.socket, object], None],
        idle_timeout: float = 30.0,
        admission: Admission | None = None,
    ) -> None:
        self.limit = limit
        self._serving = serving
        self._hand_off = hand_off
        self._error = session_limit_error(limit, limit)
        self._refusals = RpcServer(
            [RefusingService(self._error)], idle_timeout=idle_timeout, admission=admission
        )
        self._lock = threading.Lock()

    def hand_off(self, sock: socket.socket, peer: object) -> None:
        with self._lock:
            count = self._serving()
            if count < self.limit:
                self._hand_off(sock, peer)
                return
        log.warning("connection from %r refused: %s", peer, self._error.message)
        self._refusals.adopt(sock, peer)

    def close(self) -> None:
        self._refusals.shutdown()
