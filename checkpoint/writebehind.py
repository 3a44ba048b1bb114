"""Writing a large file sequentially with the disk kept busy and the page cache kept small.

Buffered writes only copy into the page cache; the kernel starts writing them out late (at
its dirty-memory thresholds), so a writer that fsyncs at the end waits for nearly all of the
file at disk speed while doing nothing else. `WriteBehind(fd)` starts the disk write of every
part as soon as it is in the page cache (sync_file_range SYNC_FILE_RANGE_WRITE), keeps at most
`window` parts in flight (waiting for the oldest one), and drops parts that reached the disk
from the page cache (posix_fadvise DONTNEED), so a checkpoint larger than memory does not
evict everything else. `finish()` fsyncs: that is what makes the file durable; the hints
above only move the work earlier, and where they fail or do not exist they are skipped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections import deque
from typing import Any

WINDOW = 8  # parts whose disk write may be in flight at once (8 MiB pieces: 64 MiB)

_WAIT_BEFORE, _WRITE, _WAIT_AFTER = 1, 2, 4  # SYNC_FILE_RANGE_* (linux/fs.h)


def _load_sync_file_range() -> Any:
    name = ctypes.util.find_library("c")
    fn = getattr(ctypes.CDLL(name, use_errno=True), "sync_file_range", None) if name else None
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        fn.restype = ctypes.c_int
    return fn


_sync_file_range = _load_sync_file_range()


class WriteBehind:
    """Sequential writes to `fd` (from its current offset), written behind; see the module
    docstring. Call it with each part in order, then `finish()`."""

    def __init__(self, fd: int, window: int = WINDOW) -> None:
        self.fd = fd
        self.offset = os.lseek(fd, 0, os.SEEK_CUR)
        self.window = window
        self.hints = _sync_file_range is not None
        self._in_flight: deque[tuple[int, int]] = deque()

    def __call__(self, data: memoryview) -> None:
        start = self.offset
        view = data
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
            self.offset += n
        if not self.hints or self.offset == start:
            return
        self._range(start, self.offset - start, _WRITE)
        self._in_flight.append((start, self.offset - start))
        if len(self._in_flight) > self.window:
            old_start, old_size = self._in_flight.popleft()
            self._range(old_start, old_size, _WAIT_BEFORE | _WRITE | _WAIT_AFTER)
            self._drop(old_start, old_size)

    def finish(self) -> None:
        """Make the file durable (fsync) and drop it from the page cache."""
        os.fsync(self.fd)
        self._in_flight.clear()
        self._drop(0, 0)

    def _range(self, start: int, size: int, flags: int) -> None:
        if _sync_file_range(self.fd, start, size, flags) != 0:
            self.hints = False  # not supported here (or failing: fsync will say so)

    def _drop(self, start: int, size: int) -> None:
        try:
            os.posix_fadvise(self.fd, start, size, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass
