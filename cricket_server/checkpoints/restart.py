"""Bringing a checkpoint's sessions back before a server listens (`cricket-restart`).

- Thread isolation: `restore_in_threads(manager, directory)` restores every session into
  the server's one `SessionManager` (`sessions.restore_checkpoint`: everything is verified
  first; on any failure nothing made is kept).
- Process isolation: `check_files(directory)` checks the manifest and that every blob file
  is there at its size in the main process (which never touches the device; no blob is
  read) before any worker starts; `restore_in_workers(pool, checked)` then starts one worker
  per session, each restoring that session alone at its addresses, reading each of its
  blobs once and checking every piece as it reads it (`sessions.restore_checkpoint`). Only
  when every worker has its session, every piece of every blob checked, does the server
  listen; when one fails (a damaged piece), every one of them is stopped and nothing is
  served. A connection that names a restored session (a HELLO with its token,
  or over TLS the resume hint sent before STARTTLS) then goes to its worker
  (`cricket_server.workers.routing`); other connections go to spare workers.

Each raises `CheckpointError` naming the checkpoint and why; the server then does not start.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from checkpoint.cli import ProgressBar
from checkpoint.cli import _rate as rate
from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint, blob_refs
from checkpoint.tokens import TokenDigest
from cricket_server.checkpoints.sessions import (
    RestoreReport,
    restore_checkpoint,
    restore_total_bytes,
    sessions_conflict,
)
from cricket_server.session import SessionManager
from cricket_server.workers import WorkerPool, WorkerStartError

log = logging.getLogger("cricket_server")

RESTORE_LIMIT = 3600.0  # seconds the workers of a restart may take to restore their sessions


@dataclass(frozen=True)
class Restore:
    """Sessions to bring back from the checkpoint in `directory` before listening
    (`cricket-restart`); `resume_timeout`: free those no client resumed after this long."""

    directory: str
    resume_timeout: float | None = None

    def needs_workers(self) -> bool:
        """Whether its sessions cannot share one process (they came from workers of a
        process-isolated server and share handle values or addresses)."""
        try:
            images = Checkpoint.open(self.directory).manifest.sessions
        except CheckpointError:
            return False  # the restore itself reports what is wrong
        return sessions_conflict(images) is not None


def restore_in_threads(manager: SessionManager, directory: str) -> RestoreReport:
    """Restore every session of the checkpoint into `manager` (a progress bar on stderr)."""
    bar = ProgressBar(restore_total_bytes(directory), "restore")
    report = restore_checkpoint(manager, directory, progress=bar)
    bar.finish()
    log.info("restored %d session(s) from %s: %s", len(report.sessions), directory,
             rate(report.bytes, report.seconds))  # fmt: skip
    return report


@dataclass(frozen=True)
class Checked:
    """A checkpoint whose manifest and blob files were checked, before any worker starts."""

    checkpoint: Checkpoint
    bytes: int
    started: float  # time.monotonic() when the check began


def check_files(directory: str) -> Checked:
    """Check the manifest of the checkpoint in `directory` and that every blob file is
    there at its size; the workers check the pieces as they read them."""
    start = time.monotonic()
    ckpt = Checkpoint.open(directory)
    ckpt.check_manifest()
    ckpt.check_files()
    return Checked(ckpt, sum(ref.size for _what, ref in blob_refs(ckpt.manifest)), start)


def restore_in_workers(pool: WorkerPool, checked: Checked) -> int:
    """One worker of `pool` per session restores it; how many (see the module docstring)."""
    ckpt = checked.checkpoint
    sessions = {s.session_id: TokenDigest.of_image(s) for s in ckpt.manifest.sessions}
    try:
        pool.start_restored(str(ckpt.path.absolute()), sessions, RESTORE_LIMIT)
    except WorkerStartError as e:
        raise CheckpointError(ckpt.path, f"restore failed: {e}") from None
    log.info("restored %d session(s) from %s in %d worker(s): %s", len(sessions), ckpt.path,
             len(sessions), rate(checked.bytes, time.monotonic() - checked.started))  # fmt: skip
    return len(sessions)
