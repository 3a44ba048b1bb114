"""`cricket-restart --isolation process`: one worker process per restored session.

The main process never touches the device: it verifies the whole checkpoint first (every
checksum, in parallel), then starts one worker per session, each restoring that session
alone at its addresses (each worker reserves the backend's whole address range at the same
base, so every allocation can be had where it was). Only when every worker has restored its
session does the server listen; when one fails, every worker is stopped (their sessions
freed by their exit) and the restart fails naming the session and why: nothing half-made
is served. A HELLO carrying a session token is routed to the worker holding that session
(`cricket_server.workers.routing`); other connections go to spare workers as on
cricket-server.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from functools import partial
from types import FrameType

from .cli import ProgressBar, _fail, _rate, with_suppressed_unlink
from .format import CheckpointError
from .reader import Checkpoint, blob_refs
from .tokens import TokenDigest

log = logging.getLogger("cricket_restart")

RESTORE_LIMIT = 3600.0  # seconds the workers may take to restore their sessions


def restart_in_workers(
    directory: str,
    listen: str,
    backend: str,
    ready_file: str | None,
    sim_memory: str | None,
    log_level: str,
    checkpoints: tuple[str | None, float | None],
    resume_timeout: float | None,
) -> None:
    """See the module docstring; `checkpoints`: (--checkpoint-dir, --checkpoint-every)."""
    from cricket_server.checkpointing import CheckpointTrigger
    from cricket_server.cli import (
        _format_address,
        parse_address,
        parse_size,
        server_version,
        write_ready_file,
    )
    from cricket_server.workers import WorkerPool, WorkerSpec, WorkerStartError
    from cricket_server.workers.checkpoints import checkpoint_workers
    from cricket_server.workers.routing import RestoredRouter
    from cricket_xdr.rpc.server import RpcServer
    from rpc_spec import cricket_rpc as proto

    host, port = parse_address(listen)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    start = time.monotonic()
    try:
        ckpt = Checkpoint.open(directory)
        bar = ProgressBar(sum(ref.size for _what, ref in blob_refs(ckpt.manifest)), "verify")
        report = ckpt.verify(bar)
        bar.finish()
    except CheckpointError as e:
        _fail(e)
        return
    sessions = {s.session_id: TokenDigest.of_image(s) for s in ckpt.manifest.sessions}
    sim_bytes = parse_size(sim_memory) if sim_memory else None
    pool = WorkerPool(WorkerSpec(backend, sim_bytes, log_level.lower(), server_version()))
    trigger = None
    try:
        try:
            pool.start()
            pool.start_restored(str(ckpt.path.absolute()), sessions, RESTORE_LIMIT)
        except WorkerStartError as e:
            _fail(CheckpointError(ckpt.path, f"restore failed: {e}"))
            return
        log.info("restored %d session(s) from %s in %d worker(s): %s", len(sessions), directory,
                 len(sessions), _rate(report.bytes, time.monotonic() - start))  # fmt: skip
        directory_out, every = checkpoints
        if directory_out is not None:
            write = partial(checkpoint_workers, pool)
            trigger = CheckpointTrigger(None, directory_out, every, write=write).start()
            trigger.install_sigusr1()
        server = RpcServer([proto.CRICKET_V1_Server()], hand_off=RestoredRouter(pool).hand_off)
        try:
            bound_host, bound_port = server.listen_tcp(host, port)
            server.start()
            where = _format_address(bound_host, bound_port)
            log.info("cricket-restart serving %d session(s) on %s (isolation process)",
                     len(sessions), where)  # fmt: skip
            if ready_file:
                write_ready_file(ready_file, where + "\n")
            if resume_timeout is not None and not stop.wait(resume_timeout):
                closed = pool.stop_unclaimed()
                if closed:
                    log.warning("freed %d restored session(s) no client resumed", closed)
            while not stop.wait(1.0):
                pass
        finally:
            if trigger is not None:
                trigger.stop()
            server.shutdown()
            if ready_file:
                with_suppressed_unlink(ready_file)
    finally:
        pool.close()
