"""`WorkerPool`: the main process's side of process isolation (see the package docstring).

One supervisor thread starts workers, reads their control channels and reaps them; it keeps
`spares` spare workers (started, warming or warm; one by default) while the pool is open. `hand_off` (the RPC
server's accept thread) gives an accepted socket to the spare and wakes the supervisor, which
starts the next one. A worker that dies before it is ready delays the next start (doubling,
up to 30 s), so a broken backend does not make the server spin.
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from checkpoint.tokens import TokenDigest
from cricket_server.auth import SecurityFiles
from cricket_server.checkpoints.workers import PartRequests, checkpoint_result_fields
from cricket_server.service import format_peer
from cricket_xdr.rpc.spin import default_spin_us

from .control import ControlChannel

log = logging.getLogger("cricket_server.workers")

START_LIMIT = 120.0  # seconds a worker may take to get ready (cuInit on a busy node)
HAND_OFF_ATTEMPTS = 3
MAX_RESTART_DELAY = 30.0


class WorkerStartError(RuntimeError):
    """No worker got ready (the backend could not be created there)."""


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker is started with."""

    backend: str
    sim_memory: int | None = None
    log_level: str = "info"
    server_version: str = "0.0.0"
    security: SecurityFiles = SecurityFiles()  # token and TLS files: each worker reads them
    max_session_memory: int | None = None  # --max-session-memory
    max_record: int | None = None  # --max-record
    idle_timeout: float | None = None  # --idle-timeout
    max_in_flight: int | None = None  # --max-in-flight
    checkpoint_root: str | None = None  # --checkpoint-root
    handshake_deadline: float | None = None  # --handshake-deadline
    max_streams: int | None = None  # --max-streams (None: the default)
    max_events: int | None = None  # --max-events
    max_modules: int | None = None  # --max-modules
    max_contexts: int | None = None  # --max-contexts
    max_buffered: int | None = None  # --max-buffered
    spin_us: float = field(default_factory=default_spin_us)  # --spin-us
    sim_devices: int = 1  # --sim-devices

    def command(self, control_fd: int, va_slot: int) -> list[str]:
        cmd = [
            sys.executable, "-m", "cricket_server.workers.child",
            "--control-fd", str(control_fd), "--parent-pid", str(os.getpid()),
            "--backend", self.backend, "--log-level", self.log_level,
            "--server-version", self.server_version, "--va-slot", str(va_slot),
        ]  # fmt: skip
        if self.sim_memory is not None:
            cmd += ["--sim-memory", str(self.sim_memory)]
        if self.sim_devices != 1:
            cmd += ["--sim-devices", str(self.sim_devices)]
        cmd += self.security.worker_args()
        for option, value in (
            ("--max-session-memory", self.max_session_memory),
            ("--max-record", self.max_record),
            ("--idle-timeout", self.idle_timeout),
            ("--max-in-flight", self.max_in_flight),
            ("--checkpoint-root", self.checkpoint_root),
            ("--handshake-deadline", self.handshake_deadline),
            ("--max-streams", self.max_streams),
            ("--max-events", self.max_events),
            ("--max-modules", self.max_modules),
            ("--max-contexts", self.max_contexts),
            ("--max-buffered", self.max_buffered),
            ("--spin-us", self.spin_us or None),
        ):
            if value is not None:
                cmd += [option, str(value)]
        return cmd


@dataclass(eq=False)
class _Worker:
    process: subprocess.Popen[bytes]
    channel: ControlChannel
    backend: str = ""  # set when the worker says it is ready
    peer: str | None = None  # the connection it serves, once handed one
    sessions: list[str] = field(default_factory=list)
    error: str | None = None  # why it could not restore its session (cricket-restart)
    in_setup: int = 0  # connections handed to it whose setup (TLS, token) is not done yet

    @property
    def pid(self) -> int:
        return self.process.pid


