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
| max_streams         | --max-streams          | cuStreamCreate: CUDA_ERROR_OUT_OF_MEMORY            |
| max_events          | --max-events           | cuEventCreate: CUDA_ERROR_OUT_OF_MEMORY             |
| max_modules         | --max-modules          | cuModuleLoad*, cuLibraryLoad*: CUDA_ERROR_OUT_OF_MEMORY |
| max_contexts        | --max-contexts         | cuCtxCreate: CUDA_ERROR_OUT_OF_MEMORY               |
| max_buffered        | --max-buffered         | the connection whose record would go beyond: closed |
| handshake_deadline  | --handshake-deadline   | a connection not authenticated by then: closed      |
| max_pending         | --max-pending          | a new connection beyond them is closed at once      |

The object limits count what one session holds at once (modules and libraries together;
contexts: those of cuCtxCreate, primary contexts aside). `max_buffered` bounds the bytes that
incomplete records of all connections of a process hold together. `handshake_deadline` and
`max_pending` apply when the server requires TLS or a token: `max_pending` connections at most
may be in their setup (STARTTLS, token proof) at once, each for `handshake_deadline` seconds.
None means no limit (resume_grace None: a session ends with its connection), except for
checkpoint_root: client-named checkpoint paths are always confined, by default to
`default_checkpoint_root()`, a directory of the server's user.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    CudaError,
)
from cricket_xdr.rpc.handshake import DEFAULT_HANDSHAKE_DEADLINE, Admission
from cricket_xdr.rpc.server import DEFAULT_MAX_BUFFERED, RpcServer
from rpc_spec import cricket_rpc as proto

log = logging.getLogger("cricket_server")

DEFAULT_MAX_STREAMS = 4096
DEFAULT_MAX_EVENTS = 65536
DEFAULT_MAX_MODULES = 4096
DEFAULT_MAX_CONTEXTS = 64
DEFAULT_MAX_PENDING = 64


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
    max_streams: int | None = DEFAULT_MAX_STREAMS
    max_events: int | None = DEFAULT_MAX_EVENTS
    max_modules: int | None = DEFAULT_MAX_MODULES
    max_contexts: int | None = DEFAULT_MAX_CONTEXTS
    max_buffered: int | None = DEFAULT_MAX_BUFFERED
    handshake_deadline: float = DEFAULT_HANDSHAKE_DEADLINE
    max_pending: int = DEFAULT_MAX_PENDING


def default_checkpoint_root() -> str:
    """Where client-named checkpoints go without --checkpoint-root: a directory of the
    server's user, $XDG_STATE_HOME/cricket/checkpoints (~/.local/state/cricket/checkpoints)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(state, "cricket", "checkpoints")


def _refuse(path: str, why: str) -> CudaError:
    return CudaError(CUDA_ERROR_INVALID_VALUE, f"checkpoint: {path!r} {why}")


def checkpoint_root(root: str | None) -> str:
    """The real path of the checkpoint root (`default_checkpoint_root()` when None), created
    mode 0700 on demand. CudaError when it is no directory, belongs to another user, or
    others than its owner may write in it (they could swap a path for a symbolic link)."""
    root = root or default_checkpoint_root()
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        base = os.path.realpath(root)
        st = os.stat(base)
    except OSError as exc:
        raise _refuse(root, f"cannot be the checkpoint root: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(root, "is not a directory (the checkpoint root)")
    if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _refuse(
            root,
            f"cannot be the checkpoint root: owner uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):04o}; it must be the server's (uid {os.geteuid()}) "
            "and writable by it alone",
        )
    return base


def confine_checkpoint_path(path: str, root: str | None) -> str:
    """The checkpoint directory a client named, inside the checkpoint root (`root`, or
    `default_checkpoint_root()`; a relative path is taken from it). CudaError
    (CUDA_ERROR_INVALID_VALUE) when it lies outside, is the root itself, or passes through a
    symbolic link below the root."""
    base = checkpoint_root(root)
    target = os.path.normpath(os.path.join(base, path))
    if os.path.commonpath([base, target]) != base or target == base:
        raise _refuse(path, f"is not inside the server's checkpoint root {base} "
                      "(--checkpoint-root)")  # fmt: skip
    current = base
    for part in os.path.relpath(target, base).split(os.sep):
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            break
        except OSError as exc:
            raise _refuse(path, f"cannot be checked: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(path, f"passes through the symbolic link {current}; checkpoints "
                          "follow no link below the checkpoint root")  # fmt: skip
    return target


def session_limit_error(count: int, limit: int) -> CudaError:
    """The refusal of a HELLO beyond --max-sessions."""
    return CudaError(
        CUDA_ERROR_OUT_OF_MEMORY,
        f"HELLO: the server already serves {count} sessions, its limit "
        f"(--max-sessions {limit}); try again later",
    )


def object_limit_error(call: str, what: str, limit: int, option: str) -> CudaError:
    """The refusal of a stream, event, module or context beyond its per-session limit."""
    return CudaError(
        CUDA_ERROR_OUT_OF_MEMORY,
        f"{call}: this session holds {limit} {what}, the server's limit ({option} {limit})",
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
        "max_buffered": limits.max_buffered,
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
    after it passed `admission` (TLS, the token), as everywhere else on that server. Behind an
    `AdmissionGate` it sees connections once they proved the token (`admitted`), so
    connections that never do cannot fill the sessions."""

    def __init__(
        self,
        limit: int,
        serving: Callable[[], int],
        hand_off: Callable[[socket.socket, object, bool], None],
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

    def hand_off(self, sock: socket.socket, peer: object, admitted: bool = False) -> None:
        with self._lock:
            count = self._serving()
            if count < self.limit:
                self._hand_off(sock, peer, admitted)
                return
        log.warning("connection from %r refused: %s", peer, self._error.message)
        self._refusals.adopt(sock, peer, admitted=admitted)

    def close(self) -> None:
        self._refusals.shutdown()
