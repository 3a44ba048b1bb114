"""Authentication flavors: client credentials and server-side verifiers (RFC 5531 appendix A).

Client: an auth object's `credentials()` gives the `(cred, verf)` pair sent with each call.
Server: a registry maps a flavor to a verifier `verifier(cred, verf) -> principal`, which
raises `AuthError(auth_stat)` to deny the call. The principal reaches handlers as
`ctx.cred.principal`. More flavors plug in through the same two shapes.

AUTH_SYS body (`authsys_parms`)::

    | stamp | machinename<255> (len, bytes, pad) | uid | gid | gids<16> (count, gid...) |
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from .errors import AuthError
from .message import AUTH_BADCRED, AUTH_NONE, AUTH_SYS, NULL_AUTH, OpaqueAuth

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
]

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
