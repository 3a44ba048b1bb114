"""Reconnecting a `Connection` to a restored session after its server went away.

When a call finds the connection lost (`ConnectionLost`), `resume_after_loss` opens a new
connection, says HELLO with the session token (a server started by `cricket-restart` holds
the session and hands it back), and the call is sent again. Over TLS the new connection
first names the session with its resume hint (`open_rpc(resume=)`), so that a server with a
worker process per session can route it there before the TLS session hides the HELLO. Pointers and handles stay what
they were: the restored session has them all.

Every connection reconnects, for up to `DEFAULT_DEADLINE` seconds after a loss
(CRICKET_RECONNECT_DEADLINE=S sets another bound, 0 turns it off; per connection:
`connect(address, reconnect_deadline=S)` or `enable_reconnect(conn, S)`), whoever took the
checkpoint: the program (`cricket_client.checkpoint`) or an operator (`cricket-checkpoint
--server`, SIGUSR1, periodic or final checkpoints of the server), of which the client knows
nothing.

Where to: an address given with `redirect()`, else REMOTE_GPU_ADDRESS as it is now, else
the address used before. Attempts back off from 50 ms to 2 s. Outcomes:
- a server holds the session: it goes on; the calls its checkpoint lacks are replayed when
  the program's replay log has them (`cricket_client.replay`), else the call raises
  `CallsLost` naming them, and the session goes on from the restored state;
- a server answers but holds no such session (a restart without it, a fresh server, a
  session ended with its connection): `SessionNotFound` at once, not after the deadline;
- nothing answers within the deadline: `ConnectionLost` naming the address and the deadline.
Pipelined calls whose replies were lost with the old connection are in the restored state
only when its checkpoint holds them; the next synchronizing call raises `CallsLost` for them
otherwise.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from cricket_xdr.rpc.errors import AuthError, ConnectionLost, RpcError

from ._enums import CUresult
from .errors import CricketClientError, HelloRefused, error_name
from .replay import replay
from .security import explain_auth_error, open_rpc

if TYPE_CHECKING:
    from .connection import Connection

__all__ = [
    "CallsLost",
    "DEADLINE_ENV",
    "DEFAULT_DEADLINE",
    "SessionNotFound",
    "enable_reconnect",
    "reconnect_deadline",
    "redirect",
    "resume_after_loss",
]

log = logging.getLogger("cricket_client.reconnect")

DEADLINE_ENV = "CRICKET_RECONNECT_DEADLINE"
DEFAULT_DEADLINE = 60.0  # seconds
_FIRST_DELAY = 0.05
_MAX_DELAY = 2.0
_RESUME_LOCK = threading.Lock()
CUDA_ERROR_INVALID_VALUE = int(CUresult.CUDA_ERROR_INVALID_VALUE)


class CallsLost(CricketClientError):
    """Calls were sent and then lost with the server; the restored session does not have
    their effects. `calls`: (sequence number, procedure) of those the client still names."""

    def __init__(self, message: str, calls: list[tuple[int, str]] | None = None) -> None:
        super().__init__(message)
        self.calls = list(calls or [])


class SessionNotFound(HelloRefused, ConnectionLost):
    """The connection was lost, and the server reached since does not hold the session (a
    restart without it, a fresh server, or the session ended with its connection)."""


def _env_deadline() -> float | None:
    text = os.environ.get(DEADLINE_ENV)
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise CricketClientError(
            f"{DEADLINE_ENV}={text!r}: expected seconds (0 turns reconnecting off)"
        )
    return value


def enable_reconnect(conn: Connection, deadline: float | None = None) -> None:
    """Let `conn` reconnect to its session for up to `deadline` seconds after a loss (None:
    CRICKET_RECONNECT_DEADLINE, else `DEFAULT_DEADLINE`; 0: it does not reconnect)."""
    if deadline is None:
        deadline = _env_deadline()
    conn.reconnect_deadline = DEFAULT_DEADLINE if deadline is None else float(deadline)


def reconnect_deadline(conn: Connection) -> float:
    """Seconds `conn` keeps trying after a loss (its `reconnect_deadline`, else
    CRICKET_RECONNECT_DEADLINE, else the default); 0: it does not reconnect."""
    value = conn.reconnect_deadline
    if value is None:
        value = _env_deadline()
    return DEFAULT_DEADLINE if value is None else float(value)


def redirect(conn: Connection, address: str | None) -> None:
    """Reconnect `conn` to `address` next time (None: back to REMOTE_GPU_ADDRESS or the old one)."""
    conn.redirect_address = address


def next_address(conn: Connection) -> str:
    from .connection import ADDRESS_ENV

    return conn.redirect_address or os.environ.get(ADDRESS_ENV) or conn.address


def resume_after_loss(conn: Connection, lost: BaseException, transport: object = None) -> bool:
    """Reconnect `conn` to its session after `transport` (its RpcClient) failed; False when
    reconnecting is off for it. Raises ConnectionLost (naming the last address tried) when
    no server answers within the deadline, SessionNotFound (HelloRefused) as soon as one
    answers without the session, CallsLost when the restored session lacks calls that
    cannot be replayed. Threads that lose the same transport reconnect once."""
    deadline_s = reconnect_deadline(conn)
    if deadline_s <= 0 or conn.closed:
        return False
    with _RESUME_LOCK:
        if transport is not None and conn._rpc is not transport:
            return True  # another thread has resumed the session meanwhile
        return _resume(conn, lost, deadline_s)


def _resume(conn: Connection, lost: BaseException, deadline_s: float) -> bool:
    from .connection import parse_address

    proto = conn.proto
    security = conn.security
    deadline = time.monotonic() + deadline_s
    delay = _FIRST_DELAY
    reason: str = str(lost)
    log.warning("session %#x: connection lost (%s); reconnecting", conn.info.session_id, lost)
    while True:
        address = next_address(conn)
        left = deadline - time.monotonic()
        try:
            rpc = open_rpc(  # authenticates again: token and TLS as the first connection
                parse_address(address),
                security,
                program=(proto.CRICKET_PROG, proto.CRICKET_V1),
                timeout=conn.timeout,
                connect_timeout=max(left, 0.1),
                resume=conn.info.session_token,
            )
        except (OSError, ConnectionLost) as e:  # also a server that closed during the setup
            reason = f"{address}: {e}"
        else:
            try:
                stub = proto.CRICKET_V1_Client(rpc)
                reply = stub.HELLO(
                    proto.hello_args(
                        protocol_version=proto.CRICKET_PROTOCOL_VERSION,
                        session_token=conn.info.session_token,
                        client_name=conn.client_name,
                    ),
                    timeout=max(left, 1.0),
                )
                why = "" if reply.err == 0 else _why_refused(stub)
            except AuthError as e:  # the server wants a token or TLS this one lacks
                rpc.close()
                raise explain_auth_error(e, security) from None
            except RpcError as e:
                rpc.close()
                reason = f"{address}: {e}"
            else:
                if reply.err == 0 and reply.value.session_id == conn.info.session_id:
                    conn.adopt_transport(address, rpc, reply.value.protocol_version)
                    log.warning("session %#x: resumed on %s", conn.info.session_id, address)
                    try:
                        replay(conn)
                    finally:  # the replay sent them again, or CallsLost names them all
                        conn.pipeline.forget_calls_lost()
                    return True
                rpc.close()
                # A server answered: it has the session or it has not. Waiting longer
                # would not bring it there.
                refused = SessionNotFound if reply.err == CUDA_ERROR_INVALID_VALUE else HelloRefused
                raise refused(
                    f"session {conn.info.session_id:#x} was lost with its connection ({lost}), "
                    f"and the server at {address} does not hold it: HELLO with the session "
                    f"token refused ({error_name(reply.err)}{why})"
                )
        if time.monotonic() + delay > deadline:
            raise ConnectionLost(
                f"session {conn.info.session_id:#x}: no server took it back within "
                f"{deadline_s:g} s ({DEADLINE_ENV}); last attempt {reason}"
            )
        time.sleep(delay)
        delay = min(delay * 2, _MAX_DELAY)


def _why_refused(stub: object) -> str:
    """": the server's message" for a refused HELLO, or nothing when it says none."""
    try:
        message = str(stub.GET_ERROR_MESSAGE(timeout=5.0))  # type: ignore[attr-defined]
    except RpcError:
        return ""
    return f": {message}" if message else ""
