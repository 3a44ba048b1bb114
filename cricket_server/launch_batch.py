"""CU_LAUNCH_KERNEL_BATCH's and CU_GRAPH_LAUNCH_BATCH's arguments read by struct: one unpack
per launch, no dataclass.

The wire forms are rpc_spec/cricket.x's `launch_batch` and `graph_launch_batch`, XDR arrays of
`launch_args` and `graph_launch_args`. These readers accept exactly what the generated codecs
accept (same bounds; truncated input, oversized counts and trailing bytes are refused with
XdrDecodeError, which the dispatcher answers with GARBAGE_ARGS) and give each launch as a flat
tuple, its bytes a view of the call record:

    (function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params)
    (exec, stream, host_in)

Each has its own loop: the kernel launches' is the hot path of a launch loop (a shared loop
that builds the tuple generically costs it a third more).
"""

from __future__ import annotations

import struct
from typing import Any

from cricket_xdr.xdr import XdrDecodeError
from rpc_spec import cricket_rpc as proto

__all__ = [
    "GraphLaunch", "Launch", "LaunchList", "decode_graph_launch_batch",
    "decode_graph_launch_batch_args", "decode_launch_batch", "decode_launch_batch_args",
]

Launch = tuple[int, int, int, int, int, int, int, int, int, memoryview]
GraphLaunch = tuple[int, int, memoryview]

_COUNT = struct.Struct(">I")
_HEAD = struct.Struct(">Q7IQI")  # launch_args up to and with the params' length word
_GRAPH_HEAD = struct.Struct(">QQI")  # graph_launch_args up to and with host_in's length word


class LaunchList(list[Any]):
    """The launches of a batch, with `body`: the record they were read from (for a backend
    that makes them from it, `BackendSession.fast_launcher`)."""

    body: memoryview


def decode_launch_batch(body: Any) -> LaunchList:
    """The launches of a `launch_batch` encoding (see the module docstring)."""
    mv, launches, count = _start(body, "launch_batch")
    size = len(mv)
    head = _HEAD.unpack_from
    head_size = _HEAD.size
    append = launches.append
    pos = 4
    for index in range(count):
        if pos + head_size > size:
            raise _short("launch_batch", index, head_size, pos, size)
        fn, gx, gy, gz, bx, by, bz, shared, stream, n = head(mv, pos)
        start = pos + head_size
        end = start + n
        pos = end + (-n & 3)
        if pos > size:
            raise _long("launch_batch", index, "params", n, size - start)
        append((fn, gx, gy, gz, bx, by, bz, shared, stream, mv[start:end]))
    _end(pos, size)
    return launches


def decode_graph_launch_batch(body: Any) -> LaunchList:
    """The launches of a `graph_launch_batch` encoding (see the module docstring)."""
    mv, launches, count = _start(body, "graph_launch_batch")
    size = len(mv)
    head = _GRAPH_HEAD.unpack_from
    head_size = _GRAPH_HEAD.size
    append = launches.append
    pos = 4
    for index in range(count):
        if pos + head_size > size:
            raise _short("graph_launch_batch", index, head_size, pos, size)
        exec_, stream, n = head(mv, pos)
        start = pos + head_size
        end = start + n
        pos = end + (-n & 3)
        if pos > size:
            raise _long("graph_launch_batch", index, "host_in", n, size - start)
        append((exec_, stream, mv[start:end]))
    _end(pos, size)
    return launches


def _start(body: Any, name: str) -> tuple[memoryview, LaunchList, int]:
    """(bytes of `body`, the empty list to fill, the array's count, checked)."""
    mv = memoryview(body).cast("B") if not isinstance(body, memoryview) else body
    if mv.format != "B":
        mv = mv.cast("B")
    size = len(mv)
    if size < 4:
        raise XdrDecodeError(f"{name}: need 4 bytes for the count, got {size}")
    (count,) = _COUNT.unpack_from(mv, 0)
    if count > proto.MAX_LAUNCH_BATCH:
        raise XdrDecodeError(f"{name}: length {count} exceeds the bound {proto.MAX_LAUNCH_BATCH}")
    launches = LaunchList()
    launches.body = mv
    return mv, launches, count


def _short(name: str, index: int, need: int, pos: int, size: int) -> XdrDecodeError:
    return XdrDecodeError(
        f"{name}[{index}]: need {need} bytes at offset {pos}, only {size - pos} left"
    )


def _long(name: str, index: int, field: str, n: int, left: int) -> XdrDecodeError:
    return XdrDecodeError(f"{name}[{index}].{field}: length {n} exceeds the {left} bytes left")


def _end(pos: int, size: int) -> None:
    if pos != size:
        raise XdrDecodeError(f"{size - pos} trailing bytes after the value at offset {pos}")


def decode_launch_batch_args(body: Any) -> list[Any]:
    """The handler's argument list (the dispatcher's ARG_DECODERS form)."""
    return [decode_launch_batch(body)]


def decode_graph_launch_batch_args(body: Any) -> list[Any]:
    """The handler's argument list (the dispatcher's ARG_DECODERS form)."""
    return [decode_graph_launch_batch(body)]
