"""The client's end of a shared-memory segment the server made (see the server's
`cricket_server.datapath.shm`): map it by name and read its proof back."""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path

__all__ = ["ClientSegment", "SHM_DIR", "PROOF_BYTES"]

SHM_DIR = Path("/dev/shm")
PROOF_BYTES = 32
_NAME = re.compile(r"cricket-[0-9]+-[0-9a-f]+")


class ClientSegment:
    """A mapped segment; `proof` is what the server wrote at its start."""

    def __init__(self, name: str, size: int, directory: Path | None = None) -> None:
        if not _NAME.fullmatch(name):
            raise OSError(f"shared segment name {name!r} is not one cricket-server makes")
        path = (directory or SHM_DIR) / name
        fd = os.open(path, os.O_RDWR)
        try:
            actual = os.fstat(fd).st_size
            if actual != size or size < PROOF_BYTES:
                raise OSError(f"shared segment {path}: {actual} bytes, {size} announced")
            self._map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.name = name
        self.size = size
        self.view = memoryview(self._map)
        self.proof = bytes(self.view[:PROOF_BYTES])

    def close(self) -> None:
        self.view.release()
        try:
            self._map.close()
        except BufferError:  # a view of it is still alive somewhere: unmapped with the last one
            pass
