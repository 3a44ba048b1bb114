"""Stream capture interaction modes (cuThreadExchangeStreamCaptureMode): which potentially
unsafe calls a thread may make while a capture is under way. Re-exported by
`cricket_client.driver` and `cricket_client.runtime`.

A thread's mode is the client's: the server sees one connection, the client knows its
threads. So the client keeps each thread's mode (Global until exchanged) and the captures
its threads began (origin stream, the mode given to cuStreamBeginCapture, the thread), and
decides as CUDA documents: a thread in Relaxed mode may make any potentially unsafe call; in
ThreadLocal mode it may not while a capture it began, not Relaxed, is under way; in Global
mode, also not while another thread's Global capture is. A prohibited call is not run: it is
sent as CU_STREAM_CAPTURE_PROHIBIT for each capture that prohibits it, which invalidates
that capture, and answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. The potentially unsafe
calls governed here are cuMemAlloc and cuMemFree (and cudaMalloc and cudaFree, made of
them).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ._args import size_t
from ._driver_base import _SUCCESS, _conn, _fail, _handle, _out
from ._enums import CUresult, CUstreamCaptureMode
from ._types import CUdeviceptr
from .connection import Connection

__all__ = [
    "cuThreadExchangeStreamCaptureMode",
    "cuMemAlloc",
    "cuMemFree",
]

GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2
_UNSUPPORTED = int(CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
_CALLS = {"cuMemAlloc": 0, "cuMemFree": 1}  # CU_STREAM_CAPTURE_PROHIBIT

_thread = threading.local()
# connection -> {origin stream: (mode it began with, thread ident)}
_BEGUN: weakref.WeakKeyDictionary[Connection, dict[int, tuple[int, int]]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def thread_mode() -> int:
    """The calling thread's capture interaction mode."""
    return int(getattr(_thread, "mode", GLOBAL))


def exchange(mode: Any) -> int | None:
    """Set the calling thread's mode; the previous one, or None for a value that is no mode."""
    value = int(mode)
    if value not in (GLOBAL, THREAD_LOCAL, RELAXED):
        return None
    old = thread_mode()
    _thread.mode = value
    return old


def cuThreadExchangeStreamCaptureMode(mode: Any) -> tuple[Any, Any]:
    old = exchange(mode)
    if old is None:
        return _fail(  # type: ignore[return-value]
            _conn(), int(CUresult.CUDA_ERROR_INVALID_VALUE),
            f"cuThreadExchangeStreamCaptureMode: {int(mode)} is not a CUstreamCaptureMode", 1,
        )
    return (_SUCCESS, CUstreamCaptureMode(old))


def began(conn: Connection, stream: int, mode: int) -> None:
    """A capture this thread began on `stream` (cuStreamBeginCapture succeeded)."""
    with _LOCK:
        _BEGUN.setdefault(conn, {})[stream] = (int(mode), threading.get_ident())


def ended(conn: Connection, stream: int) -> None:
    """The capture begun on `stream` is over (ended, or found gone)."""
    with _LOCK:
        _BEGUN.get(conn, {}).pop(stream, None)


def prohibiting(conn: Connection) -> list[int]:
    """The origin streams of the captures that prohibit the calling thread's potentially
    unsafe calls now."""
    mode = thread_mode()
    if mode == RELAXED:
        return []
    me = threading.get_ident()
    with _LOCK:
        begun = list(_BEGUN.get(conn, {}).items())
    return [
        stream for stream, (began_mode, thread) in begun
        if (thread == me and began_mode != RELAXED)
        or (mode == GLOBAL and thread != me and began_mode == GLOBAL)
    ]  # fmt: skip


def _refused(conn: Connection, call: str) -> int:
    """0 when the calling thread may make `call`; else the error, each prohibiting capture
    invalidated."""
    error = 0
    for stream in prohibiting(conn):
        err = conn.call("CU_STREAM_CAPTURE_PROHIBIT", stream, _CALLS[call])[0]
        if err == _UNSUPPORTED:
            error = err
        else:  # the capture is gone (its stream destroyed): it prohibits nothing
            ended(conn, stream)
    return error


def cuMemAlloc(bytesize: int) -> tuple[Any, CUdeviceptr | None]:
    bytesize = size_t(bytesize, "cuMemAlloc: bytesize")
    conn = _conn()
    err = _refused(conn, "cuMemAlloc")
    if not err:
        err, r = conn.sync("CU_MEM_ALLOC", bytesize)
    if err:
        return _out(err, None)  # type: ignore[return-value]
    conn.known.allocations.made(r.value, bytesize)  # early copies may write it
    return (_SUCCESS, CUdeviceptr(r.value))


def cuMemFree(dptr: Any) -> tuple[Any]:
    dptr = _handle(dptr, "dptr")
    conn = _conn()
    err = _refused(conn, "cuMemFree")
    return _out(err or conn.call("CU_MEM_FREE", dptr)[0])  # type: ignore[return-value]


def cudaThreadExchangeStreamCaptureMode(mode: Any) -> tuple[Any, Any]:
    """The runtime form (re-exported by `cricket_client.runtime`)."""
    from ._runtime_enums import cudaError_t, cudaStreamCaptureMode

    old = exchange(mode)
    if old is None:
        _conn().set_local_error(
            f"cudaThreadExchangeStreamCaptureMode: {int(mode)} is not a cudaStreamCaptureMode"
        )
        return (cudaError_t.cudaErrorInvalidValue, None)
    return (cudaError_t.cudaSuccess, cudaStreamCaptureMode(old))
