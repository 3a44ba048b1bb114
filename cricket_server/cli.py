"""The `cricket-server` command, and the one server builder it shares with `cricket-restart`.

`server_options` is the one option set of both commands (checked into a `ServerOptions`);
`run_server(options, restore=None)` builds and runs the server: isolation, admission (token,
TLS), limits, checkpoint triggers, spin, ready file. `cricket-restart`
(`cricket_server.restart`) is the same call with a `Restore`, so the two cannot drift apart.

    cricket-server --listen 127.0.0.1:28463 --backend auto
    cricket-server --listen 127.0.0.1:0 --backend sim --ready-file /tmp/ready

`--ready-file` is written atomically once the server listens: "host:port" of the first TCP
address (or "unix:PATH" when there is none) and a newline. SIGTERM and SIGINT shut down
cleanly: connections closed, every session freed, exit status 0.

`--isolation process` serves each connection in a worker process of its own
(`cricket_server.workers`): this process only listens and never initializes CUDA, so a GPU
fault that spoils one worker's CUDA state cannot touch the other sessions. `thread` serves every
connection in this process; `auto` is process for the cuda backend, thread for sim (one
simulated device whose memory the sessions share).

`--spin-us N`: before each blocking receive, a connection's thread polls its socket for up to
N microseconds (`cricket_xdr.rpc.spin`), saving a thread wake-up per small call. Default 100
under process isolation on a machine of 4 or more cores, else 0: under thread isolation one
process serves every connection, and spinning threads would take the GIL and cores from the
working ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from types import FrameType
from typing import Any

import click

from checkpoint.format import CheckpointError
from cricket_server.auth import SecurityFiles, security_admission, security_options
from cricket_server.backends import BACKEND_NAMES, make_backend
from cricket_server.checkpoints.restart import (
    Restore,
    check_files,
    restore_in_threads,
    restore_in_workers,
)
from cricket_server.checkpoints.sessions import CheckpointTrigger, close_unclaimed
from cricket_server.checkpoints.workers import checkpoint_workers
from cricket_server.limits import (
    DEFAULT_MAX_CONTEXTS,
    DEFAULT_MAX_EVENTS,
    DEFAULT_MAX_MODULES,
    DEFAULT_MAX_PENDING,
    DEFAULT_MAX_STREAMS,
    ServerLimits,
    SessionGate,
    default_checkpoint_root,
    rpc_limits,
)
from cricket_server.memory import AddressArena
from cricket_server.service import CricketService
from cricket_server.session import SessionManager
from cricket_server.workers import WorkerPool, WorkerSpec, WorkerStartError
from cricket_server.workers.gate import AdmissionGate
from cricket_server.workers.routing import RestoredRouter
from cricket_xdr.rpc.handshake import DEFAULT_HANDSHAKE_DEADLINE, Admission
from cricket_xdr.rpc.server import RpcServer
from cricket_xdr.rpc.spin import MAX_SPIN_US, default_spin_us
from rpc_spec import cricket_rpc as proto

log = logging.getLogger("cricket_server")

DEFAULT_LISTEN = "127.0.0.1:28463"
ISOLATION_MODES = ("auto", "process", "thread")
_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT or [IPV6]:PORT -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def parse_size(text: str) -> int:
    """Bytes, with an optional K/M/G/T suffix (powers of 1024): 512M, 8G, 1073741824."""
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = _SUFFIXES.get(value[-1:], 1)
    if scale != 1:
        value = value[:-1]
    if not value.isdigit() or int(value) == 0:
        raise click.BadParameter(f"{text!r} is not a size in bytes (e.g. 8G, 512M, 1048576)")
    return int(value) * scale


def server_version() -> str:
    try:
        return metadata.version("cricket-python")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def write_ready_file(path: str, text: str) -> None:
    """Write `text` to `path` atomically (temporary file in the same folder, then rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ready-", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_SERVER_OPTIONS = [
    click.option(
        "--listen",
        "listen",
        multiple=True,
        metavar="HOST:PORT",
        help=f"TCP address to serve on; repeatable; port 0 picks a free one (default {DEFAULT_LISTEN} "
        "unless --unix is given).",
    ),
    click.option(
        "--unix", "unix_path", metavar="PATH", help="Also (or only) serve on this Unix socket."
    ),
    click.option(
        "--backend",
        type=click.Choice(BACKEND_NAMES),
        default="auto",
        show_default=True,
        help="cuda: this machine's GPUs; sim: the software device; auto: cuda when a GPU answers.",
    ),
    click.option("--register", is_flag=True, help="Register the program with the local rpcbind."),
    click.option(
        "--log-level",
        type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
        default="info",
        show_default=True,
    ),
    click.option(
        "--ready-file",
        metavar="PATH",
        help='Once listening, write "host:port" (or "unix:PATH") here, atomically.',
    ),
    click.option(
        "--sim-memory",
        metavar="BYTES",
        help="Size of the sim backend's device memory (e.g. 8G).",
    ),
    click.option(
        "--sim-devices",
        type=click.IntRange(min=1, max=64),
        default=1,
        show_default=True,
        help="How many devices the sim backend models (peer access and copies between them).",
    ),
    click.option(
        "--isolation",
        type=click.Choice(ISOLATION_MODES),
        default="auto",
        show_default=True,
        help="process: each connection in a worker process of its own (a GPU fault in one session "
        "cannot spoil the others); thread: every connection in this process; auto: process for "
        "the cuda backend, thread for sim.",
    ),
    click.option(
        "--spare-workers",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="With process isolation: workers kept started and warm for the next connections.",
    ),
    click.option(
        "--checkpoint-dir",
        metavar="DIR",
        help="Checkpoint every session into DIR on SIGUSR1, every --checkpoint-every seconds, "
        "and once more at a graceful shutdown.",
    ),
    click.option(
        "--checkpoint-every",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="With --checkpoint-dir: also checkpoint periodically.",
    ),
    click.option(
        "--max-session-memory",
        metavar="BYTES",
        help="Device memory one session may hold at once (e.g. 4G); an allocation beyond it gets "
        "CUDA_ERROR_OUT_OF_MEMORY.",
    ),
    click.option(
        "--max-sessions",
        type=click.IntRange(min=1),
        metavar="N",
        help="Sessions served at once; a HELLO beyond them is refused (CUDA_ERROR_OUT_OF_MEMORY).",
    ),
    click.option(
        "--max-record",
        metavar="BYTES",
        help="Largest RPC call record accepted (e.g. 64M); a larger one closes its connection.",
    ),
    click.option(
        "--idle-timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Close a connection that sends nothing for this long (its session is freed).",
    ),
    click.option(
        "--max-in-flight",
        type=click.IntRange(min=1),
        metavar="N",
        help="Calls of one connection answered but not yet written, plus the one running; reading "
        "waits beyond them (back-pressure through TCP).",
    ),
    click.option(
        "--resume-grace",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Keep a session whose connection dropped this long, for a HELLO with its token "
        "(the client's reconnect); thread isolation.",
    ),
    click.option(
        "--checkpoint-root",
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="Checkpoint paths named by clients (cricket_client.checkpoint, cricket-checkpoint "
        "--server) must lie inside DIR (a relative one is taken from DIR; no symbolic link below "
        f"DIR is followed); DIR must be the server user's alone. Default: {default_checkpoint_root()} "
        "(created mode 0700 on demand).",
    ),
    click.option(
        "--spin-us",
        type=click.FloatRange(min=0, max=MAX_SPIN_US),
        metavar="N",
        help="Poll a connection's socket for up to N microseconds before each blocking receive "
        "(lower latency of small calls, one core busy meanwhile); 0: off. Default: 100 with "
        "--isolation process on 4 or more cores, else 0.",
    ),
    click.option(
        "--max-streams",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_STREAMS,
        show_default=True,
        metavar="N",
        help="Streams one session may hold at once; cuStreamCreate beyond gets "
        "CUDA_ERROR_OUT_OF_MEMORY.",
    ),
    click.option(
        "--max-events",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_EVENTS,
        show_default=True,
        metavar="N",
        help="Events one session may hold at once; cuEventCreate beyond gets "
        "CUDA_ERROR_OUT_OF_MEMORY.",
    ),
    click.option(
        "--max-modules",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_MODULES,
        show_default=True,
        metavar="N",
        help="Modules and libraries one session may hold loaded at once; a load beyond gets "
        "CUDA_ERROR_OUT_OF_MEMORY.",
    ),
    click.option(
        "--max-contexts",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_CONTEXTS,
        show_default=True,
        metavar="N",
        help="Contexts (cuCtxCreate) one session may hold at once; beyond: "
        "CUDA_ERROR_OUT_OF_MEMORY.",
    ),
    click.option(
        "--max-buffered",
        metavar="BYTES",
        default="1G",
        show_default=True,
        help="Bytes that incomplete large call records of all connections of a process may "
        "hold together; a connection whose record would go beyond is closed.",
    ),
    click.option(
        "--handshake-deadline",
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_HANDSHAKE_DEADLINE,
        show_default=True,
        metavar="SECONDS",
        help="With a token or TLS: close a connection that has not finished its setup "
        "(STARTTLS, token proof) within this time.",
    ),
    click.option(
        "--max-pending",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_PENDING,
        show_default=True,
        metavar="N",
        help="With a token or TLS: connections in their setup at once; a new one beyond them "
        "is closed at once.",
    ),
]


