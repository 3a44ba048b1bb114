"""Mapped host memory for a remote GPU (CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTREGISTER_DEVICEMAP),
coherent where a program can look.

Locally, mapped memory is host memory the GPU reads and writes across the bus. Here the GPU is
on another machine, so a mapped range is two copies: the program's host memory on this machine
and a device allocation of the same size in the session on the server, whose address kernels
get as the range's device pointer. They are kept coherent at the points where a correct program
can tell the difference:

- the program's writes reach the device before each launch (kernels, cooperative and extended
  launches, graphs), each cuMemcpy/cuMemcpyAsync between device addresses, each read and each
  synchronization: a range's bytes are compared with what the device was last known to hold
  and sent when they differ;
- the device's writes reach the program at each synchronization that succeeds
  (cuCtxSynchronize, cuStreamSynchronize, cuStreamQuery, cuEventSynchronize, cuEventQuery),
  with each copy into host memory and after each synchronous copy or memset into a range: a
  stream synchronize or read carries the ranges back on its stream, in the same flight (no
  round trip of its own); the others read them after.

What cannot be: a host thread spinning on a flag that a running kernel sets (or the reverse)
sees it change only at the next synchronization. CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY still
reads 0, so programs that choose zero-copy for bulk data take their copy path; libraries that
keep small mapped buffers unasked (cuDNN's handle keeps a 4-byte flag) work. The ranges of a
connection hold at most CRICKET_MAPPED_HOST_LIMIT bytes together (default 64 KiB): every launch
compares them.

An allocation (cuMemHostAlloc) is placed at its device pointer's address where this process
has that address free, so that the two are equal as under unified addressing (a program may
hand either to a kernel); a registered range (cuMemHostRegister) keeps the program's address.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .known_answers import settles_here, stream_settled
from .runtime_host import _LIBC

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["LIMIT_ENV", "MappedHost", "MappedRange", "SYNCHRONIZING", "synchronize"]

LIMIT_ENV = "CRICKET_MAPPED_HOST_LIMIT"
DEFAULT_LIMIT = 64 << 10
# the calls after which the device's writes are visible to the host (with a synchronous copy
# between device addresses: it may read a range, and write one)
SYNCHRONIZING = frozenset({
    "CU_CTX_SYNCHRONIZE", "CU_CTX_SYNCHRONIZE_V2", "CU_STREAM_SYNCHRONIZE", "CU_STREAM_QUERY",
    "CU_EVENT_SYNCHRONIZE", "CU_EVENT_QUERY", "CU_MEMCPY_DTOD",
})  # fmt: skip
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_PROT_RW, _MAP_PRIVATE_ANON, _MAP_FIXED_NOREPLACE = 0x3, 0x22, 0x100000


def limit_from_env() -> int:
    raw = os.environ.get(LIMIT_ENV, "")
    try:
        return max(int(raw), 0) if raw else DEFAULT_LIMIT
    except ValueError:
        return DEFAULT_LIMIT


@dataclass
class MappedRange:
    """One mapped range: the program's `host` memory and the session's `device` copy."""

    host: int
    size: int
    device: int
    flags: int
    registered: bool  # the program's own memory (cuMemHostRegister), else made here
    release: Callable[[], None] | None = None  # frees the host memory made here
    shadow: bytes = field(default=b"", repr=False)  # what the device holds, as last known

    def view(self) -> memoryview:
        return memoryview((ctypes.c_char * self.size).from_address(self.host)).cast("B")

    def current(self) -> bytes:
        return ctypes.string_at(self.host, self.size)


class MappedHost:
    """A connection's mapped ranges, by host address."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit_from_env() if limit is None else limit
        self.ranges: dict[int, MappedRange] = {}
        self._lock = threading.Lock()

    def room_for(self, size: int) -> bool:
        with self._lock:
            return sum(r.size for r in self.ranges.values()) + size <= self.limit

    def add(self, mapped: MappedRange) -> None:
        with self._lock:
            self.ranges[mapped.host] = mapped

    def remove(self, host: int) -> MappedRange | None:
        with self._lock:
            return self.ranges.pop(host, None)

    def find(self, address: int) -> MappedRange | None:
        """The range holding host `address`, if any."""
        with self._lock:
            for mapped in self.ranges.values():
                if mapped.host <= address < mapped.host + mapped.size:
                    return mapped
        return None

    def overlaps(self, address: int, size: int, *, device: bool) -> bool:
        """Whether [address, address + size) meets a range's device copy (`device`) or its
        host memory."""
        with self._lock:
            starts = [(r.device if device else r.host, r.size) for r in self.ranges.values()]
        return any(start < address + size and address < start + n for start, n in starts)

    # -- coherence ----------------------------------------------------------------------------

    def push(self, conn: Connection) -> int:
        """Send the ranges the program changed since the device last held them; CUresult."""
        for mapped in list(self.ranges.values()):
            now = mapped.current()
            if now != mapped.shadow:
                err = int(conn.call("CU_MEMCPY_HTOD", mapped.device, now)[0])
                if err:
                    return err
                mapped.shadow = now
        return 0

    def read_calls(self, stream: int | None) -> list[tuple[tuple[Any, ...], memoryview]]:
        """`sync_into` calls reading every range back into host memory, on `stream` (None:
        the synchronous copy); `settle()` once they succeeded."""
        ranges = list(self.ranges.values())
        if stream is None:
            return [((r.device, r.size), r.view()) for r in ranges]
        return [((r.device, r.size, stream), r.view()) for r in ranges]

    def settle(self) -> None:
        """The ranges were read back: the device holds what the host now holds."""
        for mapped in list(self.ranges.values()):
            mapped.shadow = mapped.current()

    def pull(self, conn: Connection, stream: int | None) -> int:
        """The program's changes out, then every range read back (on `stream`); CUresult."""
        err = self.push(conn)
        if err or not self.ranges:
            return err
        proc = "CU_MEMCPY_DTOH" if stream is None else "CU_MEMCPY_DTOH_ASYNC"
        err = conn.sync_into(proc, self.read_calls(stream))
        if not err:
            self.settle()
        return err


