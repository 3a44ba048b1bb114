"""Checkpoints across worker processes (process isolation).

No process holds every session, so a server checkpoint is written by several processes into
one temporary directory, and only the main process commits it (D9 kept):

    .<target>.tmp-XXXX/              the `CheckpointWriter`'s temporary directory (main)
        s<id>/alloc-..., module-...  blobs of session <id>, written by the worker holding it
        s<id>/SESSION                that session's `session_image` (XDR), fsynced by the worker
        MANIFEST                     written last, by the main process, naming every session

The main process sends each worker holding a session `checkpoint RID TMP` (TMP: the hex of
the temporary directory's path); the worker takes its session's consistent cut, writes its
part, and answers `part RID ...` (or `part-failed RID MESSAGE`). The main process then reads
and removes every `SESSION` file, writes the manifest and renames the directory into place;
on any failure the temporary directory is deleted and the previous checkpoint stays. The
committed directory has the same layout as one written by a single process.

A CHECKPOINT_SERVER call served by a worker is forwarded to the main process as
`checkpoint-server RID SESSION TMP` and answered with `checkpoint-server-result RID CODE TEXT`.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from checkpoint.format import CheckpointError
from checkpoint.writer import BlobSink, CheckpointWriter
from cricket_server.backends.base import CudaError
from cricket_server.checkpoints.sessions import (
    CheckpointSummary,
    consistent_cut,
    created_by,
    snapshot_session,
)
from cricket_server.session import SessionManager
from rpc_spec import checkpoint_rpc as ck

log = logging.getLogger("cricket_server.workers")

PART_IMAGE = "SESSION"
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_UNKNOWN = 999


def encode_path(path: str | os.PathLike[str]) -> str:
    """A path as one space-free control-message field."""
    return os.fsencode(os.fspath(path)).hex()


def decode_path(field: str) -> Path:
    return Path(os.fsdecode(bytes.fromhex(field)))


# -- the worker's side ----------------------------------------------------------------------


def write_part(manager: SessionManager, tmp: Path) -> list[str]:
    """Write every live session of this worker into `tmp` (blobs and its SESSION file);
    the fields of the `part` answer after RID: session ids (comma-separated, `-` for none),
    decoded bytes, stored bytes, calls, driver version, VA base and size."""
    sink = BlobSink(tmp)
    ids = []
    calls = 0
    for session in manager.sessions():
        if session.closed:
            continue
        with consistent_cut(session):
            image = snapshot_session(session, sink)
        file = tmp / f"s{session.id:016x}" / PART_IMAGE
        file.parent.mkdir(mode=0o700, exist_ok=True)
        with open(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(ck.xdr_session_image.encode(image))
            f.flush()
            os.fsync(f.fileno())
        ids.append(f"{session.id:#x}")
        calls = image.calls
    backend = manager.backend
    return [
        ",".join(ids) or "-",
        str(sink.bytes),
        str(sink.stored_bytes),
        str(calls),
        str(backend.driver_version()),
        str(manager.arena.base),
        str(manager.arena.size),
    ]


def answer_part_request(manager: SessionManager, channel: Any, rid: str, tmp_field: str) -> None:
    """Serve one `checkpoint RID TMP` message (in a thread of its own) and answer it."""
    try:
        fields = write_part(manager, decode_path(tmp_field))
    except (CheckpointError, CudaError, OSError, ValueError) as e:
        log.warning("checkpoint part into %s failed: %s", tmp_field, e)
        message = e.message if isinstance(e, CudaError) else str(e)
        channel.send("part-failed", rid, message.replace("\n", " ")[:3000])
        return
    channel.send("part", rid, *fields)


class ForwardedCalls:
    """The worker's CHECKPOINT_SERVER calls waiting for the main process's answer."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._answers: dict[str, tuple[int, str]] = {}
        self._gone = False

    def call(self, path: str, session_id: int) -> tuple[int, str]:
        """(CUresult, text) of a server checkpoint the main process writes."""
        rid = str(next(self._ids))
        self.channel.send("checkpoint-server", rid, f"{session_id:#x}", encode_path(path))
        with self._cond:
            self._cond.wait_for(lambda: rid in self._answers or self._gone)
            return self._answers.pop(rid, (CUDA_ERROR_UNKNOWN, "the main process went away"))

    def answer(self, fields: list[str]) -> None:
        """`checkpoint-server-result RID CODE TEXT...` from the main process."""
        with self._cond:
            self._answers[fields[1]] = (int(fields[2]), " ".join(fields[3:]))
            self._cond.notify_all()

    def main_gone(self) -> None:
        with self._cond:
            self._gone = True
            self._cond.notify_all()


# -- the main process's side ----------------------------------------------------------------


class HasChannel(Protocol):
    """What the main side uses of a worker."""

    @property
    def pid(self) -> int: ...
    @property
    def channel(self) -> Any: ...
    @property
    def sessions(self) -> list[str]: ...


@dataclass
class _Ask:
    waiting: set[int]
    answers: dict[int, list[str] | None]


