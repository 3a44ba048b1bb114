"""A worker process: serves one client's session with a backend of its own, then exits.

    python -m cricket_server.workers.child --control-fd 5 --parent-pid 1234 --backend cuda

Started by `WorkerPool` (never by hand). It warms up first (imports, backend: cuInit and the
VA reservation on `cuda`), says `ready`, then waits for the one connection the main process
passes it. It exits, status 0, when that connection ends (the client's GOODBYE or disconnect),
on SIGTERM (sessions freed first), or when the main process goes away. SIGINT is left to the
main process, which stops the workers itself.

A worker of cricket-restart (`--restore`) holds a restored session and waits for its client.
The main process routes to it every connection that names the session (a HELLO with its
token, or a resume hint before TLS, which proves nothing), so it serves each such connection
until one takes the session with the HELLO of its token: one that fails its setup or the
HELLO, or holds no session `handshake_deadline` seconds after it came, is closed and the
session goes on waiting. At most `MAX_VISITORS` such connections are served at once (a new
one beyond is closed; a resuming client tries again). Such a worker opens no new session.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import socket
import threading
import time
from types import FrameType

from cricket_server.auth import SecurityError, SecurityFiles
from cricket_server.backends import BACKEND_NAMES, make_backend
from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, Backend, CudaError
from cricket_server.checkpoints.workers import ForwardedCalls, answer_part_request
from cricket_server.limits import ServerLimits, rpc_limits
from cricket_server.memory import AddressArena
from cricket_server.session import Session, SessionManager
from cricket_xdr.rpc.dispatch import ConnectionInfo
from cricket_xdr.rpc.server import RpcServer

from .control import ControlChannel, die_with_parent
from .service import WorkerService

log = logging.getLogger("cricket_server.workers")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [worker %(process)d]: %(message)s"
VA_SLOT = 4 << 30  # bytes between the address ranges of consecutive workers
MAX_VISITORS = 16  # connections a restored session's worker serves at once while it waits


class WorkerSessionManager(SessionManager):
    """A `SessionManager` that tells the main process about each session it opens."""

    def __init__(
        self,
        backend: Backend,
        arena: AddressArena,
        *,
        server_version: str,
        channel: ControlChannel,
        limits: ServerLimits | None = None,
    ) -> None:
        super().__init__(backend, arena, server_version=server_version, limits=limits)
        self.channel = channel
        self.restored = False  # holds a restored session (cricket-restart): opens no other

    def open(self, peer: str, client_name: str) -> Session:
        if self.restored:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                "HELLO: this worker holds a restored session; a new session needs a new "
                "connection without a resume hint",
            )
        session = super().open(peer, client_name)
        try:
            self.channel.send("session", f"{session.id:#x}", peer)
        except OSError as exc:
            log.warning("could not tell the main process about session %#x: %s", session.id, exc)
        return session

    def resume(self, token: bytes) -> Session:
        session = super().resume(token)
        try:  # the main process routes no further connection here
            self.channel.send("resumed", f"{session.id:#x}")
        except OSError as exc:
            log.warning("could not tell the main process session %#x is resumed: %s",
                        session.id, exc)  # fmt: skip
        return session


def worker_arena(backend: Backend, slot: int) -> AddressArena:
    """The backend's client address range, starting `slot` (modulo what fits) times VA_SLOT
    further in, so that consecutive workers hand out different pointers (a pointer of another
    session stays CUDA_ERROR_NOT_FOUND, as with one shared arena). What remains is still at
    least the devices' total memory; slot 0 gives the whole range."""
    base, size, granularity = backend.address_space()
    memory = sum(backend.device_total_mem(dev) for dev in range(backend.device_count()))
    slots = max(1, (size - memory) // VA_SLOT) if VA_SLOT % granularity == 0 else 1
    offset = (slot % slots) * VA_SLOT
    return AddressArena(base + offset, size - offset, granularity)


class Worker:
    """The warmed state of a worker and the serving of its one connection."""

    def __init__(
        self,
        backend: Backend,
        channel: ControlChannel,
        server_version: str,
        va_slot: int = 0,
        limits: ServerLimits | None = None,
    ) -> None:
        limits = limits or ServerLimits()
        self.backend = backend
        self.channel = channel
        self.manager = WorkerSessionManager(
            backend,
            worker_arena(backend, va_slot),
            server_version=server_version,
            channel=channel,
            limits=limits,
        )
        self.service = WorkerService(self.manager)
        self.service.forwarded = ForwardedCalls(channel)
        self.server = RpcServer([self.service], **rpc_limits(limits))
        self.server.on_admitted = self._admitted
        self.done = threading.Event()
        self.serving = False
        self.visitor_limit = limits.handshake_deadline  # seconds to take a restored session
        self._lock = threading.RLock()
        self._in_setup: set[int] = set()  # connections whose setup (TLS, token) is not done
        self._visitors: dict[int, tuple[ConnectionInfo, float]] = {}  # restored: since when

    def listen_to_main(self) -> None:
        """Control channel loop (own thread): take the connection; EOF ends the worker."""
        try:
            while True:
                message = self.channel.receive()
                if message is None:
                    if not self.done.is_set():
                        log.info("the main process is gone: shutting down")
                    break
                fields, fds = message
                self._take(fields, fds)
        except OSError as exc:
            if not self.done.is_set():
                log.warning("control channel: %s: shutting down", exc)
        finally:
            if self.service.forwarded is not None:
                self.service.forwarded.main_gone()
            self.done.set()

    def _take(self, fields: list[str], fds: list[int]) -> None:
        if not fds and self._checkpoint_message(fields):
            return
        if fields not in (["serve"], ["serve-admitted"]) or len(fds) != 1:
            log.error(
                "control channel: unexpected message %r with %d descriptors", fields, len(fds)
            )
            for fd in fds:
                socket.socket(fileno=fd).close()
            return
        sock = socket.socket(fileno=fds[0])
        admitted = fields == ["serve-admitted"]
        with self._lock:
            refusal = self._refusal()
            if refusal:
                log.warning("connection refused: %s", refusal)
                sock.close()
                if not admitted:
                    self._tell("setup-failed")
                return
            self.serving = True
            info = self.server.adopt(sock, admitted=admitted)
            if info is None:
                if not admitted:
                    self._tell("setup-failed")
                if not self.manager.restored:
                    self.done.set()
                return
            if not admitted:
                self._in_setup.add(info.id)
            if self.manager.restored:
                self._visitors[info.id] = (info, time.monotonic())
            log.debug("serving connection from %r", info.peer)
            info.add_close_callback(lambda: self._connection_ended(info))

    def _refusal(self) -> str:
        """Why a further connection is not served now; "" when it is."""
        if not self.serving:
            return ""
        if not self._waiting():
            return "this worker serves its session's connection already"
        if len(self._visitors) >= MAX_VISITORS:
            return (f"{MAX_VISITORS} connections are trying to take the restored session "
                    "already")  # fmt: skip
        return ""

    def _waiting(self) -> bool:
        """Whether this worker holds a restored session that no connection has taken yet."""
        return self.manager.restored and any(
            s.resumable and not s.closed for s in self.manager.sessions()
        )

    def _tell(self, *fields: str) -> None:
        try:
            self.channel.send(*fields)
        except OSError as exc:
            log.warning("could not tell the main process %r: %s", " ".join(fields), exc)

    def _admitted(self, info: ConnectionInfo) -> None:
        """A connection's setup is done: the main process counts connections in setup."""
        with self._lock:
            if info.id not in self._in_setup:
                return
            self._in_setup.discard(info.id)
        self._tell("admitted")

    def sweep(self) -> None:
        """Close the connections of a restored session's worker that have not taken the
        session `visitor_limit` seconds after they came (the worker's main loop calls it)."""
        now = time.monotonic()
        with self._lock:
            late = [
                info
                for info, since in self._visitors.values()
                if now - since > self.visitor_limit and not self._holds_session(info)
            ]
        for info in late:
            log.info("%r took no session within %g s; closing it", info, self.visitor_limit)
            info.close()

    def _holds_session(self, info: ConnectionInfo) -> bool:
        return any(
            s.connection_id == info.id and not s.resumable for s in self.manager.sessions()
        )

    def _checkpoint_message(self, fields: list[str]) -> bool:
        """`checkpoint RID TMP` (write this worker's part, in a thread of its own) and
        `checkpoint-server-result ...`; False for any other message."""
        if fields[0] == "checkpoint" and len(fields) == 3:
            threading.Thread(
                target=answer_part_request,
                args=(self.manager, self.channel, fields[1], fields[2]),
                name="checkpoint-part",
                daemon=True,
            ).start()
            return True
        if fields[0] == "checkpoint-server-result" and len(fields) >= 3:
            if self.service.forwarded is not None:
                self.service.forwarded.answer(fields)
            return True
        return False

    def restore(self, path: str, session_id: int) -> bool:
        """Bring back one session of a checkpoint (cricket-restart, process isolation); on
        failure say why on the control channel (`restore-failed`) and return False."""
        from checkpoint.format import CheckpointError
        from cricket_server.checkpoints.sessions import restore_checkpoint

        try:
            report = restore_checkpoint(self.manager, path, only={session_id})
        except CheckpointError as exc:
            log.error("restore of session %#x failed: %s", session_id, exc)
            self.channel.send("restore-failed", str(exc).replace("\n", " ")[:3000])
            return False
        for note in report.moved_globals + report.warnings:
            log.warning("restore: %s", note)
        self.manager.restored = True
        for session in report.sessions:
            self.channel.send("session", f"{session.id:#x}", session.peer)
        log.info("restored session %#x from %s (%d bytes)", session_id, path, report.bytes)
        return True

    def _connection_ended(self, info: ConnectionInfo) -> None:
        """A connection ended: so does the worker, unless it holds a restored session that
        this connection did not take (that session waits on, or goes on elsewhere)."""
        with self._lock:
            self._visitors.pop(info.id, None)
            failed = info.id in self._in_setup
            self._in_setup.discard(info.id)
            sessions = self.manager.sessions()
            keep = (
                self.manager.restored
                and bool(sessions)
                and all(s.resumable or s.connection_id != info.id for s in sessions)
            )
        if failed:
            self._tell("setup-failed")
        if keep:
            log.info("%r ended without taking the restored session; it waits on", info)
            return
        self.manager.close_all("connection closed")
        self.done.set()

    def close(self) -> None:
        """Free every session, close the connection, then the backend."""
        self.manager.close_all("server shutdown")
        self.server.shutdown()
        try:
            self.backend.close()
        except Exception:
            log.exception("closing the %s backend", self.backend.name)
        self.channel.close()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cricket_server.workers.child")
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--backend", choices=BACKEND_NAMES, default="auto")
    parser.add_argument("--sim-memory", type=int)
    parser.add_argument("--sim-devices", type=int, default=1)
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--server-version", default="0.0.0")
    parser.add_argument("--va-slot", type=int, default=0)
    for option in ("--auth-token-file", "--tls-cert", "--tls-key", "--tls-client-ca"):
        parser.add_argument(option)
    parser.add_argument("--restore", metavar="DIR", help="restore a session of this checkpoint")
    parser.add_argument("--restore-session", type=lambda t: int(t, 0), default=0)
    parser.add_argument("--max-session-memory", type=int)
    parser.add_argument("--max-record", type=int)
    parser.add_argument("--idle-timeout", type=float)
    parser.add_argument("--max-in-flight", type=int)
    parser.add_argument("--checkpoint-root")
    parser.add_argument("--spin-us", type=float, default=0.0)
    parser.add_argument("--handshake-deadline", type=float)
    for option in ("--max-streams", "--max-events", "--max-modules", "--max-contexts"):
        parser.add_argument(option, type=int)
    parser.add_argument("--max-buffered", type=int)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT)
    channel = ControlChannel.from_fd(args.control_fd)
    stop = threading.Event()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not die_with_parent(args.parent_pid):
        log.info("the main process is gone before this worker started")
        return 0
    try:
        backend = make_backend(
            args.backend, sim_memory=args.sim_memory, sim_devices=args.sim_devices
        )
    except Exception as exc:
        log.error("could not create the %s backend: %s", args.backend, exc)
        return 1
    given = {
        name: getattr(args, name)
        for name in ("max_streams", "max_events", "max_modules", "max_contexts", "max_buffered")
        if getattr(args, name) is not None
    }
    if args.handshake_deadline is not None:
        given["handshake_deadline"] = args.handshake_deadline
    limits = ServerLimits(
        max_session_memory=args.max_session_memory,
        max_record=args.max_record,
        idle_timeout=args.idle_timeout,
        max_in_flight=args.max_in_flight,
        checkpoint_root=args.checkpoint_root,
        **given,
    )
    files = SecurityFiles(args.auth_token_file, args.tls_cert, args.tls_key, args.tls_client_ca)
    try:
        admission = files.admission()  # the worker runs its connection's TLS and token setup
    except SecurityError as exc:
        log.error("%s", exc)
        backend.close()
        return 1
    worker = Worker(backend, channel, args.server_version, args.va_slot, limits)
    admission = dataclasses.replace(admission, deadline=limits.handshake_deadline)
    worker.server.admission = admission if admission.required else None
    worker.server.spin_us = args.spin_us
    try:
        if stop.is_set():
            return 0
        threading.Thread(target=worker.listen_to_main, name="control", daemon=True).start()
        if args.restore and not worker.restore(args.restore, args.restore_session):
            return 1
        channel.send("ready", backend.name)
        while not (stop.is_set() or worker.done.wait(0.5)):
            worker.sweep()
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
