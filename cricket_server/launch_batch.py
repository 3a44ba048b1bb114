"""CU_LAUNCH_KERNEL_BATCH's argument read by struct: one unpack per launch, no dataclass.

The wire form is rpc_spec/cricket.x's `launch_batch`, an XDR array of `launch_args`. This
reader accepts exactly what the generated codec accepts (same bounds; truncated input,
oversized counts and trailing bytes are refused with XdrDecodeError, which the dispatcher
answers with GARBAGE_ARGS) and gives each launch as a flat tuple, its parameters a view of
the call record:

    (function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params)
"""

from __future__ import annotations

import struct
from typing import Any

from cricket_xdr.xdr import XdrDecodeError
from rpc_spec import cricket_rpc as proto

__all__ = ["Launch", "LaunchList", "decode_launch_batch", "decode_launch_batch_args"]

Launch = tuple[int, int, int, int, int, int, int, int, int, memoryview]

_COUNT = struct.Struct(">I")
_HEAD = struct.Struct(">Q7IQI")  # launch_args up to and with the params' length word


class LaunchList(list[Launch]):
    """The launches of a batch, with `body`: the record they were read from (for a backend
    that makes them from it, `BackendSession.fast_launcher`)."""

    body: memoryview


def decode_launch_batch(body: Any) -> LaunchList:
    """The launches of a `launch_batch` encoding (see the module docstring)."""
    mv = memoryview(body).cast("B") if not isinstance(body, memoryview) else body
    if mv.format != "B":
        mv = mv.cast("B")
    size = len(mv)
    if size < 4:
        raise XdrDecodeError(f"launch_batch: need 4 bytes for the count, got {size}")
    (count,) = _COUNT.unpack_from(mv, 0)
    if count > proto.MAX_LAUNCH_BATCH:
        raise XdrDecodeError(
            f"launch_batch: length {count} exceeds the bound {proto.MAX_LAUNCH_BATCH}"
        )
    head = _HEAD.unpack_from
    head_size = _HEAD.size
    launches = LaunchList()
    launches.body = mv
    append = launches.append
    pos = 4
    for index in range(count):
        if pos + head_size > size:
            raise XdrDecodeError(
                f"launch_batch[{index}]: need {head_size} bytes at offset {pos}, "
                f"only {size - pos} left"
            )
        fn, gx, gy, gz, bx, by, bz, shared, stream, n = head(mv, pos)
        start = pos + head_size
        end = start + n
        pos = end + (-n & 3)
        if pos > size:
            raise XdrDecodeError(
                f"launch_batch[{index}].params: length {n} exceeds the {size - start} bytes left"
            )
        append((fn, gx, gy, gz, bx, by, bz, shared, stream, mv[start:end]))
    if pos != size:
        raise XdrDecodeError(f"{size - pos} trailing bytes after the value at offset {pos}")
    return launches


def decode_launch_batch_args(body: Any) -> list[Any]:
    """The handler's argument list (the dispatcher's ARG_DECODERS form)."""
    return [decode_launch_batch(body)]
