"""Batched 3D copies (cuMemcpy3DBatchAsync, cuMemcpy3DWithAttributesAsync and their cuda
forms): each operation is the stream-ordered 3D copy cuMemcpy3DAsync makes of it, in the
order given, so client host memory on either side moves its bytes as cuMemcpy3D does.

An operand is a pointer (device memory or the client's host memory, as unified addressing
decides; `rowLength` and `layerHeight` in elements, 0 for tightly packed) or an array (an
offset in elements). The element size is 1 between pointers, else the array's (both arrays'
must match). Checked as CUDA checks them: `numOps` is not 0, `flags` is 0, every extent is
non-zero, a row length or layer height is 0 or covers the extent, the source access order is
one of STREAM, DURING_API_CALL and ANY.

| operand type | fields read                                  |
|--------------|----------------------------------------------|
| POINTER (1)  | op.ptr.ptr, op.ptr.rowLength, op.ptr.layerHeight |
| ARRAY (2)    | op.array.array, op.array.offset.x/.y/.z        |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ._args import size_t
from ._enums import CUmemcpy3DOperandType, CUmemcpySrcAccessOrder
from ._runtime_enums import cudaMemcpy3DOperandType, cudaMemcpySrcAccessOrder
from ._types import as_int
from ._types_vmm import CUmemLocation
from .array_types import cudaExtent
from .connection import Connection, get_connection
from .runtime_types import Struct

__all__ = [
    "CUoffset3D",
    "CUextent3D",
    "CUmemcpy3DOperand",
    "CUDA_MEMCPY3D_BATCH_OP",
    "cudaOffset3D",
    "cudaMemcpy3DOperand",
    "cudaMemcpy3DBatchOp",
    "cuMemcpy3DBatchAsync",
    "cuMemcpy3DWithAttributesAsync",
    "cudaMemcpy3DBatchAsync",
    "cudaMemcpy3DWithAttributesAsync",
]

_POINTER, _ARRAY = 1, 2
_ACCESS_ORDERS = (1, 2, 3)  # CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, _DURING_API_CALL, _ANY


class CUoffset3D(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {"x": 0, "y": 0, "z": 0}


class CUextent3D(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {"width": 0, "height": 0, "depth": 0}


class _PointerOperand(Struct):
    locHint: Any
    FIELDS: ClassVar[dict[str, Any]] = {"ptr": 0, "rowLength": 0, "layerHeight": 0, "locHint": None}

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.locHint is None:
            self.locHint = CUmemLocation()


class _ArrayOperand(Struct):
    offset: Any
    FIELDS: ClassVar[dict[str, Any]] = {"array": 0, "offset": None}
    _offset: ClassVar[type] = CUoffset3D

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.offset is None:
            self.offset = self._offset()


class _OperandUnion(Struct):
    """The `op` union: both arms present (only the one `type` names is read)."""

    ptr: Any
    array: Any
    FIELDS: ClassVar[dict[str, Any]] = {"ptr": None, "array": None}
    _array: ClassVar[type] = _ArrayOperand

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.ptr = self.ptr if self.ptr is not None else _PointerOperand()
        self.array = self.array if self.array is not None else self._array()


class CUmemcpy3DOperand(Struct):
    op: Any
    FIELDS: ClassVar[dict[str, Any]] = {"type": CUmemcpy3DOperandType(_POINTER), "op": None}
    _union: ClassVar[type] = _OperandUnion

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.op is None:
            self.op = self._union()


class CUDA_MEMCPY3D_BATCH_OP(Struct):
    src: Any
    dst: Any
    extent: Any
    FIELDS: ClassVar[dict[str, Any]] = {
        "src": None, "dst": None, "extent": None,
        "srcAccessOrder": CUmemcpySrcAccessOrder(0), "flags": 0,
    }  # fmt: skip
    _operand: ClassVar[type] = CUmemcpy3DOperand
    _extent: ClassVar[type] = CUextent3D

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.src = self.src if self.src is not None else self._operand()
        self.dst = self.dst if self.dst is not None else self._operand()
        self.extent = self.extent if self.extent is not None else self._extent()


class cudaOffset3D(CUoffset3D):
    pass


class _RuntimeArrayOperand(_ArrayOperand):
    _offset: ClassVar[type] = cudaOffset3D


class _RuntimeOperandUnion(_OperandUnion):
    _array: ClassVar[type] = _RuntimeArrayOperand


class cudaMemcpy3DOperand(CUmemcpy3DOperand):
    FIELDS: ClassVar[dict[str, Any]] = {"type": cudaMemcpy3DOperandType(_POINTER), "op": None}
    _union: ClassVar[type] = _RuntimeOperandUnion


class cudaMemcpy3DBatchOp(CUDA_MEMCPY3D_BATCH_OP):
    FIELDS: ClassVar[dict[str, Any]] = {
        **CUDA_MEMCPY3D_BATCH_OP.FIELDS, "srcAccessOrder": cudaMemcpySrcAccessOrder(0),
    }  # fmt: skip
    _operand: ClassVar[type] = cudaMemcpy3DOperand
    _extent: ClassVar[type] = cudaExtent


class _Refused(Exception):
    """An operation CUDA refuses: CUDA_ERROR_INVALID_VALUE with this message."""


def _element_size(conn: Connection, operand: Any) -> int:
    """The array's element size for an array operand, 0 for a pointer."""
    from .driver_arrays import array_info

    if int(operand.type) != _ARRAY:
        return 0
    err, info = array_info(conn, as_int(operand.op.array.array))
    if err or info is None:
        raise _Refused(f"array {as_int(operand.op.array.array):#x} is not an array of this session")
    return info.element_size


