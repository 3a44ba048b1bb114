"""Reconnecting a `Connection` to a restored session after its server went away.

When a call finds the connection lost (`ConnectionLost`) and reconnecting is on for that
connection, `resume_after_loss` opens a new connection, says HELLO with the session token
(a server started by `cricket-restart` holds the session and hands it back), and the call is
sent again. Pointers and handles stay what they were: the restored session has them all.

Where to: an address given with `redirect()`, else REMOTE_GPU_ADDRESS as it is now, else
the address used before. Attempts back off from 50 ms to 2 s until the deadline
(`reconnect_deadline` seconds; CRICKET_RECONNECT_DEADLINE sets the default).

Reconnecting is on once the program took a checkpoint of its session
(`cricket_client.checkpoint`), or for every connection when CRICKET_RECONNECT_DEADLINE is set
(a checkpoint taken by `cricket-checkpoint` is not seen by the client), or after
`enable_reconnect(conn)`. Pipelined calls whose replies were lost with the old connection
are not in the restored state: the next synchronizing call raises `CallsLost` naming them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from cricket_xdr.rpc.errors import AuthError, ConnectionLost, RpcError

from .errors import CricketClientError, HelloRefused, error_name
from .replay import replay
from .security import Security, explain_auth_error, open_rpc

if TYPE_CHECKING:
    from .connection import Connection

__all__ = [
    "CallsLost",
    "DEADLINE_ENV",
    "DEFAULT_DEADLINE",
    "enable_reconnect",
    "redirect",
    "resume_after_loss",
]

log = logging.getLogger("cricket_client.reconnect")

DEADLINE_ENV = "CRICKET_RECONNECT_DEADLINE"
DEFAULT_DEADLINE = 120.0  # seconds
_FIRST_DELAY = 0.05
_MAX_DELAY = 2.0
_ATTR_DEADLINE = "_reconnect_deadline"
_ATTR_REDIRECT = "_reconnect_redirect"
_RESUME_LOCK = threading.Lock()


class CallsLost(CricketClientError):
    """Pipelined calls were sent and then lost with the server; the restored session does
    not have their effects."""


def _env_deadline() -> float | None:
    text = os.environ.get(DEADLINE_ENV)
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise CricketClientError(f"{DEADLINE_ENV}={text!r} is not a number of seconds") from None


def enable_reconnect(conn: Connection, deadline: float | None = None) -> None:
    """Let `conn` reconnect to its session for up to `deadline` seconds after a loss."""
    value = deadline if deadline is not None else (_env_deadline() or DEFAULT_DEADLINE)
    setattr(conn, _ATTR_DEADLINE, value)


def reconnect_deadline(conn: Connection) -> float:
    """Seconds `conn` keeps trying after a loss; 0: it does not reconnect."""
    value = getattr(conn, _ATTR_DEADLINE, None)
    if value is None:
        value = _env_deadline() or 0.0
    return float(value)


def redirect(conn: Connection, address: str | None) -> None:
    """Reconnect `conn` to `address` next time (None: back to REMOTE_GPU_ADDRESS or the old one)."""
    setattr(conn, _ATTR_REDIRECT, address)


def next_address(conn: Connection) -> str:
    from .connection import ADDRESS_ENV

    return getattr(conn, _ATTR_REDIRECT, None) or os.environ.get(ADDRESS_ENV) or conn.address


def resume_after_loss(conn: Connection, lost: BaseException, transport: object = None) -> bool:
    """Reconnect `conn` to its session after `transport` (its RpcClient) failed; False when
    reconnecting is off for it. Raises the loss (with the last reason) when the deadline
    passes, HelloRefused when every server reached refused the token until then. Threads
    that lose the same transport reconnect once."""
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
    security = getattr(conn, "security", None) or Security()
    deadline = time.monotonic() + deadline_s
    delay = _FIRST_DELAY
    reason: str = str(lost)
    refused = False
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
            )
        except OSError as e:
            reason, refused = f"{address}: {e}", False
        else:
            try:
                reply = proto.CRICKET_V1_Client(rpc).HELLO(
                    proto.hello_args(
                        protocol_version=proto.CRICKET_PROTOCOL_VERSION,
                        session_token=conn.info.session_token,
                        client_name=conn.client_name,
                    ),
                    timeout=max(left, 1.0),
                )
            except AuthError as e:  # the server wants a token or TLS this one lacks
                rpc.close()
                raise explain_auth_error(e, security) from None
            except RpcError as e:
                rpc.close()
                reason, refused = f"{address}: {e}", False
            else:
                if reply.err == 0 and reply.value.session_id == conn.info.session_id:
                    conn.adopt_transport(address, rpc)
                    log.warning("session %#x: resumed on %s", conn.info.session_id, address)
                    replay(conn)
                    if isinstance(conn._deferred_exception, CallsLost):
                        conn._deferred_exception = None  # the replay sent them again
                    return True
                rpc.close()
                reason = (
                    f"{address}: HELLO with the session token refused ({error_name(reply.err)})"
                )
                refused = True
        if time.monotonic() + delay > deadline:
            if refused:
                raise HelloRefused(f"reconnect of session {conn.info.session_id:#x}: {reason}")
            raise ConnectionLost(
                f"reconnect of session {conn.info.session_id:#x} gave up after {deadline_s:g} s: "
                f"{reason}"
            )
        time.sleep(delay)
        delay = min(delay * 2, _MAX_DELAY)
