"""A shared-memory segment a same-host client copies through.

The server creates `/dev/shm/cricket-<random>` (owner-only), writes 32 random bytes at its
start and tells the client the name. A client that reads those bytes back (DATA_SHM_ACCEPT)
shares the host's /dev/shm, so copies may then move through the segment. The file is
unlinked when the connection ends.

The segment stays mapped for the life of the connection, so the backend may page-lock it
(`BackendSession.register_host`, on the first copy) and copy between it and the device
directly. The registration is undone before the mapping closes; a backend that cannot
register (or refuses) leaves the copies on its usual path.
"""

from __future__ import annotations

import hmac
import logging
import mmap
import os
import secrets
from pathlib import Path

from cricket_server.backends.base import BackendSession

__all__ = ["ServerSegment", "SHM_DIR", "PROOF_BYTES", "MAX_SEGMENT", "sweep_stale"]

log = logging.getLogger("cricket_server.datapath")
_refusal_logged = False  # a backend that cannot page-lock says why once per process

SHM_DIR = Path("/dev/shm")
PROOF_BYTES = 32
MAX_SEGMENT = 1 << 30


def sweep_stale(directory: Path = SHM_DIR) -> list[str]:
    """Unlink segments whose server process is gone (killed between offer and answer);
    only this user's files. Returns the names removed."""
    removed = []
    for path in directory.glob("cricket-*-*"):
        pid = path.name.split("-")[1]
        try:
            if not pid.isdigit() or Path(f"/proc/{pid}").exists():
                continue
            if path.stat().st_uid != os.getuid():
                continue
            path.unlink()
            removed.append(path.name)
        except OSError:
            continue  # raced with its owner or another sweeper
    return removed


class ServerSegment:
    """One mapped /dev/shm file; `view` is writable, `accepted` once the client proved it."""

    def __init__(self, size: int, directory: Path = SHM_DIR) -> None:
        if not PROOF_BYTES <= size <= MAX_SEGMENT:
            raise ValueError(
                f"shared segment of {size} bytes: allowed {PROOF_BYTES}..{MAX_SEGMENT}"
            )
        sweep_stale(directory)
        self.name = f"cricket-{os.getpid()}-{secrets.token_hex(12)}"
        self.path = directory / self.name
        self.size = size
        self.accepted = False
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            raise
        os.close(fd)
        self._proof = secrets.token_bytes(PROOF_BYTES)
        self._map[:PROOF_BYTES] = self._proof
        self.view = memoryview(self._map)
        self._registrar: BackendSession | None = None  # the session that tried to page-lock it
        self._token: object | None = None

    def accept(self, proof: bytes) -> bool:
        """Whether `proof` is what the segment held: then the client shares this host."""
        self.accepted = hmac.compare_digest(bytes(proof), self._proof)
        # Both ends have it mapped now (or the client failed): the name is not needed any
        # more, and an unlinked segment cannot outlive the processes, however they end.
        self.path.unlink(missing_ok=True)
        return self.accepted

    def span(self, call: str, offset: int, size: int) -> memoryview:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise IndexError(
                f"{call}: bytes {offset}..{offset + size} outside the {self.size}-byte shared segment"
            )
        return self.view[offset : offset + size]

    def registration(self, bsession: BackendSession) -> object | None:
        """The token under which `bsession` has the segment page-locked, registering it on
        first use (once per segment and session); None when the backend cannot or refused
        (logged once), and the copies then go the backend's usual way."""
        if bsession is self._registrar:
            return self._token
        self.unregister()  # the connection now serves another session
        self._registrar = bsession
        try:
            self._token = bsession.register_host(self.view)
        except Exception as exc:  # a refusal (e.g. not permitted) must not fail the copy
            _log_refusal(self.name, exc)
        if self._token is not None:
            log.debug("shared segment %s page-locked: copies go straight to the device", self.name)
        return self._token

    def unregister(self) -> None:
        """Undo the registration (before the mapping may go); a failure is logged."""
        registrar, token = self._registrar, self._token
        self._registrar = self._token = None
        if registrar is not None and token is not None:
            try:
                registrar.unregister_host(token)
            except Exception:
                log.exception("shared segment %s: unregistering it from the backend", self.name)

    def close(self) -> None:
        self.unregister()
        self.path.unlink(missing_ok=True)
        self.view.release()
        self._map.close()


def _log_refusal(name: str, exc: Exception) -> None:
    global _refusal_logged
    level = logging.DEBUG if _refusal_logged else logging.WARNING
    _refusal_logged = True
    log.log(level, "shared segment %s not page-locked (%s): copies take the usual path", name, exc)
