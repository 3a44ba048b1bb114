"""What every runtime mirror shares: cudaError_t results that become the thread's last error,
and the runtime's lazily activated context (cricket_client.runtime_state).

The hand-written mirrors (cricket_client.runtime) and the generated ones
(cricket_client._runtime_generated, from cricket_client/runtime.mirrors) both use these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._runtime_enums import cudaError_t
from .connection import Connection, get_connection
from .errors import NotConnectedError
from .runtime_state import STICKY_ERRORS, activate
from .runtime_state import thread_state as _thread_state

__all__ = [
    "_INVALID_VALUE",
    "_NOT_READY",
    "_SUCCESS",
    "_current",
    "_error",
    "_fail",
    "_ready",
    "_record",
    "_ret",
    "_stream",
    "_with_context",
]

_SUCCESS = cudaError_t.cudaSuccess
_INVALID_VALUE = cudaError_t.cudaErrorInvalidValue
_NOT_READY = cudaError_t.cudaErrorNotReady


def _error(code: Any) -> cudaError_t | int:
    """The cudaError_t of a CUresult (CUDA numbers them alike); unknown codes stay ints."""
    try:
        return cudaError_t(int(code))
    except ValueError:
        return int(code)


def _record(err: Any, conn: Connection | None = None) -> cudaError_t | int:
    code = _error(err)
    if code not in (_SUCCESS, _NOT_READY):
        sticky = int(code) in STICKY_ERRORS
        _thread_state().record(int(code), conn or (_current() if sticky else None))
    return code


def _current() -> Connection | None:
    try:
        return get_connection()
    except NotConnectedError:
        return None


def _ret(err: Any, *values: Any) -> tuple[Any, ...]:
    """cuda-python's shape: (cudaError_t, outputs...), None outputs on failure; a failure
    becomes the thread's last error."""
    code = _record(err)
    if code != _SUCCESS:
        return (code,) + (None,) * len(values)
    return (code, *values)


def _fail(conn: Connection | None, code: cudaError_t, message: str, outputs: int) -> tuple[Any, ...]:
    if conn is not None:
        conn.set_local_error(message)
    return _ret(code, *([None] * outputs))


def _ready() -> tuple[int, Connection]:
    """The connection, with the runtime's context current (CUresult 0), as CUDA's lazy init."""
    conn = get_connection()
    return activate(conn), conn


def _with_context(call: Callable[[], tuple[Any, ...]], outputs: int) -> tuple[Any, ...]:
    err, _conn = _ready()
    if err:
        return _ret(err, *([None] * outputs))
    result = call()
    return _ret(result[0], *result[1:])


def _stream(s: Any) -> Any:
    return 0 if s is None else s