def _side(conn: Connection, name: str, operand: Any, size: int, height: int) -> Any:
    """The Side of copy_3d an operand makes (`size`: bytes an element)."""
    from .driver import _is_buffer
    from .driver_arrays import MEMORY_ARRAY, MEMORY_DEVICE, MEMORY_HOST, Side

    kind = int(operand.type)
    if kind == _ARRAY:
        at = operand.op.array
        off = at.offset
        return Side(
            kind=MEMORY_ARRAY,
            array=as_int(at.array),
            x=int(off.x) * size,
            y=int(off.y),
            z=int(off.z),
        )
    if kind != _POINTER:
        raise _Refused(f"{name}.type {kind} is neither a pointer nor an array operand")
    p = operand.op.ptr
    row, layer = int(p.rowLength), int(p.layerHeight)
    pitch, rows = row * size, layer
    if _is_buffer(p.ptr):
        return Side(kind=MEMORY_HOST, host=p.ptr, pitch=pitch, height=rows)
    addr = as_int(p.ptr)
    if conn.is_device_address(addr):
        return Side(kind=MEMORY_DEVICE, ptr=addr, pitch=pitch, height=rows)
    return Side(kind=MEMORY_HOST, host=addr, pitch=pitch, height=rows)


def _copy(conn: Connection, call: str, i: int, op: Any, stream: int) -> int:
    """One operation, in stream order; CUresult."""
    from dataclasses import replace

    from .driver_arrays import copy_3d

    if op is None:
        raise _Refused(f"opList[{i}] is None")
    ext = op.extent
    width, height, depth = int(ext.width), int(ext.height), int(ext.depth)
    if not (width and height and depth):
        raise _Refused(f"opList[{i}].extent {width}x{height}x{depth} has a zero dimension")
    if int(op.srcAccessOrder) not in _ACCESS_ORDERS:
        raise _Refused(
            f"opList[{i}].srcAccessOrder {int(op.srcAccessOrder)} is not a source access order"
        )
    if int(op.flags):
        raise _Refused(f"opList[{i}].flags {int(op.flags)} (must be 0)")
    src_size, dst_size = _element_size(conn, op.src), _element_size(conn, op.dst)
    if src_size and dst_size and src_size != dst_size:
        raise _Refused(f"opList[{i}]: array element sizes differ ({src_size} and {dst_size} bytes)")
    size = src_size or dst_size or 1
    sides = []
    for name, operand in ((f"opList[{i}].src", op.src), (f"opList[{i}].dst", op.dst)):
        if int(operand.type) == _POINTER:
            p = operand.op.ptr
            if int(p.rowLength) and int(p.rowLength) < width:
                raise _Refused(
                    f"{name}: rowLength {int(p.rowLength)} is less than the width {width}"
                )
            if int(p.layerHeight) and int(p.layerHeight) < height:
                raise _Refused(
                    f"{name}: layerHeight {int(p.layerHeight)} is less than the height {height}"
                )
        side = _side(conn, name, operand, size, height)
        if side.kind != 3 and side.pitch == 0:  # a pointer, tightly packed rows
            side = replace(side, pitch=width * size)
        if side.kind != 3 and side.height == 0:
            side = replace(side, height=height)
        sides.append(side)
    return copy_3d(conn, call, sides[0], sides[1], width * size, height, depth, stream)


def _batch(
    call: str, numOps: int, opList: Sequence[Any] | None, flags: int, hStream: Any
) -> tuple[Any]:
    from .driver import _INVALID_VALUE, _SUCCESS, _out
    from .driver_arrays import wire_stream
    from .driver_graphs import _fail

    conn = get_connection()
    n = size_t(numOps, f"{call}: numOps")
    ops = list(opList or [])
    try:
        if not n:
            raise _Refused("numOps is 0")
        if len(ops) < n:
            raise _Refused(f"numOps {n} but {len(ops)} operations given")
        if as_int(flags):
            raise _Refused(f"flags {as_int(flags)} (must be 0)")
        stream = wire_stream(hStream)
        for i, op in enumerate(ops[:n]):
            err = _copy(conn, call, i, op, stream)
            if err:
                return _out(err)  # type: ignore[no-any-return]
    except _Refused as exc:
        return _fail(conn, _INVALID_VALUE, f"{call}: {exc}", 0)  # type: ignore[return-value]
    return (_SUCCESS,)


def cuMemcpy3DBatchAsync(
    numOps: int, opList: Sequence[Any] | None, flags: int, hStream: Any
) -> tuple[Any]:
    return _batch("cuMemcpy3DBatchAsync", numOps, opList, flags, hStream)


def cuMemcpy3DWithAttributesAsync(op: Any, flags: int, hStream: Any) -> tuple[Any]:
    """One operation: a batch of one."""
    return _batch("cuMemcpy3DWithAttributesAsync", 1, [op], flags, hStream)


def cudaMemcpy3DBatchAsync(
    numOps: int, opList: Sequence[Any] | None, flags: int, stream: Any
) -> tuple[Any]:
    from .runtime_graphs import _run

    return _run(lambda: _batch("cudaMemcpy3DBatchAsync", numOps, opList, flags, stream), 0)  # type: ignore[return-value]


def cudaMemcpy3DWithAttributesAsync(op: Any, flags: int, stream: Any) -> tuple[Any]:
    from .runtime_graphs import _run

    return _run(lambda: _batch("cudaMemcpy3DWithAttributesAsync", 1, [op], flags, stream), 0)  # type: ignore[return-value]
