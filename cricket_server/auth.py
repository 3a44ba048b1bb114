"""cricket-server's security options: the token file and the TLS files, checked, and the
`Admission` (`cricket_xdr.rpc.handshake`) every connection must pass.

The token file holds the secret (surrounding whitespace is not part of it); the server
refuses to start when the file is empty or readable or writable by others than its owner
and group. In process isolation each worker reads the same files itself (`SecurityFiles`
travels in `WorkerSpec` as paths, never the secret); the main process proves a token itself
before a connection gets a worker, while with TLS the worker runs the setup of its connection
(see `cricket_server.workers.gate`).
"""

from __future__ import annotations

import functools
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from cricket_xdr.rpc.handshake import Admission
from cricket_xdr.rpc.tls import server_context

__all__ = [
    "SecurityError",
    "SecurityFiles",
    "load_token",
    "security_admission",
    "security_options",
]

log = logging.getLogger("cricket_server")

MIN_TOKEN_BYTES = 16


class SecurityError(ValueError):
    """A token or TLS file that cannot be used; the message names the file and why."""


def load_token(path: str) -> bytes:
    """The token in `path`; SecurityError when it is missing, empty or readable by others."""
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            token = f.read().strip()
    except OSError as exc:
        raise SecurityError(f"--auth-token-file {path}: {exc.strerror}") from None
    if st.st_mode & (stat.S_IROTH | stat.S_IWOTH):
        raise SecurityError(
            f"--auth-token-file {path}: readable or writable by every user "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); chmod o-rw {path}"
        )
    if not token:
        raise SecurityError(f"--auth-token-file {path}: the file is empty")
    if len(token) < MIN_TOKEN_BYTES:
        log.warning("--auth-token-file %s: a token of %d bytes is easy to guess; use at least "
                    "%d random bytes", path, len(token), MIN_TOKEN_BYTES)  # fmt: skip
    return token


@dataclass(frozen=True)
class SecurityFiles:
    """The files of `--auth-token-file`, `--tls-cert`, `--tls-key`, `--tls-client-ca`."""

    token_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise SecurityError("--tls-cert and --tls-key go together")
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise SecurityError("--tls-client-ca needs --tls-cert and --tls-key")

    def admission(self) -> Admission:
        """Read and check the files; SecurityError names the first that cannot be used."""
        token = load_token(self.token_file) if self.token_file is not None else None
        tls = None
        if self.tls_cert is not None and self.tls_key is not None:
            try:
                tls = server_context(self.tls_cert, self.tls_key, self.tls_client_ca)
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                files = f"--tls-cert {self.tls_cert} --tls-key {self.tls_key}"
                if self.tls_client_ca is not None:
                    files += f" --tls-client-ca {self.tls_client_ca}"
                raise SecurityError(f"{files}: {exc}") from None
        return Admission(tls=tls, token=token)

    def describe(self) -> str:
        """For the start-up log line: "token, TLS with client certificates"."""
        parts = []
        if self.token_file is not None:
            parts.append("token")
        if self.tls_cert is not None:
            parts.append("TLS with client certificates" if self.tls_client_ca else "TLS")
        return ", ".join(parts) or "no authentication"

    def worker_args(self) -> list[str]:
        """The options that give a worker process the same files."""
        args: list[str] = []
        for option, value in (
            ("--auth-token-file", self.token_file),
            ("--tls-cert", self.tls_cert),
            ("--tls-key", self.tls_key),
            ("--tls-client-ca", self.tls_client_ca),
        ):
            if value is not None:
                args += [option, os.path.abspath(value)]
        return args


def security_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """cricket-server's --auth-token-file and --tls-* options, given to the command as one
    `security: SecurityFiles` argument."""

    @functools.wraps(fn)
    def command(
        *args: Any,
        auth_token_file: str | None,
        tls_cert: str | None,
        tls_key: str | None,
        tls_client_ca: str | None,
        **kwargs: Any,
    ) -> Any:
        try:
            files = SecurityFiles(auth_token_file, tls_cert, tls_key, tls_client_ca)
        except SecurityError as exc:
            raise click.UsageError(str(exc)) from None
        return fn(*args, security=files, **kwargs)

    options = [
        click.option("--auth-token-file", metavar="FILE", help="Serve only clients that prove "
                     "the token in FILE (CRICKET_TOKEN on the client); FILE must not be "
                     "readable by every user."),
        click.option("--tls-cert", metavar="FILE", help="RPC over TLS (RFC 9289): the server's "
                     "certificate chain (PEM); every call but NULL then needs TLS."),
        click.option("--tls-key", metavar="FILE", help="The private key of --tls-cert (PEM)."),
        click.option("--tls-client-ca", metavar="FILE", help="Require client certificates "
                     "signed by a CA in FILE (PEM)."),
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def security_admission(files: SecurityFiles) -> Admission | None:
    """The checked `Admission` of `files` (None when nothing is required); a SecurityError
    becomes a click error, so the server refuses to start."""
    try:
        admission = files.admission()
    except SecurityError as exc:
        raise click.ClickException(str(exc)) from None
    return admission if admission.required else None
