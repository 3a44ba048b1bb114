"""Connection setup before the transports take over: RPC-over-TLS and the token proof.

Client (blocking, on a connected socket no transport uses yet):

- `start_tls(sock, context, ...)`: RFC 9289: a NULL call with an AUTH_TLS credential; a
  server offering TLS answers with the verifier "STARTTLS"; then the TLS handshake on the
  same connection, then a NULL call over TLS (in TLS 1.3 the server judges the client's
  certificate after the client finished: this makes its verdict show here). -> TlsSocket.
- `authenticate(sock, token, ...)`: AUTH_CRICKET_TOKEN (see `auth`): a NULL call asking
  for a challenge, a NULL call with the proof; the server's proof is checked in turn.
- `send_resume_hint(sock, hint, ...)`: before STARTTLS, a client resuming a session names
  it with a NULL call of flavor AUTH_CRICKET_RESUME (a routing hint, see `auth`); a server
  that does not know the flavor refuses that call, and the setup goes on all the same.

Server: `admit(sock, conn, admission, info, dispatch)` runs on a connection's thread
before its calls are served. Until the connection has done what `Admission` requires
(TLS, then the token), it answers NULL calls, the AUTH_TLS probe and the token exchange,
and refuses every other call with AUTH_ERROR / AUTH_TOOWEAK; a resume hint (AUTH_CRICKET_RESUME)
is answered like a NULL call and changes nothing. The whole setup must end within
`Admission.deadline` seconds, and its records may be `PRE_AUTH_MAX_RECORD` bytes at most: a
connection that has not proven anything costs little and not for long.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .auth import AUTH_CRICKET_RESUME, AUTH_CRICKET_TOKEN, AUTH_TLS, TokenProver, TokenVerifier
from .connection import NEED_DATA, ClientConnection, ServerConnection
from .dispatch import ConnectionInfo
from .errors import AuthError, ConnectionLost, RemoteRpcError
from .message import AUTH_NONE, AUTH_TOOWEAK, NULL_AUTH, CallMessage, OpaqueAuth
from .record import Buffer
from .tls import STARTTLS_VERIFIER, TlsError, TlsSocket, channel_binding

__all__ = [
    "Admission",
    "DEFAULT_HANDSHAKE_DEADLINE",
    "PRE_AUTH_MAX_RECORD",
    "admit",
    "authenticate",
    "null_call",
    "screen_token",
    "send_resume_hint",
    "start_tls",
]

log = logging.getLogger("cricket_xdr.rpc.server")

Dispatch = Callable[[ServerConnection, CallMessage, ConnectionInfo], list[Buffer]]
_SCRATCH = 1 << 16
PRE_AUTH_MAX_RECORD = 64 << 10  # the setup's records are far smaller
DEFAULT_HANDSHAKE_DEADLINE = 10.0


class _FixedAuth:
    def __init__(self, cred: OpaqueAuth) -> None:
        self.cred = cred

    def credentials(self) -> tuple[OpaqueAuth, OpaqueAuth]:
        return self.cred, NULL_AUTH


# -- client ------------------------------------------------------------------------------


def null_call(sock: Any, prog: int, vers: int, cred: OpaqueAuth = NULL_AUTH) -> OpaqueAuth:
    """One NULL call carrying `cred`; returns the reply's verifier. Raises the reply's
    RemoteRpcError (AuthError, ...) or ConnectionLost."""
    conn = ClientConnection(auth=_FixedAuth(cred))
    _, pieces = conn.send_call(prog, vers, 0)
    scratch = memoryview(bytearray(4096))
    try:
        sock.sendall(b"".join(pieces))
        while (event := conn.next_event()) is NEED_DATA:
            n = sock.recv_into(scratch)
            if not n:
                raise ConnectionLost("the server closed the connection during connection setup")
            conn.receive_data(scratch[:n])
    except ConnectionError as exc:  # reset or broken pipe: the server dropped it
        raise ConnectionLost(f"the server dropped the connection during connection setup: {exc}") from exc
    event.result()  # raises the reply's error
    return event.message.verf if event.message is not None else NULL_AUTH


def start_tls(
    sock: socket.socket,
    context: ssl.SSLContext,
    *,
    server_hostname: str | None,
    program: tuple[int, int],
    timeout: float | None = 30.0,
    where: str = "server",
) -> TlsSocket:
    """RFC 9289 STARTTLS on `sock`; see the module docstring. Raises TlsError."""
    prog, vers = program
    try:
        verf = null_call(sock, prog, vers, OpaqueAuth(AUTH_TLS, b""))
    except RemoteRpcError as exc:
        raise TlsError(f"{where} does not offer RPC-over-TLS (RFC 9289): {exc}") from None
    if verf != STARTTLS_VERIFIER:
        raise TlsError(f"{where} does not offer RPC-over-TLS (no STARTTLS in its reply)")
    tls = TlsSocket(sock, context, server_side=False, server_hostname=server_hostname)
    try:
        tls.handshake(timeout)
    except ssl.SSLCertVerificationError as exc:
        raise TlsError(
            f"{where}: the server's certificate is not trusted ({exc.verify_message}); "
            "trust the CA that signed it"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        raise TlsError(f"{where}: TLS handshake failed: {exc}") from None
    try:
        null_call(tls, prog, vers)
    except (ssl.SSLError, OSError, ConnectionLost) as exc:
        raise TlsError(
            f"{where} refused the TLS connection ({exc}); it may require a client "
            "certificate signed by a CA it trusts"
        ) from None
    return tls


def authenticate(sock: Any, token: bytes, *, program: tuple[int, int]) -> None:
    """Prove `token` on this connection (AUTH_CRICKET_TOKEN); raises AuthError."""
    prog, vers = program
    prover = TokenProver(token, channel_binding(sock))
    verf = null_call(sock, prog, vers, prover.challenge_request())
    verf = null_call(sock, prog, vers, prover.proof(verf))
    prover.check_server(verf)


def send_resume_hint(sock: Any, hint: bytes, *, program: tuple[int, int]) -> bool:
    """Name the session this connection resumes (AUTH_CRICKET_RESUME, before STARTTLS);
    False when the server refused the call (it does not know the flavor: nothing changes
    for it). Raises ConnectionLost."""
    prog, vers = program
    try:
        null_call(sock, prog, vers, OpaqueAuth(AUTH_CRICKET_RESUME, hint))
    except RemoteRpcError:
        return False
    return True


# -- server ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Admission:
    """What a connection must do before its calls are served: RPC-over-TLS when `tls` is
    set, then prove `token` when it is set. `handshake_timeout`: seconds a TLS handshake
    step may take. `deadline`: seconds the whole setup may take from the connection's
    start (`--handshake-deadline`); a connection still unproven then is closed."""

    tls: ssl.SSLContext | None = None
    token: bytes | None = None
    handshake_timeout: float = 30.0
    deadline: float = DEFAULT_HANDSHAKE_DEADLINE

    @property
    def required(self) -> bool:
        return self.tls is not None or self.token is not None


def admit(
    sock: Any,
    conn: ServerConnection,
    admission: Admission,
    info: ConnectionInfo,
    dispatch: Dispatch,
) -> Any:
    """Serve `sock` until it meets `admission`; returns the socket to go on with (a
    TlsSocket after STARTTLS), or None when the connection is to be closed (also when the
    setup is not done within `admission.deadline` seconds). `conn` reads records of at most
    PRE_AUTH_MAX_RECORD bytes meanwhile; its own maximum holds again afterwards."""
    verifier = TokenVerifier(admission.token) if admission.token else None
    tls_due = admission.tls is not None
    scratch = memoryview(bytearray(_SCRATCH))
    deadline = time.monotonic() + admission.deadline
    idle_timeout = sock.gettimeout()
    max_record = conn.max_record
    conn.max_record = min(max_record, PRE_AUTH_MAX_RECORD)
    try:
        sock = _setup(sock, conn, admission, info, dispatch, verifier, tls_due, scratch, deadline)
    except TimeoutError:
        log.info("%r: connection setup not done within %g s; closing", info, admission.deadline)
        return None
    if sock is not None:
        sock.settimeout(idle_timeout)
        conn.max_record = max_record
    return sock


def _setup(
    sock: Any,
    conn: ServerConnection,
    admission: Admission,
    info: ConnectionInfo,
    dispatch: Dispatch,
    verifier: TokenVerifier | None,
    tls_due: bool,
    scratch: memoryview,
    deadline: float,
) -> Any:
    while tls_due or (verifier is not None and not verifier.authenticated):
        sock.settimeout(_left(deadline))
        n = sock.recv_into(scratch)
        if not n:
            return None
        conn.receive_data(scratch[:n])
        while (call := conn.next_event()) is not NEED_DATA:
            start = False
            if tls_due:
                pieces, start = _screen_plain(conn, call, info, dispatch)
            elif verifier is not None and not verifier.authenticated:
                pieces = screen_token(conn, call, info, dispatch, verifier)
            else:  # a call sent right behind the last step of the setup
                pieces = dispatch(conn, call, info)
            sock.sendall(b"".join(pieces))
            if verifier is not None and verifier.exhausted:
                log.warning("%r: too many wrong token proofs; closing", info)
                return None
            if start:
                if conn.next_event() is not NEED_DATA or not conn.idle:
                    log.warning("%r: data sent behind the STARTTLS probe; closing", info)
                    return None
                assert admission.tls is not None
                sock = TlsSocket(sock, admission.tls, server_side=True)
                sock.handshake(admission.handshake_timeout, deadline=deadline)
                info.state["tls"] = sock
                tls_due = False
                if verifier is not None:
                    verifier.binding = sock.channel_binding()
                break
    return sock


def _left(deadline: float) -> float:
    """Seconds to `deadline`; TimeoutError once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("connection setup deadline passed")
    return left


