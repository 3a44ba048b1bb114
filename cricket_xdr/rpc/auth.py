"""Authentication flavors: client credentials and server-side verifiers (RFC 5531 appendix A).

Client: an auth object's `credentials()` gives the `(cred, verf)` pair sent with each call.
Server: a registry maps a flavor to a verifier `verifier(cred, verf) -> principal`, which
raises `AuthError(auth_stat)` to deny the call. The principal reaches handlers as
`ctx.cred.principal`. More flavors plug in through the same two shapes.

AUTH_SYS body (`authsys_parms`)::

    | stamp | machinename<255> (len, bytes, pad) | uid | gid | gids<16> (count, gid...) |

AUTH_CRICKET_TOKEN (flavor 0x8043524B, our own, outside the IANA-assigned numbers): a shared
secret token proven by HMAC-SHA256 challenge-response in two NULL calls, once per connection
(`cricket_xdr.rpc.handshake` runs it; docs/internals.md "Security" has the whole exchange).
Credential body, XDR::

    | version = 1 | phase: 1 CHALLENGE, 2 PROOF | PROOF only: server_nonce[32] client_nonce[32] mac[32] |

The reply verifier (same flavor) carries the server nonce (CHALLENGE) or the server's own
proof (PROOF). mac = HMAC-SHA256(token, label || server_nonce || client_nonce || binding),
label "cricket-token-v1 client" or "... server", binding the TLS channel binding or empty.

AUTH_CRICKET_RESUME (flavor 0x80435252): a routing hint, not a credential. A client that
resumes a session sends, before STARTTLS, one NULL call whose credential body is
`resume_hint(session token)` = SHA-256("cricket-resume-hint-v1" || token), 32 bytes; a
server answers it like a plain NULL call (success, AUTH_NONE verifier) and requires the rest
of its setup as usual. It only lets a server with one process per session (cricket-restart
under process isolation) pick the process that holds the session before the TLS session
that hides the HELLO exists; it proves nothing, and the token cannot be recovered from it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from .errors import AuthError
from .message import (
    AUTH_BADCRED,
    AUTH_NONE,
    AUTH_REJECTEDCRED,
    AUTH_SYS,
    NULL_AUTH,
    OpaqueAuth,
)

__all__ = [
    "ClientAuth",
    "AuthNone",
    "AuthSys",
    "AuthSysParams",
    "Credential",
    "Verifier",
    "verify_none",
    "verify_sys",
    "default_verifiers",
    "AUTH_TLS",
    "AUTH_CRICKET_TOKEN",
    "TOKEN_NONCE_BYTES",
    "token_mac",
    "TokenProver",
    "TokenVerifier",
    "AUTH_CRICKET_RESUME",
    "RESUME_HINT_BYTES",
    "resume_hint",
]

AUTH_INVALIDRESP = 6  # RFC 5531 auth_stat, failed locally: bogus response verifier
AUTH_TLS = 7
"""RFC 9289: the NULL call that asks a server whether it speaks RPC-over-TLS."""
AUTH_CRICKET_TOKEN = 0x8043524B
"""Our token flavor; see the module docstring."""
AUTH_CRICKET_RESUME = 0x80435252
"""Our resume-hint flavor (a routing hint, not a credential); see the module docstring."""
RESUME_HINT_BYTES = 32
_LABEL_RESUME = b"cricket-resume-hint-v1"
TOKEN_NONCE_BYTES = 32
TOKEN_LIFETIME = 30.0  # seconds a challenge stays valid
_TOKEN_VERSION = 1
_PHASE_CHALLENGE = 1
_PHASE_PROOF = 2
_LABEL_CLIENT = b"cricket-token-v1 client"
_LABEL_SERVER = b"cricket-token-v1 server"
_TOKEN_PROOF = struct.Struct(f">II{TOKEN_NONCE_BYTES}s{TOKEN_NONCE_BYTES}s32s")

MAX_MACHINENAME = 255
MAX_GIDS = 16
_U32 = struct.Struct(">I")
_U32X2 = struct.Struct(">II")


class ClientAuth(Protocol):
    def credentials(self) -> tuple[OpaqueAuth, OpaqueAuth]:
        """The (cred, verf) pair for the next call."""
        ...


class AuthNone:
    """AUTH_NONE: no credentials."""

    def credentials(self) -> tuple[OpaqueAuth, OpaqueAuth]:
        return NULL_AUTH, NULL_AUTH


@dataclass(frozen=True)
class AuthSysParams:
    """`authsys_parms`: who the caller says it is (nothing proves it)."""

    machinename: str
    uid: int
    gid: int
    gids: tuple[int, ...] = ()
    stamp: int = 0

    def encode(self) -> bytes:
        name = self.machinename.encode()
        if len(name) > MAX_MACHINENAME:
            raise ValueError(f"AUTH_SYS machinename of {len(name)} bytes exceeds {MAX_MACHINENAME}")
        if len(self.gids) > MAX_GIDS:
            raise ValueError(f"AUTH_SYS: {len(self.gids)} gids exceed {MAX_GIDS}")
        pad = b"\0" * (-len(name) % 4)
        return b"".join(
            [
                _U32X2.pack(self.stamp, len(name)),
                name,
                pad,
                struct.pack(
                    f">{3 + len(self.gids)}I", self.uid, self.gid, len(self.gids), *self.gids
                ),
            ]
        )

    @classmethod
    def decode(cls, body: bytes) -> AuthSysParams:
        """Parse a credential body; raises ValueError when malformed."""
        if len(body) < 8:
            raise ValueError("AUTH_SYS body truncated")
        stamp, length = _U32X2.unpack_from(body)
        if length > MAX_MACHINENAME:
            raise ValueError(f"AUTH_SYS machinename of {length} bytes exceeds {MAX_MACHINENAME}")
        pos = 8 + ((length + 3) & ~3)
        if len(body) < pos + 12:
            raise ValueError("AUTH_SYS body truncated")
        name = body[8 : 8 + length].decode("utf-8", errors="strict")
        uid, gid, count = struct.unpack_from(">3I", body, pos)
        pos += 12
        if count > MAX_GIDS:
            raise ValueError(f"AUTH_SYS: {count} gids exceed {MAX_GIDS}")
        if len(body) != pos + 4 * count:
            raise ValueError("AUTH_SYS body length does not match its gids")
        gids = struct.unpack_from(f">{count}I", body, pos)
        return cls(name, uid, gid, tuple(gids), stamp)


@dataclass
class AuthSys:
    """AUTH_SYS client credentials; the encoded body is computed once."""

    params: AuthSysParams
    _cred: OpaqueAuth = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cred = OpaqueAuth(AUTH_SYS, self.params.encode())

    @classmethod
    def current(cls, machinename: str | None = None) -> AuthSys:
        """Credentials of this process (uid, gid, supplementary groups)."""
        import os
        import socket

        name = machinename if machinename is not None else socket.gethostname()
        gids = tuple(g for g in os.getgroups() if g != os.getgid())[:MAX_GIDS]
        return cls(AuthSysParams(name[:MAX_MACHINENAME], os.getuid(), os.getgid(), gids))

    def credentials(self) -> tuple[OpaqueAuth, OpaqueAuth]:
        return self._cred, NULL_AUTH


class Credential(NamedTuple):
    """What a handler learns about the caller: `ctx.cred`."""

    flavor: int
    body: bytes
    principal: object


Verifier = Callable[[OpaqueAuth, OpaqueAuth], object]


def verify_none(cred: OpaqueAuth, verf: OpaqueAuth) -> None:
    """AUTH_NONE: accept; the principal is None."""
    return None


def verify_sys(cred: OpaqueAuth, verf: OpaqueAuth) -> AuthSysParams:
    """AUTH_SYS: accept a well-formed body; the principal is its AuthSysParams."""
    try:
        return AuthSysParams.decode(cred.body)
    except (ValueError, UnicodeDecodeError, struct.error) as exc:
        raise AuthError(AUTH_BADCRED, str(exc)) from None


def default_verifiers(extra: Mapping[int, Verifier] | None = None) -> dict[int, Verifier]:
    """AUTH_NONE and AUTH_SYS, updated with `extra` (a flavor mapped to None is refused)."""
    table: dict[int, Verifier | None] = {AUTH_NONE: verify_none, AUTH_SYS: verify_sys}
    if extra:
        table.update(extra)
    return {k: v for k, v in table.items() if v is not None}


def token_mac(
    token: bytes, role: str, server_nonce: bytes, client_nonce: bytes, binding: bytes = b""
) -> bytes:
    """HMAC-SHA256 proof of `token` by "client" or "server" for one exchange."""
    label = _LABEL_CLIENT if role == "client" else _LABEL_SERVER
    return hmac.new(
        token, b"".join((label, server_nonce, client_nonce, binding)), hashlib.sha256
    ).digest()


def resume_hint(session_token: bytes) -> bytes:
    """The AUTH_CRICKET_RESUME body of a session token (see the module docstring)."""
    return hashlib.sha256(_LABEL_RESUME + session_token).digest()


class TokenProver:
    """Client side of AUTH_CRICKET_TOKEN (sans-io): the two credentials and the checks of
    the server's verifiers. `binding`: the TLS channel binding, empty without TLS."""

    def __init__(self, token: bytes, binding: bytes = b"") -> None:
        if not token:
            raise ValueError("AUTH_CRICKET_TOKEN: the token is empty")
        self._token = token
        self._binding = binding
        self._client_nonce = secrets.token_bytes(TOKEN_NONCE_BYTES)
        self._server_nonce: bytes | None = None

    def challenge_request(self) -> OpaqueAuth:
        """Credential of the first NULL call: ask for a server nonce."""
        return OpaqueAuth(AUTH_CRICKET_TOKEN, _U32X2.pack(_TOKEN_VERSION, _PHASE_CHALLENGE))

    def proof(self, verf: OpaqueAuth) -> OpaqueAuth:
        """Credential of the second NULL call, from the first reply's verifier."""
        if verf.flavor != AUTH_CRICKET_TOKEN or len(verf.body) != TOKEN_NONCE_BYTES:
            raise AuthError(AUTH_INVALIDRESP, "the server sent no token challenge")
        self._server_nonce = bytes(verf.body)
        mac = token_mac(
            self._token, "client", self._server_nonce, self._client_nonce, self._binding
        )
        body = _TOKEN_PROOF.pack(
            _TOKEN_VERSION, _PHASE_PROOF, self._server_nonce, self._client_nonce, mac
        )
        return OpaqueAuth(AUTH_CRICKET_TOKEN, body)

    def check_server(self, verf: OpaqueAuth) -> None:
        """The second reply's verifier must prove that the server holds the token too."""
        if self._server_nonce is None:
            raise RuntimeError("TokenProver.check_server before proof()")
        want = token_mac(
            self._token, "server", self._server_nonce, self._client_nonce, self._binding
        )
        if verf.flavor != AUTH_CRICKET_TOKEN or not hmac.compare_digest(bytes(verf.body), want):
            raise AuthError(
                AUTH_INVALIDRESP, "the server accepted the token but could not prove it holds it"
            )


