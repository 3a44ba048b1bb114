"""The `cricket-checkpoint` command (`cricket-restart` is a server: `cricket_server.restart`).

    cricket-checkpoint --server HOST:PORT [--session ID] DIR   # ask a running server
    cricket-checkpoint inspect DIR                             # what is inside
    cricket-checkpoint verify DIR                              # check it as a restore would

DIR of a server-side checkpoint is a path on the server's file system, inside its checkpoint
root (`cricket-server --checkpoint-root`; a relative DIR is taken from that root). Checkpointing
every session is the operator's act: `--server unix:PATH`, the server's Unix socket, as the
user the server runs as (the server checks it with SO_PEERCRED).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

import click

from .format import CheckpointError

_SETTINGS = {"help_option_names": ["-h", "--help"]}


def _rate(size: int, seconds: float) -> str:
    return f"{size / 1e9:.3f} GB in {seconds:.2f} s ({size / 1e9 / max(seconds, 1e-9):.2f} GB/s)"


class ProgressBar:
    """A one-line progress bar on stderr: bytes done of the total, and GB/s."""

    def __init__(self, total: int, label: str, out: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self.start = time.monotonic()
        self.out = out or sys.stderr
        self._shown = -1

    def __call__(self, n: int) -> None:
        self.done += n
        percent = min(100, self.done * 100 // self.total)
        if percent != self._shown:
            self._shown = percent
            bar = "#" * (percent // 4)
            elapsed = max(time.monotonic() - self.start, 1e-9)
            self.out.write(
                f"\r{self.label} [{bar:<25}] {percent:3d}% {self.done / 1e9:.3f}/"
                f"{self.total / 1e9:.3f} GB {self.done / 1e9 / elapsed:.2f} GB/s"
            )
            self.out.flush()

    def finish(self) -> None:
        if self._shown >= 0:
            self.out.write("\n")


def _fail(e: Exception) -> None:
    click.echo(f"error: {e}", err=True)
    sys.exit(1)


# -- cricket-checkpoint ---------------------------------------------------------------------


@click.command(context_settings=_SETTINGS)
@click.option(
    "--server",
    "server",
    required=True,
    metavar="unix:PATH",
    help="The cricket-server's Unix socket (--unix); it serves CHECKPOINT_SERVER only to its own "
    "user there.",
)
@click.option(
    "--session",
    "session",
    default="0",
    metavar="ID",
    help="One session (hex or decimal); default all.",
)
@click.option(
    "--timeout", default=3600.0, show_default=True, help="Seconds to wait for the server."
)
@click.argument("directory")
def take(server: str, session: str, timeout: float, directory: str) -> None:
    """Ask a running cricket-server to checkpoint its sessions into DIRECTORY.

    Also: `cricket-checkpoint inspect DIR` and `cricket-checkpoint verify DIR`."""
    from cricket_client.connection import parse_address
    from cricket_client.security import Security, explain_auth_error, open_rpc
    from cricket_xdr.rpc.errors import AuthError, RpcError
    from cricket_xdr.rpc.tls import TlsError
    from rpc_spec import cricket_rpc as proto

    try:
        session_id = int(session, 0)
    except ValueError:
        raise click.BadParameter(
            f"{session!r} is not a session id", param_hint="--session"
        ) from None
    path = directory  # the server's path: a relative one is taken from its checkpoint root
    start = time.monotonic()
    try:
        # The token (CRICKET_TOKEN[_FILE]) and TLS (CRICKET_TLS_*) settings of any client.
        program = (proto.CRICKET_PROG, proto.CRICKET_V1)
        security = Security.resolve()
        rpc = open_rpc(parse_address(server), security, program=program, timeout=timeout)
        try:
            result = proto.CRICKET_V1_Client(rpc).CHECKPOINT_SERVER(path, session_id)
        except AuthError as exc:
            raise explain_auth_error(exc, security) from None
        finally:
            rpc.close()
    except (OSError, RpcError, TlsError, ValueError) as e:
        _fail(Exception(f"{server}: {e}"))
        return
    if result.err != 0:
        _fail(Exception(f"{server}: checkpoint refused ({result.err}): {result.value}"))
    done = result.value
    click.echo(
        f"{path}: {done.sessions} session(s), {_rate(done.bytes, time.monotonic() - start)}, "
        f"{done.stored_bytes} bytes stored"
    )


@click.group(context_settings=_SETTINGS)
def tools() -> None:
    """Look at checkpoint directories."""


@tools.command()
@click.argument("directory", type=click.Path(file_okay=False))
def inspect(directory: str) -> None:
    """Print what the checkpoint in DIRECTORY holds."""
    from .inspect import describe
    from .reader import Checkpoint

    try:
        click.echo(describe(Checkpoint.open(directory).manifest))
    except CheckpointError as e:
        _fail(e)


@tools.command()
@click.argument("directory", type=click.Path(file_okay=False))
def verify(directory: str) -> None:
    """Check the checkpoint in DIRECTORY as a restore would: the manifest and every blob
    (exit status 1 on any problem)."""
    from .reader import Checkpoint

    start = time.monotonic()
    try:
        ckpt = Checkpoint.open(directory)
    except CheckpointError as e:
        _fail(e)
        return
    problems = ckpt.problems()
    for p in problems:
        click.echo(f"error: {p}", err=True)
    if problems:
        sys.exit(1)
    report = ckpt.verify()
    click.echo(
        f"{directory}: ok, {report.blobs} blobs, {_rate(report.bytes, time.monotonic() - start)}"
    )


def checkpoint_main(argv: list[str] | None = None) -> None:
    """Entry point of `cricket-checkpoint`."""
    args = sys.argv[1:] if argv is None else argv
    command: Callable[..., None] = tools if args and args[0] in tools.commands else take
    command(args=args, prog_name="cricket-checkpoint")
