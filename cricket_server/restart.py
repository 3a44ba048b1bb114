"""The `cricket-restart` command: `cricket-server` that first restores a checkpoint.

    cricket-restart DIR --listen HOST:PORT [every cricket-server option] [--resume-timeout S]

The server is built by `cricket_server.cli.run_server` from the same option set as
`cricket-server` (`server_options`): a restored server keeps the token, TLS, limits and
checkpoint root of the one it replaces only when it is given them again, and the two commands
cannot drift apart. It verifies the checkpoint and restores every session (same addresses,
same handles) before it listens; a client presents its session token in HELLO and goes on.
With `--isolation auto`, sessions that were served by separate worker processes are restored
in worker processes too.
"""

from __future__ import annotations

import sys

import click

from cricket_server.checkpoints.restart import Restore
from cricket_server.cli import ServerOptions, run_server, server_options


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--resume-timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Free the restored sessions no client has resumed after this long (default: keep).",
)
@server_options
def restart(directory: str, resume_timeout: float | None, options: ServerOptions) -> None:
    """Restore the sessions of the checkpoint in DIRECTORY and serve them (and new clients)
    as cricket-server does."""
    run_server(options, Restore(directory, resume_timeout))


def main(argv: list[str] | None = None) -> None:
    """Entry point of `cricket-restart`."""
    restart(args=sys.argv[1:] if argv is None else argv, prog_name="cricket-restart")


if __name__ == "__main__":
    main()