def _screen_plain(
    conn: ServerConnection, call: CallMessage, info: ConnectionInfo, dispatch: Dispatch
) -> tuple[list[Buffer], bool]:
    """Before TLS: the AUTH_TLS probe is answered STARTTLS, NULL pings are served."""
    if call.proc == 0 and call.cred.flavor == AUTH_TLS:
        return conn.reply_success(call.xid, verf=STARTTLS_VERIFIER), True
    if call.proc == 0 and call.cred.flavor == AUTH_NONE:
        return dispatch(conn, call, info), False
    if call.proc == 0 and call.cred.flavor == AUTH_CRICKET_RESUME:
        return conn.reply_success(call.xid), False
    return conn.reply_auth_error(call.xid, AUTH_TOOWEAK), False


def screen_token(
    conn: ServerConnection,
    call: CallMessage,
    info: ConnectionInfo,
    dispatch: Dispatch,
    verifier: TokenVerifier,
) -> list[Buffer]:
    """Before the token proof: the token exchange and other NULL calls are served."""
    if call.proc == 0 and call.cred.flavor == AUTH_CRICKET_TOKEN:
        try:
            verf = verifier.answer(call.cred)
        except AuthError as exc:
            log.info("%r: token credential refused: %s", info, exc.detail)
            return conn.reply_auth_error(call.xid, exc.stat)
        if verifier.authenticated:
            log.debug("%r: token proven", info)
        return conn.reply_success(call.xid, verf=verf)
    if call.proc == 0 and call.cred.flavor == AUTH_CRICKET_RESUME:
        return conn.reply_success(call.xid)
    if call.proc == 0:
        return dispatch(conn, call, info)
    return conn.reply_auth_error(call.xid, AUTH_TOOWEAK)
