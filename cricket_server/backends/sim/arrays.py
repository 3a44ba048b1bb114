"""Arrays, 3D copies, texture and surface objects on the sim backend.

An array is host memory in its own layout: rows of `width * element size` bytes, `height`
rows a slice (layer), `depth` slices, packed. Copies run on the stream as one work item, row
by row. Texture and surface objects hold what they were made from; their values come from one
process-wide counter (a restore may ask for the value an object had, which sim honours while
no live object holds it). Two sim kernels use them (`texture_kernels`); any
other kernel that does is CUDA_ERROR_NOT_SUPPORTED (no host implementation is registered).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cricket_server.backends.arrays import (
    PLACE_DEVICE,
    PLACE_HOST,
    RESOURCE_ARRAY,
    ArrayDesc,
    Copy3D,
    Place,
    ResourceDesc,
    TextureDesc,
    ViewDesc,
)
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)

if TYPE_CHECKING:
    from cricket_server.backends.sim.devmem import SimMemory

__all__ = ["SimArray", "SimArrays"]

_values = itertools.count(1)
_live: set[int] = set()
_live_lock = threading.Lock()
# value -> what the object was made from, for the sim kernels that use them (texture_kernels)
_made: dict[int, tuple[ResourceDesc, TextureDesc | None, ViewDesc | None]] = {}


def object_by_value(value: int) -> tuple[ResourceDesc, TextureDesc | None, ViewDesc | None] | None:
    with _live_lock:
        return _made.get(value)


@dataclass
class SimArray:
    desc: ArrayDesc
    data: bytearray
    live: bool = True

    def offset(self, x: int, y: int, z: int) -> int:
        d = self.desc
        return (z * d.rows + y) * d.row_bytes + x


def _array(obj: object, call: str) -> SimArray:
    if isinstance(obj, SimArray) and obj.live:
        return obj
    raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {obj!r} is not a live array")


class SimArrays:
    """The array, copy and object methods of `SimSession` (a mixin over its helpers)."""

    memory: SimMemory
    _stream: Any
    _objects: dict[int, tuple[ResourceDesc, TextureDesc | None, ViewDesc | None]]

    def array_create(self, desc: ArrayDesc) -> object:
        return SimArray(desc, bytearray(desc.nbytes))

    def array_destroy(self, array: object) -> None:
        _array(array, "cuArrayDestroy").live = False

    def memcpy_3d(self, copy: Copy3D, stream: object | None) -> bytes | None:
        call = "cuMemcpy3D"
        target = self._stream(stream, call)
        target.context.check()
        w, h, d = copy.width, copy.height, copy.depth
        src, dst = copy.src, copy.dst
        host_in = bytes(src.host) if src.kind == PLACE_HOST and src.host is not None else b""
        out = bytearray(w * h * d) if dst.kind == PLACE_HOST else None

        def read(p: Place, y: int, z: int) -> bytes | memoryview:
            if p.kind == PLACE_HOST:
                start = (z * h + y) * w
                return memoryview(host_in)[start : start + w]
            if p.kind == PLACE_DEVICE:
                addr = p.ptr + ((p.z + z) * p.height + p.y + y) * p.pitch + p.x
                return self.memory.read(addr, w, what=call)
            a = _array(p.array, call)
            start = a.offset(p.x, p.y + y, p.z + z)
            return memoryview(a.data)[start : start + w]

        def write(p: Place, y: int, z: int, row: bytes | memoryview) -> None:
            if p.kind == PLACE_HOST:
                assert out is not None
                start = (z * h + y) * w
                out[start : start + w] = row
            elif p.kind == PLACE_DEVICE:
                addr = p.ptr + ((p.z + z) * p.height + p.y + y) * p.pitch + p.x
                self.memory.write(addr, bytes(row), what=call)
            else:
                a = _array(p.array, call)
                start = a.offset(p.x, p.y + y, p.z + z)
                a.data[start : start + w] = bytes(row)

        def run() -> None:
            for z in range(d):
                for y in range(h):
                    write(dst, y, z, read(src, y, z))

        work = target.submit(run)
        if stream is None or out is not None or src.kind == PLACE_HOST:
            work.done.wait()
            target.context.check()
        return None if out is None else bytes(out)

    def _new_value(self, want: int, call: str) -> int:
        with _live_lock:
            if want:
                if want in _live:
                    raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {want:#x} is live")
                value = want
            else:
                value = next(_values)
                while value in _live:
                    value = next(_values)
            _live.add(value)
        return value

    def _objects_table(self) -> dict[int, tuple[ResourceDesc, TextureDesc | None, ViewDesc | None]]:
        table = self.__dict__.get("_objects")
        if table is None:
            table = self.__dict__["_objects"] = {}
        return table

    def tex_object_create(
        self, res: ResourceDesc, tex: TextureDesc, view: ViewDesc | None, want: int = 0
    ) -> int:
        if res.array is not None and res.res_type == RESOURCE_ARRAY:
            _array(res.array, "cuTexObjectCreate")
        value = self._new_value(want, "cuTexObjectCreate")
        self._objects_table()[value] = (res, tex, view)
        with _live_lock:
            _made[value] = (res, tex, view)
        return value

    def surf_object_create(self, res: ResourceDesc, want: int = 0) -> int:
        _array(res.array, "cuSurfObjectCreate")
        value = self._new_value(want, "cuSurfObjectCreate")
        self._objects_table()[value] = (res, None, None)
        with _live_lock:
            _made[value] = (res, None, None)
        return value

    def _drop(self, value: int, call: str) -> None:
        if self._objects_table().pop(value, None) is None:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {value:#x} is not an object")
        with _live_lock:
            _live.discard(value)
            _made.pop(value, None)

    def tex_object_destroy(self, value: int) -> None:
        self._drop(value, "cuTexObjectDestroy")

    def surf_object_destroy(self, value: int) -> None:
        self._drop(value, "cuSurfObjectDestroy")

    def release_objects(self) -> None:
        """Forget every object of the session (close)."""
        table = self._objects_table()
        with _live_lock:
            _live.difference_update(table)
            for value in table:
                _made.pop(value, None)
        table.clear()
