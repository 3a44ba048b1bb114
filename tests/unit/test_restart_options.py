"""`cricket-restart` accepts every option of `cricket-server`: both are built from one option
set (`cricket_server.cli.server_options`), so a restored server can be given the token, TLS,
limits and checkpoint root of the one it replaces, and the two commands cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from cricket_server import cli
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


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_both_commands_build_the_same_server(
    tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same options give cricket-server and cricket-restart the same limits, admission,
    spin and worker spec (nothing is started: the serving step is replaced)."""
    built: list[dict[str, Any]] = []

    def in_threads(listeners: Any, stop: Any, backend: str, sim_bytes: Any, checkpoints: Any,
                   limits: Any, spin_us: float, restore: Any, sim_devices: int = 1) -> None:  # fmt: skip
        built.append({"admission": listeners.admission, "limits": limits, "spin": spin_us,
                      "checkpoints": checkpoints, "restore": restore,
                      "sim_devices": sim_devices})  # fmt: skip

    def in_workers(listeners: Any, stop: Any, pool: Any, limits: Any, checkpoints: Any,
                   restore: Any) -> None:  # fmt: skip
        built.append({"admission": listeners.admission, "limits": limits, "spec": pool.spec,
                      "checkpoints": checkpoints, "restore": restore})  # fmt: skip

    monkeypatch.setattr(cli, "_serve_in_threads", in_threads)
    monkeypatch.setattr(cli, "_serve_in_workers", in_workers)
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)
    token = tmp_path / "token"
    token.write_text("a-token-of-enough-bytes-0123456789")
    token.chmod(0o600)
    options = [
        "--backend", "sim", "--isolation", isolation, "--listen", "127.0.0.1:0",
        "--auth-token-file", str(token), "--max-session-memory", "8M", "--max-sessions", "3",
        "--max-record", "1M", "--idle-timeout", "30", "--max-in-flight", "4",
        "--checkpoint-root", str(tmp_path), "--spin-us", "7",
        "--checkpoint-dir", str(tmp_path / "periodic"), "--checkpoint-every", "60",
        "--sim-devices", "2",
    ]  # fmt: skip
    runner = CliRunner()
    served = runner.invoke(server_command, options, catch_exceptions=False)
    restored = runner.invoke(restart_command, [str(tmp_path / "ckpt"), *options],
                             catch_exceptions=False)  # fmt: skip
    assert served.exit_code == 0 and restored.exit_code == 0, served.output + restored.output
    server, restart = built
    assert restart.pop("restore").directory == str(tmp_path / "ckpt")
    assert server.pop("restore") is None
    assert server["admission"].token == restart["admission"].token == token.read_bytes()
    assert server == restart
    assert server["limits"].max_session_memory == 8 << 20 and server["limits"].max_sessions == 3
    devices = server["spec"].sim_devices if "spec" in server else server["sim_devices"]
    assert devices == 2  # --sim-devices reaches the backend of either isolation