def describe_status(returncode: int) -> str:
    """'exit status 0', 'killed by SIGKILL'."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name}"
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class WorkerPool:
    """Worker processes of one server; see the module docstring.

    `spares`: workers kept started and waiting for a connection (more absorb bursts of new
    connections; each holds a backend). `grace`: seconds workers get to free their sessions
    after SIGTERM before SIGKILL."""

    def __init__(self, spec: WorkerSpec, *, spares: int = 1, grace: float = 20.0) -> None:
        if spares < 1:
            raise ValueError(f"WorkerPool: spares must be at least 1, got {spares}")
        self.spec = spec
        self.spares = spares
        self.grace = grace
        self._cond = threading.Condition()
        self._workers: dict[int, _Worker] = {}
        self._spares: list[_Worker] = []  # oldest first
        self._closing = False
        self._failures = 0  # workers in a row that died before they were ready
        self._next_start = 0.0
        self._va_slots = itertools.count()
        self._backend: str | None = None
        self._start_error: str | None = None
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(
            target=self._supervise, name="worker-supervisor", daemon=True
        )
        self.parts = PartRequests()  # checkpoint requests (cricket_server.checkpoints.workers)
        self._restored: dict[TokenDigest, _Worker] = {}  # its token's digest -> worker holding it

    # -- the main process's API ------------------------------------------------------------
    def start(self, timeout: float = START_LIMIT) -> str:
        """Start the first spare and wait until it is ready; the backend's name it reports."""
        self._thread.start()
        with self._cond:
            self._cond.wait_for(
                lambda: self._backend is not None or self._start_error is not None, timeout
            )
            backend, error = self._backend, self._start_error
        if backend is None:
            self.close()
            raise WorkerStartError(error or f"no worker got ready within {timeout:.0f} s")
        return backend

    def hand_off(self, sock: socket.socket, peer: object, admitted: bool = False) -> None:
        """Give an accepted connection to the spare worker (`RpcServer`'s `hand_off`);
        `admitted`: its setup was done here (`gate.AdmissionGate`), the worker skips it."""
        who = format_peer(peer)
        try:
            for _ in range(HAND_OFF_ATTEMPTS):
                worker = self._take_spare()
                if worker is None:
                    break
                worker.peer = who
                worker.in_setup = 0 if admitted else 1
                try:
                    worker.channel.send_socket(sock, "serve-admitted" if admitted else "serve")
                except OSError as exc:
                    worker.peer = None
                    worker.in_setup = 0
                    log.warning("worker %d did not take the connection from %s: %s",
                                worker.pid, who, exc)  # fmt: skip
                    continue
                log.info("connection from %s handed to worker %d", who, worker.pid)
                return
            log.error("no worker took the connection from %s; closing it", who)
        finally:
            sock.close()

    def in_setup(self) -> int:
        """Connections handed to workers that have not finished their setup yet
        (`AdmissionGate`)."""
        with self._cond:
            return sum(w.in_setup for w in self._workers.values())

    def serving(self) -> int:
        """Workers handed a connection and not yet reaped (each holds one session)."""
        with self._cond:
            return len(self._workers) - len(self._spares)

    def close(self) -> None:
        """SIGTERM every worker (they free their sessions), SIGKILL what outlives `grace`."""
        with self._cond:
            self._closing = True
            workers = list(self._workers.values())
            self._cond.notify_all()
        for worker in workers:
            self._signal(worker, signal.SIGTERM)
        self._wake()
        if self._thread.is_alive():
            self._thread.join(self.grace)
        if self._thread.is_alive():
            for worker in self._live():
                log.warning("worker %d still runs %.0f s after SIGTERM: SIGKILL", worker.pid,
                            self.grace)  # fmt: skip
                self._signal(worker, signal.SIGKILL)
            self._thread.join()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- hand-off helpers ------------------------------------------------------------------
    def _take_spare(self) -> _Worker | None:
        with self._cond:
            self._cond.wait_for(lambda: bool(self._spares) or self._closing, START_LIMIT)
            ready = [w for w in self._spares if w.backend]
            worker = ready[0] if ready else self._spares[0] if self._spares else None
            if worker is not None:
                self._spares.remove(worker)
        self._wake()  # the supervisor starts the next spare
        return None if self._closing else worker

    def _live(self) -> list[_Worker]:
        with self._cond:
            return list(self._workers.values())

    @staticmethod
    def _signal(worker: _Worker, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            worker.process.send_signal(sig)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    # -- the supervisor thread -------------------------------------------------------------
    def _supervise(self) -> None:
        try:
            while True:
                with self._cond:
                    if self._closing and not self._workers:
                        return
                    missing = 0 if self._closing else self.spares - len(self._spares)
                delay = 1.0
                if missing > 0:
                    delay = self._next_start - time.monotonic()
                    if delay <= 0:
                        for _ in range(missing):
                            if self._start_worker() is None:
                                break
                        delay = 1.0
                for key, _ in self._selector.select(min(delay, 1.0)):
                    if key.data is None:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                    else:
                        self._on_message(key.data)
        except Exception:
            log.exception("the worker supervisor failed; stopping every worker")
            for worker in self._live():
                self._signal(worker, signal.SIGKILL)
                worker.process.wait()
            with self._cond:
                self._closing = True  # connections are refused from now on
                self._start_error = self._start_error or "the worker supervisor failed"
                self._cond.notify_all()

    def _start_worker(self, extra: list[str] | None = None) -> _Worker | None:
        """Start a spare worker, or (`extra`: a restore's arguments) one that is no spare."""
        channel, theirs = ControlChannel.pair()
        try:
            process = subprocess.Popen(
                self.spec.command(theirs.fileno(), next(self._va_slots)) + (extra or []),
                pass_fds=[theirs.fileno()],
            )
        except OSError as exc:
            channel.close()
            log.error("could not start a worker: %s", exc)
            self._count_failure(f"could not start a worker: {exc}")
            return None
        finally:
            theirs.close()
        worker = _Worker(process, channel)
        self._selector.register(channel.sock, selectors.EVENT_READ, worker)
        with self._cond:
            self._workers[worker.pid] = worker
            if extra is None:
                self._spares.append(worker)
            closing = self._closing
            self._cond.notify_all()
        if closing:
            self._signal(worker, signal.SIGTERM)
        log.debug("worker %d started", worker.pid)
        return worker

    def _on_message(self, worker: _Worker) -> None:
        try:
            message = worker.channel.receive()
        except OSError:
            message = None
        if message is None:
            self._reap(worker)
            return
        fields, fds = message
        for fd in fds:
            os.close(fd)
        if fields[0] == "ready" and len(fields) == 2:
            with self._cond:
                worker.backend = fields[1]
                self._failures = 0
                if self._backend is None:
                    self._backend = worker.backend
                role = "spare" if worker in self._spares else f"serving {worker.peer}"
                self._cond.notify_all()
            log.info("worker %d ready (backend %s, %s)", worker.pid, worker.backend, role)
        elif fields in (["admitted"], ["setup-failed"]):
            with self._cond:
                worker.in_setup = max(0, worker.in_setup - 1)
        elif fields[0] == "resumed" and len(fields) == 2:
            with self._cond:
                self._forget_restored(worker)
            log.info("worker %d: restored session %s resumed by %s", worker.pid, fields[1],
                     worker.peer)  # fmt: skip
        elif fields[0] == "session" and len(fields) >= 2:
            worker.sessions.append(fields[1])
        elif not self._on_checkpoint_message(worker, fields):
            log.warning("worker %d sent an unknown message %r", worker.pid, " ".join(fields))

    def _reap(self, worker: _Worker) -> None:
        self._selector.unregister(worker.channel.sock)
        worker.channel.close()
        self.parts.gone(worker)
        try:
            status = worker.process.wait(self.grace)
        except subprocess.TimeoutExpired:
            log.warning("worker %d closed its control channel but did not exit: SIGKILL",
                        worker.pid)  # fmt: skip
            worker.process.kill()
            status = worker.process.wait()
        with self._cond:
            del self._workers[worker.pid]
            if worker in self._spares:
                self._spares.remove(worker)
            self._forget_restored(worker)
            self._cond.notify_all()
        log.info(
            "worker %d ended (%s): session %s, peer %s",
            worker.pid,
            describe_status(status),
            ", ".join(worker.sessions) or "none",
            worker.peer or "none",
        )
        if not worker.backend:
            self._count_failure(f"worker {worker.pid} ended ({describe_status(status)}) "
                                "before it was ready; see its log lines")  # fmt: skip

    def _count_failure(self, why: str) -> None:
        with self._cond:
            self._failures += 1
            self._next_start = time.monotonic() + min(MAX_RESTART_DELAY, 0.5 * 2**self._failures)
            if self._backend is None:
                self._start_error = why
            self._cond.notify_all()

    # -- checkpoints and restored sessions (cricket_server.checkpoints.workers) --------------
    @property
    def backend_name(self) -> str:
        return self._backend or self.spec.backend

    def holding_sessions(self) -> list[_Worker]:
        """Live workers that hold a session or serve a connection: a worker's word of a new
        session may still be on its way (it is read on the pool's own time), and a worker
        asked for its part names the sessions it holds itself."""
        with self._cond:
            return [w for w in self._workers.values() if w.sessions or w.peer is not None]

    def _on_checkpoint_message(self, worker: _Worker, fields: list[str]) -> bool:
        """Checkpoint messages of a worker; False for anything else."""
        if self.parts.take(worker, fields):
            return True
        if fields[0] == "checkpoint-server" and len(fields) == 4:
            threading.Thread(
                target=self._forwarded_checkpoint, args=(worker, fields), daemon=True
            ).start()
            return True
        if fields[0] == "restore-failed":
            worker.error = " ".join(fields[1:])
            return True
        return False

    def _forwarded_checkpoint(self, worker: _Worker, fields: list[str]) -> None:
        from cricket_server.checkpoints.workers import decode_path

        rid, session, path = fields[1], int(fields[2], 16), str(decode_path(fields[3]))
        answer = checkpoint_result_fields(self, path, session)
        with contextlib.suppress(OSError):
            worker.channel.send("checkpoint-server-result", rid, *answer)

    def start_restored(self, path: str, sessions: dict[int, TokenDigest], timeout: float) -> None:
        """Start one worker per restored session (id -> its token's digest) of the checkpoint
        at `path`; wait until every one has restored its session. On any failure every one
        of them is stopped and WorkerStartError names the session and why."""
        started: list[_Worker] = []
        for sid, digest in sessions.items():
            extra = ["--restore", path, "--restore-session", f"{sid:#x}", "--va-slot", "0"]
            worker = self._start_worker(extra)
            if worker is None:
                self._stop_all(started)
                raise WorkerStartError(f"could not start a worker for session {sid:#x}")
            started.append(worker)
            with self._cond:
                self._restored[digest] = worker
        deadline = time.monotonic() + timeout
        with self._cond:
            self._cond.wait_for(
                lambda: all(w.backend or w.pid not in self._workers for w in started),
                max(0.0, deadline - time.monotonic()),
            )
            failed = [w for w in started if not w.backend]
        if failed:
            self._stop_all(started)
            w = failed[0]
            raise WorkerStartError(w.error or f"worker {w.pid} did not restore its session")

    def waiting_restored(self) -> bool:
        """Whether restored sessions still wait for their clients."""
        with self._cond:
            return bool(self._restored)

    def hand_off_restored(
        self,
        sock: socket.socket,
        peer: object,
        admitted: bool = False,
        *,
        token: bytes = b"",
        hint: bytes = b"",
    ) -> bool:
        """Give `sock` to the worker holding the restored session of `token` (a HELLO's) or
        of `hint` (a resume hint, `cricket_xdr.rpc.auth.resume_hint`); False when no worker
        waits for it (the caller hands the socket on as usual). `admitted`: its setup was
        done here (`gate.AdmissionGate`), the worker skips it.

        The worker stays reachable until it says its session is taken (`resumed`): a
        connection that names the session but fails the setup or the HELLO's token check
        leaves it waiting for its client (`child.Worker` serves every connection it is
        given while its session waits)."""
        with self._cond:
            worker = next(
                (
                    w
                    for d, w in self._restored.items()
                    if (hint and hmac.compare_digest(d.hint, hint)) or (token and d.matches(token))
                ),
                None,
            )
            if worker is None:
                return False
            if not admitted:
                worker.in_setup += 1
        who = format_peer(peer)
        try:
            worker.channel.send_socket(sock, "serve-admitted" if admitted else "serve")
        except OSError as exc:
            with self._cond:
                worker.in_setup = max(0, worker.in_setup - (not admitted))
            log.warning("worker %d (restored) did not take the connection: %s", worker.pid, exc)
            return False
        worker.peer = who
        log.info("connection from %s handed to worker %d (restored session %s)", who,
                 worker.pid, ", ".join(worker.sessions))  # fmt: skip
        sock.close()
        return True

    def stop_unclaimed(self) -> int:
        """SIGTERM the restored workers no client has resumed; how many."""
        with self._cond:
            workers = list(self._restored.values())
            self._restored.clear()
        for w in workers:
            self._signal(w, signal.SIGTERM)
        return len(workers)

    def _stop_all(self, workers: list[_Worker]) -> None:
        for w in workers:
            self._signal(w, signal.SIGKILL)
        with self._cond:
            self._cond.wait_for(lambda: all(w.pid not in self._workers for w in workers), 30)

    def _forget_restored(self, worker: _Worker) -> None:
        for digest in [d for d, w in self._restored.items() if w is worker]:
            del self._restored[digest]