def synchronize(conn: Connection, proc: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """`conn.call(proc, *args)` of a synchronizing procedure with mapped ranges: the ranges
    come back with it. A stream synchronize reads them on its stream (the read waits for the
    stream, so the synchronize is then answered here); the others read them after success."""
    mapped = conn.mapped
    stream = args[0] if args and proc.startswith("CU_STREAM") else None
    if mapped is None or not mapped.ranges or settles_here(conn, proc, stream):
        return conn._call_unmapped(proc, *args)
    if proc == "CU_STREAM_SYNCHRONIZE":
        err = mapped.pull(conn, stream)
        if err:
            return (err,)
        stream_settled(conn, stream)  # type: ignore[arg-type]
        return conn._call_unmapped(proc, *args)
    err = mapped.push(conn)
    if err:
        return (err,)
    reply = conn._call_unmapped(proc, *args)
    if proc == "CU_MEMCPY_DTOD" and not mapped.overlaps(args[0], args[2], device=True):
        return reply  # no range written
    if reply[0] == 0:
        err = mapped.pull(conn, stream)
        if err:
            return (err,)
    return reply


# -- host memory for an allocation, at its device pointer's address where free ---------------


def host_memory_at(address: int, size: int) -> tuple[int, Callable[[], None]]:
    """Zeroed host memory of `size` bytes, at `address` when this process has its pages free
    (else anywhere); (its address, what frees it)."""
    start = address - address % _PAGE
    length = -(-(address + size - start) // _PAGE) * _PAGE
    libc = _LIBC
    if libc is not None and address:
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]  # fmt: skip
        got = libc.mmap(start, length, _PROT_RW, _MAP_PRIVATE_ANON | _MAP_FIXED_NOREPLACE, -1, 0)
        if got == start:
            return address, lambda: libc.munmap(ctypes.c_void_p(start), ctypes.c_size_t(length))
        if got not in (None, ctypes.c_void_p(-1).value):  # an older kernel placed it elsewhere
            libc.munmap(ctypes.c_void_p(got), ctypes.c_size_t(length))
    anywhere = _AnonymousMap(size)
    return anywhere.address, anywhere.close


class _AnonymousMap:
    """Zeroed anonymous memory wherever the system puts it."""

    def __init__(self, size: int) -> None:
        self._memory = mmap.mmap(-1, size)
        self._view: ctypes.Array[ctypes.c_char] | None = (ctypes.c_char * size).from_buffer(
            self._memory
        )
        self.address = ctypes.addressof(self._view)

    def close(self) -> None:
        self._view = None  # the map's only export
        self._memory.close()
