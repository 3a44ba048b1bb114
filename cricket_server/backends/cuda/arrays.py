"""Arrays, 3D copies, texture and surface objects on the cuda backend (cuda-python 13).

Arrays are CUarrays (cuArray3DCreate), copies one cuMemcpy3D(Async) each: host bytes are the
call's (packed: pitch = width, height = rows), copied into a buffer of the server's first, and
a copy with a host side waits for its stream before returning. Texture and surface objects are
the driver's (cuTexObjectCreate / cuSurfObjectCreate): their values are what kernels take, so
the client gets them as they are. The driver chooses them; `want` (restore) cannot be asked
for, so the session compares. Everything left is destroyed in `close`, before the contexts.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..arrays import (
    PLACE_ARRAY,
    PLACE_DEVICE,
    PLACE_HOST,
    RESOURCE_ARRAY,
    RESOURCE_LINEAR,
    RESOURCE_MIPMAPPED_ARRAY,
    ArrayDesc,
    Copy3D,
    Place,
    ResourceDesc,
    TextureDesc,
    ViewDesc,
)
from ..base import CudaError
from ._driver import call, driver

__all__ = ["CudaArrays"]


def _address(buf: bytearray) -> int:
    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf)) if buf else 0


def array3d_descriptor(desc: ArrayDesc) -> Any:
    """A CUDA_ARRAY3D_DESCRIPTOR of `desc`."""
    d = driver.CUDA_ARRAY3D_DESCRIPTOR()
    d.Width, d.Height, d.Depth = desc.width, desc.height, desc.depth
    d.Format = driver.CUarray_format(desc.format)
    d.NumChannels = desc.channels
    d.Flags = desc.flags
    return d


def resource_desc(res: ResourceDesc) -> Any:
    """A CUDA_RESOURCE_DESC of `res` (array objects are CUarrays already)."""
    rd = driver.CUDA_RESOURCE_DESC()
    rd.resType = driver.CUresourcetype(res.res_type)
    if res.res_type == RESOURCE_ARRAY:
        rd.res.array.hArray = res.array
    elif res.res_type == RESOURCE_MIPMAPPED_ARRAY:
        rd.res.mipmap.hMipmappedArray = res.array
    elif res.res_type == RESOURCE_LINEAR:
        rd.res.linear.devPtr = driver.CUdeviceptr(res.ptr)
        rd.res.linear.format = driver.CUarray_format(res.format)
        rd.res.linear.numChannels = res.channels
        rd.res.linear.sizeInBytes = res.size
    else:
        rd.res.pitch2D.devPtr = driver.CUdeviceptr(res.ptr)
        rd.res.pitch2D.format = driver.CUarray_format(res.format)
        rd.res.pitch2D.numChannels = res.channels
        rd.res.pitch2D.width = res.width
        rd.res.pitch2D.height = res.height
        rd.res.pitch2D.pitchInBytes = res.pitch
    rd.flags = res.flags
    return rd


def texture_desc(tex: TextureDesc) -> Any:
    td = driver.CUDA_TEXTURE_DESC()
    td.addressMode = [driver.CUaddress_mode(m) for m in tex.address_mode]
    td.filterMode = driver.CUfilter_mode(tex.filter_mode)
    td.flags = tex.flags
    td.maxAnisotropy = tex.max_anisotropy
    td.mipmapFilterMode = driver.CUfilter_mode(tex.mipmap_filter_mode)
    td.mipmapLevelBias = tex.mipmap_level_bias
    td.minMipmapLevelClamp = tex.min_mipmap_level_clamp
    td.maxMipmapLevelClamp = tex.max_mipmap_level_clamp
    td.borderColor = list(tex.border_color)
    return td


def view_desc(view: ViewDesc) -> Any:
    vd = driver.CUDA_RESOURCE_VIEW_DESC()
    vd.format = driver.CUresourceViewFormat(view.format)
    vd.width, vd.height, vd.depth = view.width, view.height, view.depth
    vd.firstMipmapLevel, vd.lastMipmapLevel = view.first_mipmap_level, view.last_mipmap_level
    vd.firstLayer, vd.lastLayer = view.first_layer, view.last_layer
    return vd


def copy_params(copy: Copy3D, host: dict[str, bytearray]) -> Any:
    """A CUDA_MEMCPY3D of `copy`; host sides point into the buffers of `host` ("src"/"dst")."""
    p = driver.CUDA_MEMCPY3D()
    for side, place in (("src", copy.src), ("dst", copy.dst)):
        _side(p, side, place, copy, host.get(side))
    p.WidthInBytes, p.Height, p.Depth = copy.width, copy.height, copy.depth
    return p


def _side(p: Any, side: str, place: Place, copy: Copy3D, buf: bytearray | None) -> None:
    setattr(p, f"{side}MemoryType", driver.CUmemorytype(place.kind))
    if place.kind == PLACE_HOST:
        assert buf is not None
        setattr(p, f"{side}Host", _address(buf))
        setattr(p, f"{side}Pitch", copy.width)
        setattr(p, f"{side}Height", copy.height)
        return
    setattr(p, f"{side}XInBytes", place.x)
    setattr(p, f"{side}Y", place.y)
    setattr(p, f"{side}Z", place.z)
    if place.kind == PLACE_DEVICE:
        setattr(p, f"{side}Device", driver.CUdeviceptr(place.ptr))
        setattr(p, f"{side}Pitch", place.pitch)
        setattr(p, f"{side}Height", place.height)
    elif place.kind == PLACE_ARRAY:
        setattr(p, f"{side}Array", place.array)


class CudaArrays:
    """The array, copy and object methods of `CudaSession` (a mixin over its helpers)."""

    _state: Any
    _stream: Any
    _dev: int

    def _made(self) -> dict[str, dict[int, tuple[int, Any]]]:
        """key -> (device, object) of every array, texture and surface object left."""
        made = self.__dict__.get("_array_objects")
        if made is None:
            made = self.__dict__["_array_objects"] = {"arrays": {}, "tex": {}, "surf": {}}
        return made

    def array_create(self, desc: ArrayDesc) -> object:
        self._state()
        array = call(driver.cuArray3DCreate, array3d_descriptor(desc))
        self._made()["arrays"][int(array)] = (self._dev, array)
        return array

    def array_destroy(self, array: object) -> None:
        dev, _ = self._made()["arrays"].get(int(array), (self._dev, array))  # type: ignore[call-overload]
        self._state(dev)
        try:
            call(driver.cuArrayDestroy, array)
        finally:
            self._made()["arrays"].pop(int(array), None)  # type: ignore[call-overload]
            self._state()

    def memcpy_3d(self, copy: Copy3D, stream: object | None) -> bytes | None:
        self._state()
        host: dict[str, bytearray] = {}
        if copy.src.kind == PLACE_HOST:
            host["src"] = bytearray(copy.src.host or b"")
        if copy.dst.kind == PLACE_HOST:
            host["dst"] = bytearray(copy.width * copy.height * copy.depth)
        params = copy_params(copy, host)
        if stream is None:
            call(driver.cuMemcpy3D, params)
        else:
            hstream = self._stream(stream)
            call(driver.cuMemcpy3DAsync, params, hstream)
            if host:  # the buffers are ours: keep them until the copy is done
                call(driver.cuStreamSynchronize, hstream)
        return bytes(host["dst"]) if "dst" in host else None

    def tex_object_create(
        self, res: ResourceDesc, tex: TextureDesc, view: ViewDesc | None, want: int = 0
    ) -> int:
        self._state()
        vd = None if view is None else view_desc(view)
        obj = call(driver.cuTexObjectCreate, resource_desc(res), texture_desc(tex), vd)
        value = int(obj)
        self._made()["tex"][value] = (self._dev, obj)
        return value

    def tex_object_destroy(self, value: int) -> None:
        dev, obj = self._made()["tex"].get(value, (self._dev, driver.CUtexObject(value)))
        self._state(dev)
        try:
            call(driver.cuTexObjectDestroy, obj)
        finally:
            self._made()["tex"].pop(value, None)
            self._state()

    def surf_object_create(self, res: ResourceDesc, want: int = 0) -> int:
        self._state()
        obj = call(driver.cuSurfObjectCreate, resource_desc(res))
        value = int(obj)
        self._made()["surf"][value] = (self._dev, obj)
        return value

    def surf_object_destroy(self, value: int) -> None:
        dev, obj = self._made()["surf"].get(value, (self._dev, driver.CUsurfObject(value)))
        self._state(dev)
        try:
            call(driver.cuSurfObjectDestroy, obj)
        finally:
            self._made()["surf"].pop(value, None)
            self._state()

    def release_arrays(self) -> list[CudaError]:
        """Destroy every object and array left (close, before the contexts go)."""
        errors: list[CudaError] = []
        made = self._made()
        for table, destroy in (
            ("tex", driver.cuTexObjectDestroy),
            ("surf", driver.cuSurfObjectDestroy),
            ("arrays", driver.cuArrayDestroy),
        ):
            for dev, obj in made[table].values():
                try:
                    self._state(dev)
                    call(destroy, obj)
                except CudaError as exc:
                    errors.append(exc)
            made[table].clear()
        return errors
