"""Session tokens at rest: a salted, keyed digest, never the token.

Whoever can read a checkpoint directory must not be able to take over its sessions. A
session keeps a `TokenDigest` from the moment it opens (a random salt and
HMAC-SHA256(key: salt, message: token)); a checkpoint stores that digest
(`session_image.token_salt`, `.token_digest`), and a restored session knows nothing else:
a client's HELLO token is matched with `TokenDigest.matches` (constant-time compare). A
restored session checkpointed again writes the same digest.

The digest also carries the token's resume hint (`cricket_xdr.rpc.auth.resume_hint`,
`session_image.resume_hint`): what a resuming client sends before STARTTLS so that, under
process isolation, its connection reaches the worker holding its session. The hint names a
session; it proves nothing (the HELLO still needs the token) and does not reveal the token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from cricket_xdr.rpc.auth import resume_hint
from rpc_spec import checkpoint_rpc as ck

SALT_BYTES = 16


def _mac(salt: bytes, token: bytes) -> bytes:
    return hmac.new(salt, token, hashlib.sha256).digest()


@dataclass(frozen=True)
class TokenDigest:
    """What is kept of a session token; see the module docstring."""

    salt: bytes
    digest: bytes
    hint: bytes  # the token's resume hint

    @classmethod
    def of(cls, token: bytes) -> TokenDigest:
        """The digest of `token` under a fresh random salt."""
        salt = secrets.token_bytes(SALT_BYTES)
        return cls(salt, _mac(salt, token), resume_hint(token))

    @classmethod
    def of_image(cls, image: ck.session_image) -> TokenDigest:
        """The digest a checkpoint keeps of a session's token."""
        return cls(bytes(image.token_salt), bytes(image.token_digest), bytes(image.resume_hint))

    def matches(self, token: bytes) -> bool:
        """Whether `token` is the token this digest was made of."""
        return hmac.compare_digest(_mac(self.salt, token), self.digest)

    def __repr__(self) -> str:
        return f"TokenDigest({self.digest[:4].hex()}...)"
