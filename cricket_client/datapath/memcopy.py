"""Large host-memory copies split over a few threads.

One core copies at a fraction of a machine's memory bandwidth, and a copy into or out of the
shared-memory ring is the client's half of every same-host transfer. numpy's copies release
the GIL, so parts of one copy run at once in a small pool of threads; without numpy (it is
not a client requirement) a copy is one slice assignment. CRICKET_COPY_THREADS sets the
number of threads (default: a quarter of the cores, at most 4: the server's copy on the
same host needs cores too); 1 turns the splitting off.
"""

from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["copy", "THREADS_ENV", "copy_threads"]

THREADS_ENV = "CRICKET_COPY_THREADS"
MIN_PART = 1 << 20  # smaller parts are not worth a thread hand-off (H200: a 1 MiB DtoH split in 4
# parts took 265 us against 186 us whole, alternating runs)

_np: Any
try:
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by clients without numpy
    _np = None

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@functools.cache
def _default_threads() -> int:
    """A quarter of the cores, 1-4 (os.cpu_count reads /sys on every call: once is enough)."""
    return max(1, min(4, (os.cpu_count() or 1) // 4))


def copy_threads() -> int:
    """Threads one copy may use (CRICKET_COPY_THREADS, else a quarter of the cores, 1-4)."""
    text = os.environ.get(THREADS_ENV)
    if text:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{THREADS_ENV}={text!r}: expected a whole number") from None
        if value < 1:
            raise ValueError(f"{THREADS_ENV}={text!r}: at least 1")
        return value
    return _default_threads()


def _executor(threads: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=threads - 1, thread_name_prefix="cricket-copy")
        return _pool


def copy(dst: memoryview, src: Any, threads: int | None = None) -> None:
    """`dst[:] = src` (same length, bytes-like), in parts on several threads when large."""
    n = len(dst)
    if n < 2 * MIN_PART:  # one part whatever the threads: no need to ask how many
        dst[:] = src
        return
    threads = copy_threads() if threads is None else threads
    parts = min(threads, n // MIN_PART)
    if _np is None or parts < 2:
        dst[:] = src
        return
    to = _np.frombuffer(dst, dtype=_np.uint8)
    frm = _np.frombuffer(src, dtype=_np.uint8)
    if len(frm) != n:
        raise ValueError(f"copy: {len(frm)} bytes into {n}")
    step = -(-n // parts)
    bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    pool = _executor(threads)
    futures = [pool.submit(_np.copyto, to[lo:hi], frm[lo:hi]) for lo, hi in bounds[1:]]
    lo, hi = bounds[0]
    _np.copyto(to[lo:hi], frm[lo:hi])
    for future in futures:
        future.result()
