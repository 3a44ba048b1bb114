"""What every driver mirror shares: the connection, cuda-python's return shape, and the
handle, stream and symbol-name arguments as they travel.

The hand-written mirrors (cricket_client.driver) and the generated ones
(cricket_client._driver_generated, from cricket_client/driver.mirrors) both use these, so a
generated mirror checks, converts and fails exactly as a hand-written one would.
"""

from __future__ import annotations

from typing import Any

from ._args import u64
from ._enums import CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUresult
from ._types import as_int
from .connection import Connection, get_connection
from .early_copies import STICKY
from .errors import to_result

__all__ = ["_SUCCESS", "_conn", "_fail", "_handle", "_name", "_out", "_stream"]

_SUCCESS = CUresult.CUDA_SUCCESS
_WIRE_PER_THREAD = 2  # STREAM_PER_THREAD in cricket.x

_conn = get_connection  # this thread's connection (cricket_client.connection)


def _fail(conn: Connection | None, code: int, message: str, outputs: int) -> tuple[Any, ...]:
    """A failure found here, before anything is sent: its message becomes the connection's
    last error message, as the server's would."""
    if conn is not None:
        conn.set_local_error(message)
    return (to_result(code),) + (None,) * outputs


def _out(err: int, *values: Any) -> tuple[Any, ...]:
    """cuda-python's return shape: (CUresult, outputs...) with None outputs on failure."""
    if err:
        if err in STICKY:  # the context is unusable: no copy may return early any more
            _conn().known.allocations.broken = True
        return (to_result(err),) + (None,) * len(values)
    return (_SUCCESS, *values)


def _handle(value: Any, what: str) -> int:
    """A handle or device pointer argument: cuda-python takes it as an unsigned 64-bit value
    (OverflowError for a negative one)."""
    number = as_int(value)
    if 0 <= number < 1 << 64:
        return number
    return u64(number, what)


def _stream(h: Any) -> int:
    """A stream argument as the wire handle: 0 legacy default, 2 per-thread default."""
    value = _handle(h, "hStream")
    if value in (0, CU_STREAM_LEGACY):
        return 0
    if value == CU_STREAM_PER_THREAD:
        return _WIRE_PER_THREAD
    return value


def _name(name: Any) -> str:
    """A symbol name for the wire. Bytes that are not UTF-8 name no symbol of any module: they
    travel with U+FFFD in their place, and the server answers CUDA_ERROR_NOT_FOUND (or what a
    bad module handle gives), as the driver does for such a name."""
    if isinstance(name, bytes | bytearray):
        return bytes(name).split(b"\0", 1)[0].decode(errors="replace")
    return str(name)
