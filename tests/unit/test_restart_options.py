"""`cricket-restart` accepts every option of `cricket-server`: both are built from one option
set (`cricket_server.cli.server_options`), so a restored server can be given the token, TLS,
limits and checkpoint root of the one it replaces, and the two commands cannot drift."""

from __future__ import annotations

import click

from cricket_server.cli import main as server_command
from cricket_server.restart import restart as restart_command

# Options of cricket-server that make no sense for cricket-restart (none today).
NOT_FOR_RESTART: frozenset[str] = frozenset()
# What cricket-restart adds: the checkpoint to restore, and how long its sessions wait.
ONLY_FOR_RESTART = frozenset({"directory", "resume_timeout"})


def _options(command: click.Command) -> dict[str, click.Parameter]:
    return {p.name: p for p in command.params if p.name is not None}


def test_restart_accepts_every_server_option() -> None:
    server, restart = _options(server_command), _options(restart_command)
    missing = set(server) - set(restart) - NOT_FOR_RESTART
    assert not missing, f"cricket-restart lacks cricket-server's {sorted(missing)}"
    assert set(restart) - set(server) == ONLY_FOR_RESTART
    for name in set(server) - NOT_FOR_RESTART:
        assert server[name].opts == restart[name].opts, name
        assert server[name].default == restart[name].default, name


def test_security_and_limit_options_are_there() -> None:
    flags = {opt for p in restart_command.params for opt in p.opts}
    for flag in ("--auth-token-file", "--tls-cert", "--tls-key", "--tls-client-ca",
                 "--checkpoint-root", "--max-session-memory", "--max-sessions", "--max-record",
                 "--max-in-flight", "--idle-timeout", "--spin-us", "--unix"):  # fmt: skip
        assert flag in flags, flag
