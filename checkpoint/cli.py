"""The `cricket-checkpoint` and `cricket-restart` commands.

    cricket-checkpoint --server HOST:PORT [--session ID] DIR   # ask a running server
    cricket-checkpoint inspect DIR                             # what is inside
    cricket-checkpoint verify DIR                              # check it as a restore would
    cricket-restart DIR --listen HOST:PORT [--backend sim|cuda|auto] [--ready-file F]

DIR of a server-side checkpoint is a path on the server's file system (a relative one is made
absolute here). `cricket-restart` verifies the checkpoint, restores every session (same
addresses, same handles) before it listens, and then serves them until SIGTERM/SIGINT; a
client presents its session token in HELLO and goes on.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
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
@click.option("--server", "server", required=True, metavar="HOST:PORT", help="The cricket-server.")
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
    path = os.path.abspath(directory)
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


# -- cricket-restart ------------------------------------------------------------------------


@click.command(context_settings=_SETTINGS)
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--listen", "listen", required=True, metavar="HOST:PORT", help="TCP address to serve on."
)
@click.option(
    "--backend", type=click.Choice(["auto", "cuda", "sim"]), default="auto", show_default=True
)
@click.option("--ready-file", metavar="PATH", help='Once serving, write "host:port" here.')
@click.option("--sim-memory", metavar="BYTES", help="Size of the sim backend's device memory.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
)
@click.option(
    "--checkpoint-dir",
    metavar="DIR",
    help="Checkpoint every session into DIR on SIGUSR1 (and with --checkpoint-every).",
)
@click.option(
    "--checkpoint-every", type=float, metavar="SECONDS", help="Also checkpoint this often."
)
@click.option(
    "--resume-timeout",
    type=float,
    metavar="SECONDS",
    help="Free the restored sessions no client has resumed after this long (default: keep).",
)
@click.option(
    "--isolation",
    type=click.Choice(["auto", "process", "thread"]),
    default="auto",
    show_default=True,
    help="process: each restored session (and each new connection) in a worker process of its "
    "own, at the same addresses; thread: all in this process; auto: process on cuda, and for "
    "sessions that were served by separate worker processes.",
)
def restart(
    directory: str,
    listen: str,
    backend: str,
    ready_file: str | None,
    sim_memory: str | None,
    log_level: str,
    checkpoint_dir: str | None,
    checkpoint_every: float | None,
    resume_timeout: float | None,
    isolation: str,
) -> None:
    """Restore the sessions of the checkpoint in DIRECTORY and serve them."""
    from cricket_server.cli import resolve_isolation

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if checkpoint_every is not None and checkpoint_dir is None:
        raise click.UsageError("--checkpoint-every needs --checkpoint-dir")
    mode, backend = resolve_isolation(isolation, backend)
    if isolation == "auto" and mode == "thread" and _needs_workers(directory):
        mode = "process"
    if mode == "process":
        from .restart_workers import restart_in_workers

        restart_in_workers(
            directory,
            listen,
            backend,
            ready_file,
            sim_memory,
            log_level,
            (checkpoint_dir, checkpoint_every),
            resume_timeout,
        )
        return
    _restart_in_threads(
        directory,
        listen,
        backend,
        ready_file,
        sim_memory,
        checkpoint_dir,
        checkpoint_every,
        resume_timeout,
    )


def _needs_workers(directory: str) -> bool:
    """Whether the checkpoint's sessions cannot share one process (they came from workers
    of a process-isolated server and share handle values or addresses)."""
    from cricket_server.checkpointing import sessions_conflict

    from .reader import Checkpoint

    try:
        return sessions_conflict(Checkpoint.open(directory).manifest.sessions) is not None
    except CheckpointError:
        return False  # the restore itself reports what is wrong


def _restart_in_threads(
    directory: str,
    listen: str,
    backend: str,
    ready_file: str | None,
    sim_memory: str | None,
    checkpoint_dir: str | None,
    checkpoint_every: float | None,
    resume_timeout: float | None,
) -> None:
    """Every restored session (and new connection) served by this process."""
    from cricket_server.backends import make_backend
    from cricket_server.checkpointing import (
        CheckpointTrigger,
        close_unclaimed,
        restore_checkpoint,
        restore_total_bytes,
    )
    from cricket_server.cli import parse_address, parse_size, server_version, write_ready_file
    from cricket_server.memory import AddressArena
    from cricket_server.service import CricketService
    from cricket_server.session import SessionManager
    from cricket_xdr.rpc.server import RpcServer

    log = logging.getLogger("cricket_restart")
    host, port = parse_address(listen)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sim_bytes = parse_size(sim_memory) if sim_memory else None
    the_backend = make_backend(backend, sim_memory=sim_bytes)
    try:
        manager = SessionManager(
            the_backend, AddressArena(*the_backend.address_space()), server_version=server_version()
        )
        try:
            bar = ProgressBar(restore_total_bytes(directory), "restore")
            report = restore_checkpoint(manager, directory, progress=bar)
            bar.finish()
        except CheckpointError as e:
            _fail(e)
            return
        for note in report.moved_globals + report.warnings:
            click.echo(f"warning: {note}", err=True)
        log.info(
            "restored %d session(s) from %s: %s",
            len(report.sessions),
            directory,
            _rate(report.bytes, report.seconds),
        )
        trigger = None
        if checkpoint_dir is not None:
            trigger = CheckpointTrigger(manager, checkpoint_dir, checkpoint_every).start()
            trigger.install_sigusr1()
        server = RpcServer([CricketService(manager)])
        try:
            bound_host, bound_port = server.listen_tcp(host, port)
            server.start()
            where = (
                f"[{bound_host}]:{bound_port}"
                if ":" in bound_host
                else f"{bound_host}:{bound_port}"
            )
            log.info("cricket-restart serving %d session(s) on %s", len(report.sessions), where)
            if ready_file:
                write_ready_file(ready_file, where + "\n")
            if resume_timeout is not None and not stop.wait(resume_timeout):
                closed = close_unclaimed(manager)
                if closed:
                    log.warning("freed %d restored session(s) no client resumed", closed)
            while not stop.wait(1.0):
                pass
        finally:
            if trigger is not None:
                trigger.stop()
            server.shutdown()
            manager.close_all("server shutdown")
            if ready_file:
                with_suppressed_unlink(ready_file)
    finally:
        the_backend.close()


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def restart_main(argv: list[str] | None = None) -> None:
    """Entry point of `cricket-restart`."""
    restart(args=sys.argv[1:] if argv is None else argv, prog_name="cricket-restart")