class PartRequests:
    """`checkpoint` requests sent to workers and their answers, matched by RID."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._asks: dict[str, _Ask] = {}

    def ask(self, workers: Iterable[HasChannel], tmp: Path) -> dict[int, list[str] | None]:
        """Send the request to every worker; wait for all answers (None: the worker ended)."""
        rid = str(next(self._ids))
        workers = list(workers)
        ask = _Ask({w.pid for w in workers}, {})
        with self._cond:
            self._asks[rid] = ask
        for w in workers:
            try:
                w.channel.send("checkpoint", rid, encode_path(tmp))
            except OSError:
                self._answer(rid, w.pid, None)
        with self._cond:
            self._cond.wait_for(lambda: not ask.waiting)
            del self._asks[rid]
        return ask.answers

    def take(self, worker: HasChannel, fields: list[str]) -> bool:
        """Consume a `part`/`part-failed` message; False for any other message."""
        if fields[0] not in ("part", "part-failed") or len(fields) < 2:
            return False
        self._answer(fields[1], worker.pid, fields)
        return True

    def gone(self, worker: HasChannel) -> None:
        """The worker ended: it answers nothing more."""
        with self._cond:
            rids = [rid for rid, ask in self._asks.items() if worker.pid in ask.waiting]
        for rid in rids:
            self._answer(rid, worker.pid, None)

    def _answer(self, rid: str, pid: int, fields: list[str] | None) -> None:
        with self._cond:
            ask = self._asks.get(rid)
            if ask is not None and pid in ask.waiting:
                ask.waiting.discard(pid)
                ask.answers[pid] = fields
                self._cond.notify_all()


class WorkerCheckpoints(Protocol):
    """What `checkpoint_workers` needs of a `WorkerPool`."""

    @property
    def parts(self) -> PartRequests: ...
    @property
    def backend_name(self) -> str: ...
    def holding_sessions(self) -> list[Any]: ...


def checkpoint_workers(
    pool: WorkerCheckpoints, target: str | os.PathLike[str], session_id: int = 0
) -> CheckpointSummary:
    """One checkpoint directory of every session the pool's workers hold (or of
    `session_id` only), crash-safe: see the module docstring."""
    start = time.monotonic()
    workers = pool.holding_sessions()
    if session_id:
        workers = [w for w in workers if f"{session_id:#x}" in w.sessions]
        if not workers:
            raise CheckpointError(None, f"checkpoint: no session {session_id:#x} here")
    with CheckpointWriter(target) as writer:
        answers = pool.parts.ask(workers, writer.tmp)
        images: list[ck.session_image] = []
        size = stored = calls = 0
        driver, va_base, va_end = 0, None, 0
        for w in workers:
            fields = answers.get(w.pid)
            if fields is None:
                log.info("checkpoint %s: worker %d ended meanwhile; its session is gone",
                         writer.target, w.pid)  # fmt: skip
                continue
            if fields[0] == "part-failed":
                raise CheckpointError(None, f"worker {w.pid}: {' '.join(fields[2:])}")
            ids, n, n_stored, n_calls, drv, base, span = fields[2:9]
            size, stored, calls = size + int(n), stored + int(n_stored), int(n_calls)
            driver = int(drv)
            va_base = int(base) if va_base is None else min(va_base, int(base))
            va_end = max(va_end, int(base) + int(span))
            for sid in ids.split(",") if ids != "-" else []:
                images.append(_take_image(writer.tmp, int(sid, 16)))
        if session_id and not images:
            raise CheckpointError(None, f"checkpoint: session {session_id:#x} ended meanwhile")
        body = ck.manifest_body(
            created_by=created_by(),
            created_unix_ns=time.time_ns(),
            backend=pool.backend_name,
            driver_version=driver,
            va_base=va_base or 0,
            va_size=va_end - (va_base or 0),
            sessions=sorted(images, key=lambda s: s.session_id),
        )
        writer.commit(body)
    summary = CheckpointSummary(len(images), size, stored, time.monotonic() - start, calls)
    log.info("checkpoint %s: %d session(s) from %d worker(s), %d bytes in %.2f s",
             writer.target, summary.sessions, len(workers), size, summary.seconds)  # fmt: skip
    return summary


def _take_image(tmp: Path, session_id: int) -> ck.session_image:
    file = tmp / f"s{session_id:016x}" / PART_IMAGE
    try:
        image = ck.xdr_session_image.decode(file.read_bytes())
        file.unlink()
    except (OSError, ValueError) as e:
        raise CheckpointError(file, f"the worker's part cannot be read: {e}") from None
    return image


def checkpoint_result_fields(pool: WorkerCheckpoints, path: str, session_id: int) -> list[str]:
    """CODE and TEXT of a CHECKPOINT_SERVER a worker forwarded (`checkpoint-server-result`):
    TEXT is `SESSIONS BYTES STORED CALLS` on success, else the reason."""
    try:
        s = checkpoint_workers(pool, path, session_id)
    except (CheckpointError, CudaError, OSError) as e:
        log.warning("checkpoint %s failed: %s", path, e)
        if isinstance(e, CheckpointError) and "no session" in e.message:
            return [str(CUDA_ERROR_INVALID_VALUE), e.message]
        return [str(e.code if isinstance(e, CudaError) else CUDA_ERROR_UNKNOWN), str(e)]
    return ["0", str(s.sessions), str(s.bytes), str(s.stored_bytes), str(s.calls)]