@dataclass(frozen=True)
class ServerOptions:
    """Every option of `server_options`, checked: how to build and run one server."""

    addresses: list[tuple[str, int]]
    unix_path: str | None
    backend: str
    register: bool
    log_level: str
    ready_file: str | None
    sim_bytes: int | None
    isolation: str
    spare_workers: int
    checkpoint_dir: str | None
    checkpoint_every: float | None
    limits: ServerLimits
    security: SecurityFiles
    spin_us: float | None
    sim_devices: int = 1


def server_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The one option set of a server command (`cricket-server`, `cricket-restart`): the
    command gets them checked, as one `options: ServerOptions` argument."""

    @functools.wraps(fn)
    def command(
        *args: Any,
        listen: tuple[str, ...],
        unix_path: str | None,
        backend: str,
        register: bool,
        log_level: str,
        ready_file: str | None,
        sim_memory: str | None,
        sim_devices: int,
        isolation: str,
        spare_workers: int,
        checkpoint_dir: str | None,
        checkpoint_every: float | None,
        security: SecurityFiles,
        max_session_memory: str | None,
        max_sessions: int | None,
        max_record: str | None,
        idle_timeout: float | None,
        max_in_flight: int | None,
        resume_grace: float | None,
        checkpoint_root: str | None,
        spin_us: float | None,
        max_streams: int,
        max_events: int,
        max_modules: int,
        max_contexts: int,
        max_buffered: str,
        handshake_deadline: float,
        max_pending: int,
        **kwargs: Any,
    ) -> Any:
        addresses = [parse_address(a) for a in listen]
        if not addresses and unix_path is None:
            addresses = [parse_address(DEFAULT_LISTEN)]
        if register and not addresses:
            raise click.UsageError("--register needs a TCP address (--listen)")
        if checkpoint_every is not None and checkpoint_dir is None:
            raise click.UsageError("--checkpoint-every needs --checkpoint-dir")
        limits = ServerLimits(
            max_session_memory=parse_size(max_session_memory) if max_session_memory else None,
            max_sessions=max_sessions,
            max_record=parse_size(max_record) if max_record else None,
            idle_timeout=idle_timeout,
            max_in_flight=max_in_flight,
            resume_grace=resume_grace,
            checkpoint_root=os.path.abspath(checkpoint_root) if checkpoint_root else None,
            max_streams=max_streams,
            max_events=max_events,
            max_modules=max_modules,
            max_contexts=max_contexts,
            max_buffered=parse_size(max_buffered),
            handshake_deadline=handshake_deadline,
            max_pending=max_pending,
        )
        options = ServerOptions(
            addresses=addresses,
            unix_path=unix_path,
            backend=backend,
            register=register,
            log_level=log_level.lower(),
            ready_file=ready_file,
            sim_bytes=parse_size(sim_memory) if sim_memory is not None else None,
            isolation=isolation,
            spare_workers=spare_workers,
            checkpoint_dir=checkpoint_dir,
            checkpoint_every=checkpoint_every,
            limits=limits,
            security=security,
            spin_us=spin_us,
            sim_devices=sim_devices,
        )
        return fn(*args, options=options, **kwargs)

    decorated = security_options(command)
    for option in reversed(_SERVER_OPTIONS):
        decorated = option(decorated)
    return decorated


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@server_options
def main(options: ServerOptions) -> None:
    """Serve remote CUDA driver calls (ONC RPC program CRICKET_PROG, version 1)."""
    run_server(options)


def run_server(options: ServerOptions, restore: Restore | None = None) -> None:
    """Build the server of `options` and serve until SIGTERM/SIGINT; with `restore`, bring
    its sessions back first (nothing is served when that fails)."""
    logging.basicConfig(
        level=options.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    limits = options.limits
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("%s: shutting down", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    admission = security_admission(options.security)
    if admission is not None:
        admission = dataclasses.replace(admission, deadline=limits.handshake_deadline)
    listeners = _Listeners(
        options.addresses, options.unix_path, options.register, options.ready_file, admission
    )
    mode, backend = resolve_isolation(options.isolation, options.backend)
    if options.isolation == "auto" and mode == "thread" and restore and restore.needs_workers():
        mode = "process"
    spin_us = options.spin_us if options.spin_us is not None else default_spin(mode)
    checkpoints = (options.checkpoint_dir, options.checkpoint_every)
    if mode == "process":
        if limits.resume_grace is not None:
            raise click.UsageError(
                "--resume-grace needs --isolation thread: a worker process ends with its "
                "connection"
            )
        spec = WorkerSpec(
            backend,
            options.sim_bytes,
            options.log_level,
            server_version(),
            max_session_memory=limits.max_session_memory,
            max_record=limits.max_record,
            idle_timeout=limits.idle_timeout,
            max_in_flight=limits.max_in_flight,
            checkpoint_root=limits.checkpoint_root,
            security=options.security,
            spin_us=spin_us,
            handshake_deadline=limits.handshake_deadline,
            max_streams=limits.max_streams,
            max_events=limits.max_events,
            max_modules=limits.max_modules,
            max_contexts=limits.max_contexts,
            max_buffered=limits.max_buffered,
            sim_devices=options.sim_devices,
        )
        pool = WorkerPool(spec, spares=options.spare_workers)
        _serve_in_workers(listeners, stop, pool, limits, checkpoints, restore)
    else:
        _serve_in_threads(
            listeners,
            stop,
            backend,
            options.sim_bytes,
            checkpoints,
            limits,
            spin_us,
            restore,
            sim_devices=options.sim_devices,
        )
    log.info("cricket-server stopped")


@dataclass(frozen=True)
class _Listeners:
    """Where to listen, what to announce once listening, and what each connection must do
    before its calls are served (TLS, a token: `--auth-token-file`, `--tls-*`)."""

    addresses: list[tuple[str, int]]
    unix_path: str | None
    register: bool
    ready_file: str | None
    admission: Admission | None = None


def resolve_isolation(isolation: str, backend: str) -> tuple[str, str]:
    """(mode, backend): `auto` isolation is process for cuda and thread for sim. With backend
    auto too, a child process looks for a GPU, so that this one never initializes CUDA."""
    if isolation != "auto":
        return isolation, backend
    if backend == "auto":
        backend = "cuda" if _gpu_answers_in_a_child() else "auto"
    return ("process" if backend == "cuda" else "thread"), backend


def default_spin(mode: str) -> float:
    """--spin-us when not given: `default_spin_us()` (100 on 4 or more cores) for process
    isolation, where a worker serves one connection; 0 for thread isolation."""
    return default_spin_us() if mode == "process" else 0.0


def _gpu_answers_in_a_child() -> bool:
    probe = "from cricket_server.backends.cuda import gpu_available as g; raise SystemExit(not g())"
    return subprocess.run([sys.executable, "-c", probe], check=False).returncode == 0


Checkpoints = tuple[str | None, float | None]  # --checkpoint-dir, --checkpoint-every
Unclaimed = tuple[float, Callable[[], int]]  # --resume-timeout, and what frees the unclaimed


def _serve_in_threads(
    listeners: _Listeners,
    stop: threading.Event,
    backend: str,
    sim_bytes: int | None,
    checkpoints: Checkpoints = (None, None),
    limits: ServerLimits | None = None,
    spin_us: float = 0.0,
    restore: Restore | None = None,
    *,
    sim_devices: int = 1,
) -> None:
    """Every connection served by a thread of this process, over one backend."""
    limits = limits or ServerLimits()
    the_backend = make_backend(backend, sim_memory=sim_bytes, sim_devices=sim_devices)
    try:
        arena = AddressArena(*the_backend.address_space())
        manager = SessionManager(
            the_backend, arena, server_version=server_version(), limits=limits
        )
        unclaimed = None
        if restore is not None:
            count = _restore_in_threads(manager, restore.directory)
            if restore.resume_timeout is not None:
                unclaimed = (restore.resume_timeout, partial(close_unclaimed, manager))
            what = f"{count} restored session(s), backend {the_backend.name}, isolation thread"
        else:
            what = f"backend {the_backend.name}, isolation thread"
        trigger = None
        directory, every = checkpoints
        if directory is not None:
            trigger = CheckpointTrigger(manager, directory, every).start()
            trigger.install_sigusr1()
        server = RpcServer([CricketService(manager)], **rpc_limits(limits))
        server.spin_us = spin_us
        server.max_pending = limits.max_pending
        try:
            _serve(server, listeners, stop, what, unclaimed)
        finally:
            _final_checkpoint(trigger)
            server.shutdown()
            manager.close_all("server shutdown")
    finally:
        the_backend.close()


def _restore_in_threads(manager: SessionManager, directory: str) -> int:
    """`restore_in_threads`, its warnings on stderr; a failure stops the server."""
    try:
        report = restore_in_threads(manager, directory)
    except CheckpointError as e:
        raise click.ClickException(str(e)) from None
    for note in report.moved_globals + report.warnings:
        click.echo(f"warning: {note}", err=True)
    return len(report.sessions)


def _serve_in_workers(
    listeners: _Listeners,
    stop: threading.Event,
    pool: WorkerPool,
    limits: ServerLimits | None = None,
    checkpoints: Checkpoints = (None, None),
    restore: Restore | None = None,
) -> None:
    """Every connection handed to a worker process of its own; see `cricket_server.workers`.
    With `restore`, one worker per restored session first (`checkpoints.restart`).

    A connection passes, in order: `AdmissionGate` (with a token or TLS), `RestoredRouter`
    (while restored sessions wait: a connection naming one goes to its worker), `SessionGate`
    (--max-sessions: resuming a restored session opens none), the pool's spare worker."""
    limits = limits or ServerLimits()
    gate = None
    admission_gate = None
    router = None
    trigger = None
    hand_off: Callable[..., None] = pool.hand_off
    unclaimed = None
    try:  # the whole checkpoint, before any worker starts
        checked = check_files(restore.directory) if restore is not None else None
    except CheckpointError as e:
        raise click.ClickException(str(e)) from None
    try:
        try:
            backend = pool.start()
            if restore is not None and checked is not None:
                count = restore_in_workers(pool, checked)
                if restore.resume_timeout is not None:
                    unclaimed = (restore.resume_timeout, pool.stop_unclaimed)
        except WorkerStartError as exc:
            raise click.ClickException(f"--isolation process: {exc}") from exc
        except CheckpointError as exc:
            raise click.ClickException(str(exc)) from None
        if limits.max_sessions is not None:
            gate = SessionGate(
                limits.max_sessions, pool.serving, hand_off, admission=listeners.admission
            )
            hand_off = gate.hand_off
        if restore is not None:
            router = RestoredRouter(pool, hand_off)
            hand_off = router.hand_off
        if listeners.admission is not None:  # workers only for connections that proved it
            admission_gate = AdmissionGate(
                listeners.admission, hand_off, max_pending=limits.max_pending,
                setup_busy=pool.in_setup,
            )  # fmt: skip
            hand_off = admission_gate.hand_off
        trigger = _worker_checkpoint_trigger(pool, *checkpoints)
        what = f"backend {backend}, isolation process"
        if restore is not None:
            what = f"{count} restored session(s), {what}"
        # This process serves no call itself; the program is declared for --register.
        server = RpcServer([proto.CRICKET_V1_Server()], hand_off=hand_off)
        try:
            _serve(server, listeners, stop, what, unclaimed)
        finally:
            server.shutdown()
    finally:
        if admission_gate is not None:
            admission_gate.close()
        if router is not None:
            router.close()
        if gate is not None:
            gate.close()
        _final_checkpoint(trigger)
        pool.close()


