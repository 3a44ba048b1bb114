"""The client's side of cricket-server's token and TLS: configuration and connection setup.

- Token: `token=` of `connect()`, else CRICKET_TOKEN, else the file named by
  CRICKET_TOKEN_FILE (surrounding whitespace is not part of it).
- TLS: `tls=` of `connect()`: an `ssl.SSLContext`, True (a context from the variables
  below), False (none); by default TLS is on when CRICKET_TLS=1 or CRICKET_TLS_CA is set.
  CRICKET_TLS_CA: CA certificates to trust (default: the system's); CRICKET_TLS_CERT and
  CRICKET_TLS_KEY: a client certificate; CRICKET_TLS_SERVER_NAME: the name the server's
  certificate must carry (default: the address's host; "localhost" for Unix sockets).

`open_rpc` opens an `RpcClient` with both set up; `Connection` and reconnects use it, so a
reconnect authenticates again. It also sets how long a thread waiting for a reply polls the
socket before it blocks: CRICKET_SPIN_US microseconds (default 100 on 4 or more cores, else
0: off; ignored with TLS).

Deadlines: setting up a connection (TCP connect, STARTTLS, token proof and HELLO) must finish
within CRICKET_CONNECT_TIMEOUT seconds (default 10), else ConnectTimeout names the address and
the step. A call has no deadline unless CRICKET_CALL_TIMEOUT (seconds) sets one (RpcTimeout
then): synchronizing calls may legitimately run for minutes. A peer host that dies or becomes
unreachable is noticed anyway through TCP keepalive (about 25 s, ConnectionLost); a server
process that is alive but stuck inside a call is noticed only with CRICKET_CALL_TIMEOUT.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass

from cricket_xdr.rpc.auth import resume_hint
from cricket_xdr.rpc.client import RpcClient
from cricket_xdr.rpc.errors import AuthError
from cricket_xdr.rpc.message import AUTH_BADCRED, AUTH_REJECTEDCRED, AUTH_TOOWEAK
from cricket_xdr.rpc.spin import MAX_SPIN_US, default_spin_us
from cricket_xdr.rpc.tls import TlsError, client_context

from .errors import CricketClientError

__all__ = [
    "Security",
    "open_rpc",
    "explain_auth_error",
    "spin_us_from_env",
    "connect_timeout_from_env",
    "call_timeout_from_env",
    "DEFAULT_CONNECT_TIMEOUT",
]

TOKEN_ENV = "CRICKET_TOKEN"
TOKEN_FILE_ENV = "CRICKET_TOKEN_FILE"
TLS_ENV = "CRICKET_TLS"
TLS_CA_ENV = "CRICKET_TLS_CA"
TLS_CERT_ENV = "CRICKET_TLS_CERT"
TLS_KEY_ENV = "CRICKET_TLS_KEY"
TLS_SERVER_NAME_ENV = "CRICKET_TLS_SERVER_NAME"
SPIN_ENV = "CRICKET_SPIN_US"
CONNECT_TIMEOUT_ENV = "CRICKET_CONNECT_TIMEOUT"
CALL_TIMEOUT_ENV = "CRICKET_CALL_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT = 10.0  # seconds


@dataclass(frozen=True)
class Security:
    """What a connection proves and how it is protected."""

    token: bytes | None = None
    tls: ssl.SSLContext | None = None
    server_name: str | None = None

    @classmethod
    def resolve(
        cls, *, tls: ssl.SSLContext | bool | None = None, token: bytes | str | None = None
    ) -> Security:
        """From the arguments of `connect()`, the environment filling what they leave."""
        if isinstance(token, str):
            token = token.encode()
        if token is None:
            token = _env_token()
        if tls is None:
            tls = os.environ.get(TLS_ENV, "") not in ("", "0") or bool(os.environ.get(TLS_CA_ENV))
        if tls is True:
            tls = _env_context()
        return cls(
            token=token or None,
            tls=tls or None,
            server_name=os.environ.get(TLS_SERVER_NAME_ENV) or None,
        )


def _env_token() -> bytes | None:
    text = os.environ.get(TOKEN_ENV)
    if text:
        return text.strip().encode()
    path = os.environ.get(TOKEN_FILE_ENV)
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            token = f.read().strip()
    except OSError as exc:
        raise CricketClientError(f"{TOKEN_FILE_ENV}={path}: {exc.strerror}") from None
    if not token:
        raise CricketClientError(f"{TOKEN_FILE_ENV}={path}: the file is empty")
    return token


def _env_context() -> ssl.SSLContext:
    ca = os.environ.get(TLS_CA_ENV) or None
    cert = os.environ.get(TLS_CERT_ENV) or None
    key = os.environ.get(TLS_KEY_ENV) or None
    try:
        return client_context(ca, cert, key)
    except (OSError, ValueError) as exc:
        raise CricketClientError(
            f"TLS files ({TLS_CA_ENV}={ca}, {TLS_CERT_ENV}={cert}, {TLS_KEY_ENV}={key}): {exc}"
        ) from None


def spin_us_from_env() -> float:
    """CRICKET_SPIN_US (microseconds, 0: off), else `default_spin_us()`."""
    text = os.environ.get(SPIN_ENV, "").strip()
    if not text:
        return default_spin_us()
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_SPIN_US:  # also NaN
        raise CricketClientError(
            f"{SPIN_ENV}={text!r}: expected microseconds from 0 (off) to {MAX_SPIN_US:g}, "
            "e.g. 100"
        )
    return value


def _seconds_from_env(name: str) -> float | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):  # also NaN
        raise CricketClientError(f"{name}={text!r}: expected a number of seconds above 0, e.g. 10")
    return value


def connect_timeout_from_env() -> float:
    """CRICKET_CONNECT_TIMEOUT (seconds), else DEFAULT_CONNECT_TIMEOUT."""
    value = _seconds_from_env(CONNECT_TIMEOUT_ENV)
    return DEFAULT_CONNECT_TIMEOUT if value is None else value


def call_timeout_from_env() -> float | None:
    """CRICKET_CALL_TIMEOUT (seconds), else None: calls wait as long as they run."""
    return _seconds_from_env(CALL_TIMEOUT_ENV)


def open_rpc(
    address: tuple[str, int] | str,
    security: Security,
    *,
    program: tuple[int, int],
    timeout: float | None = None,
    connect_timeout: float | None = None,
    resume: bytes | None = None,
) -> RpcClient:
    """An RpcClient to `address` with TLS and the token proof done; AuthError and TlsError
    carry what to do about them. `connect_timeout` (default: CRICKET_CONNECT_TIMEOUT) bounds
    the setup; ConnectTimeout names the step that did not finish. `resume`: the token of
    the session this connection resumes; with TLS its resume hint goes first (a server with
    a process per session routes the connection by it: the HELLO is encrypted)."""
    if connect_timeout is None:
        connect_timeout = connect_timeout_from_env()
    server_name = security.server_name
    if server_name is None and isinstance(address, str):
        server_name = "localhost"
    try:
        return RpcClient(
            address,
            timeout=timeout,
            connect_timeout=connect_timeout,
            tls=security.tls,
            server_hostname=server_name,
            token=security.token,
            program=program,
            spin_us=spin_us_from_env(),
            resume_hint=resume_hint(resume) if resume and security.tls is not None else None,
        )
    except AuthError as exc:
        raise explain_auth_error(exc, security) from None
    except TlsError as exc:
        hint = ""
        if "not trusted" in str(exc):
            hint = f": set {TLS_CA_ENV} to a file holding that CA's certificate"
        elif "client certificate" in str(exc):
            hint = f": set {TLS_CERT_ENV} and {TLS_KEY_ENV}"
        raise TlsError(f"{exc}{hint}") from None


def explain_auth_error(exc: AuthError, security: Security) -> AuthError:
    """`exc` with a message that says what to do."""
    if exc.stat == AUTH_TOOWEAK and security.token is None:
        why = f"the server requires a token: set {TOKEN_ENV} or {TOKEN_FILE_ENV}"
        if security.tls is None:
            why += f" (or it requires TLS: set {TLS_ENV}=1 or {TLS_CA_ENV})"
    elif exc.stat == AUTH_TOOWEAK:
        why = f"the server requires TLS: set {TLS_ENV}=1 or {TLS_CA_ENV}, or pass tls= to connect()"
    elif exc.stat == AUTH_BADCRED:
        why = f"the server refused the token ({TOKEN_ENV} / {TOKEN_FILE_ENV}): wrong token"
    elif exc.stat == AUTH_REJECTEDCRED:
        why = "the server refused the token proof (challenge unknown or expired)"
    else:
        return exc
    return AuthError(exc.stat, why, exc.prog, exc.vers, exc.proc, xid=exc.xid)