class TokenVerifier:
    """Server side of AUTH_CRICKET_TOKEN for one connection (sans-io).

    A challenge is single-use (consumed by the next proof, right or wrong) and valid for
    `lifetime` seconds; it belongs to this object, that is to one connection, so a proof
    captured on one connection is worthless on another. After `max_failures` wrong proofs
    `exhausted` is True (the transport then closes the connection).
    """

    def __init__(
        self,
        token: bytes,
        *,
        binding: bytes = b"",
        lifetime: float = TOKEN_LIFETIME,
        max_failures: int = 3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not token:
            raise ValueError("AUTH_CRICKET_TOKEN: the token is empty")
        self._token = token
        self.binding = binding
        self._lifetime = lifetime
        self._clock = clock
        self._nonce: bytes | None = None
        self._issued = 0.0
        self._failures = 0
        self._max_failures = max_failures
        self.authenticated = False

    @property
    def exhausted(self) -> bool:
        return self._failures >= self._max_failures

    def answer(self, cred: OpaqueAuth) -> OpaqueAuth:
        """The reply verifier for a NULL call carrying `cred`; raises AuthError to refuse."""
        body = bytes(cred.body)
        if len(body) == 8:
            version, phase = _U32X2.unpack(body)
            if version == _TOKEN_VERSION and phase == _PHASE_CHALLENGE:
                self._nonce = secrets.token_bytes(TOKEN_NONCE_BYTES)
                self._issued = self._clock()
                return OpaqueAuth(AUTH_CRICKET_TOKEN, self._nonce)
        if len(body) != _TOKEN_PROOF.size:
            raise AuthError(AUTH_BADCRED, "malformed token credential")
        version, phase, server_nonce, client_nonce, mac = _TOKEN_PROOF.unpack(body)
        if version != _TOKEN_VERSION or phase != _PHASE_PROOF:
            raise AuthError(AUTH_BADCRED, f"token credential version {version} phase {phase}")
        nonce, self._nonce = self._nonce, None  # single use, whatever comes next
        if nonce is None or not hmac.compare_digest(server_nonce, nonce):
            self._failures += 1
            raise AuthError(AUTH_REJECTEDCRED, "no such challenge on this connection")
        if self._clock() - self._issued > self._lifetime:
            self._failures += 1
            raise AuthError(AUTH_REJECTEDCRED, "the challenge expired")
        want = token_mac(self._token, "client", nonce, client_nonce, self.binding)
        if not hmac.compare_digest(mac, want):
            self._failures += 1
            raise AuthError(AUTH_BADCRED, "wrong token")
        self.authenticated = True
        proof = token_mac(self._token, "server", nonce, client_nonce, self.binding)
        return OpaqueAuth(AUTH_CRICKET_TOKEN, proof)