def _worker_checkpoint_trigger(
    pool: WorkerPool, directory: str | None, every: float | None
) -> CheckpointTrigger | None:
    """--checkpoint-dir under process isolation: SIGUSR1, periodic and final checkpoints of
    every worker's session (`cricket_server.checkpoints.workers`)."""
    if directory is None:
        return None
    trigger = CheckpointTrigger(None, directory, every, write=partial(checkpoint_workers, pool))
    trigger.start().install_sigusr1()
    return trigger


def _final_checkpoint(trigger: CheckpointTrigger | None) -> None:
    if trigger is not None:
        trigger.stop()
        log.info("final checkpoint into %s", trigger.directory)
        trigger.checkpoint_now()


def _serve(
    server: RpcServer,
    listeners: _Listeners,
    stop: threading.Event,
    what: str,
    unclaimed: Unclaimed | None = None,
) -> None:
    """Listen, announce, and wait for `stop`; `what` ends the log line ("backend sim, ...").
    `unclaimed`: after that many seconds, free the restored sessions nobody resumed."""
    unix_path, ready_file = listeners.unix_path, listeners.ready_file
    server.admission = listeners.admission  # a server handing connections off ignores it
    bound = [server.listen_tcp(host, port) for host, port in listeners.addresses]
    if unix_path is not None:
        server.listen_unix(unix_path)
    if listeners.register:
        server.register()
    server.start()
    where = [_format_address(h, p) for h, p in bound]
    if unix_path is not None:
        where.append(f"unix:{unix_path}")
    log.info(
        "cricket-server %s listening on %s (%s)",
        server_version(),
        ", ".join(where),
        what,
    )
    if ready_file is not None:
        write_ready_file(ready_file, where[0] + "\n")
    try:
        if unclaimed is not None and not stop.wait(unclaimed[0]):
            closed = unclaimed[1]()
            if closed:
                log.warning("freed %d restored session(s) no client resumed", closed)
        while not stop.wait(1.0):
            pass
    finally:
        if ready_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(ready_file)
