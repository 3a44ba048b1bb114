"""Types of arrays, 3D copies, texture and surface objects, as cuda.bindings has them.

Driver: CUarray, CUtexObject, CUsurfObject, CUDA_ARRAY_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR,
CUDA_MEMCPY2D, CUDA_MEMCPY3D, CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CUDA_RESOURCE_VIEW_DESC.
Runtime: cudaArray_t, cudaTextureObject_t, cudaSurfaceObject_t, cudaChannelFormatDesc,
cudaExtent, cudaPos, cudaPitchedPtr, cudaMemcpy3DParms, cudaResourceDesc, cudaTextureDesc,
cudaResourceViewDesc. Structs are plain objects with cuda-python's field names (the unions of
the resource descriptors as nested objects: `desc.res.array.hArray`, `desc.res.linear.devPtr`).
Array handles are server IDs; texture and surface objects are the values the server's driver
issued (kernels take them by value).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._enums import (
    CUaddress_mode,
    CUarray_format,
    CUfilter_mode,
    CUresourcetype,
    CUresourceViewFormat,
)
from ._runtime_enums import (
    cudaChannelFormatKind,
    cudaMemcpyKind,
    cudaResourceType,
    cudaResourceViewFormat,
    cudaTextureAddressMode,
    cudaTextureFilterMode,
    cudaTextureReadMode,
)
from ._types import Handle
from .runtime_types import Struct

__all__ = [
    "CUarray",
    "CUtexObject",
    "CUsurfObject",
    "CUDA_ARRAY_DESCRIPTOR",
    "CUDA_ARRAY3D_DESCRIPTOR",
    "CUDA_MEMCPY2D",
    "CUDA_MEMCPY3D",
    "CUDA_RESOURCE_DESC",
    "CUDA_TEXTURE_DESC",
    "CUDA_RESOURCE_VIEW_DESC",
    "cudaArray_t",
    "cudaTextureObject_t",
    "cudaSurfaceObject_t",
    "cudaChannelFormatDesc",
    "cudaExtent",
    "cudaPos",
    "cudaPitchedPtr",
    "cudaMemcpy3DParms",
    "cudaResourceDesc",
    "cudaTextureDesc",
    "cudaResourceViewDesc",
]


class CUarray(Handle):
    __slots__ = ()


class CUtexObject(Handle):
    _hex = False
    __slots__ = ()


class CUsurfObject(Handle):
    _hex = False
    __slots__ = ()


class cudaArray_t(Handle):
    __slots__ = ()


class cudaTextureObject_t(Handle):
    _hex = False
    __slots__ = ()


class cudaSurfaceObject_t(Handle):
    _hex = False
    __slots__ = ()


# -- driver structs -------------------------------------------------------------------------


class CUDA_ARRAY_DESCRIPTOR(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "Width": 0,
        "Height": 0,
        "Format": CUarray_format(1),
        "NumChannels": 0,
    }


class CUDA_ARRAY3D_DESCRIPTOR(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "Width": 0,
        "Height": 0,
        "Depth": 0,
        "Format": CUarray_format(1),
        "NumChannels": 0,
        "Flags": 0,
    }


_SIDE_2D = {"XInBytes": 0, "Y": 0, "MemoryType": 0, "Host": 0, "Device": 0, "Array": 0, "Pitch": 0}


class CUDA_MEMCPY2D(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        **{f"src{k}": v for k, v in _SIDE_2D.items()},
        **{f"dst{k}": v for k, v in _SIDE_2D.items()},
        "WidthInBytes": 0,
        "Height": 0,
    }


_SIDE_3D = {
    "XInBytes": 0, "Y": 0, "Z": 0, "LOD": 0, "MemoryType": 0, "Host": 0, "Device": 0,
    "Array": 0, "Pitch": 0, "Height": 0,
}  # fmt: skip


class CUDA_MEMCPY3D(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        **{f"src{k}": v for k, v in _SIDE_3D.items()},
        **{f"dst{k}": v for k, v in _SIDE_3D.items()},
        "WidthInBytes": 0,
        "Height": 0,
        "Depth": 0,
    }


class _DriverArrayRes(Struct):
    hArray: Any
    FIELDS: ClassVar[dict[str, Any]] = {"hArray": 0}


class _DriverMipmapRes(Struct):
    hMipmappedArray: Any
    FIELDS: ClassVar[dict[str, Any]] = {"hMipmappedArray": 0}


class _DriverLinearRes(Struct):
    devPtr: Any
    format: Any
    numChannels: int
    sizeInBytes: int
    FIELDS: ClassVar[dict[str, Any]] = {
        "devPtr": 0, "format": CUarray_format(1), "numChannels": 0, "sizeInBytes": 0,
    }  # fmt: skip


class _DriverPitch2DRes(Struct):
    devPtr: Any
    format: Any
    numChannels: int
    width: int
    height: int
    pitchInBytes: int
    FIELDS: ClassVar[dict[str, Any]] = {
        "devPtr": 0, "format": CUarray_format(1), "numChannels": 0, "width": 0, "height": 0,
        "pitchInBytes": 0,
    }  # fmt: skip


class _DriverRes:
    """The union of CUDA_RESOURCE_DESC: every arm present, as cuda-python has it."""

    def __init__(self) -> None:
        self.array = _DriverArrayRes()
        self.mipmap = _DriverMipmapRes()
        self.linear = _DriverLinearRes()
        self.pitch2D = _DriverPitch2DRes()

    def __repr__(self) -> str:
        return "\n".join(f"{k} :\n{getattr(self, k)!r}" for k in ("array", "linear", "pitch2D"))


class CUDA_RESOURCE_DESC(Struct):
    res: Any
    FIELDS: ClassVar[dict[str, Any]] = {"resType": CUresourcetype(0), "res": None, "flags": 0}

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.res is None:
            self.res = _DriverRes()


class CUDA_TEXTURE_DESC(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "addressMode": [CUaddress_mode(0)] * 3,
        "filterMode": CUfilter_mode(0),
        "flags": 0,
        "maxAnisotropy": 0,
        "mipmapFilterMode": CUfilter_mode(0),
        "mipmapLevelBias": 0.0,
        "minMipmapLevelClamp": 0.0,
        "maxMipmapLevelClamp": 0.0,
        "borderColor": [0.0] * 4,
    }


class CUDA_RESOURCE_VIEW_DESC(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "format": CUresourceViewFormat(0),
        "width": 0,
        "height": 0,
        "depth": 0,
        "firstMipmapLevel": 0,
        "lastMipmapLevel": 0,
        "firstLayer": 0,
        "lastLayer": 0,
    }


# -- runtime structs ------------------------------------------------------------------------


class cudaChannelFormatDesc(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "x": 0, "y": 0, "z": 0, "w": 0, "f": cudaChannelFormatKind(0),
    }  # fmt: skip


class cudaExtent(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {"width": 0, "height": 0, "depth": 0}


class cudaPos(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {"x": 0, "y": 0, "z": 0}


class cudaPitchedPtr(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {"ptr": 0, "pitch": 0, "xsize": 0, "ysize": 0}


class cudaMemcpy3DParms(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "srcArray": None,
        "srcPos": None,
        "srcPtr": None,
        "dstArray": None,
        "dstPos": None,
        "dstPtr": None,
        "extent": None,
        "kind": cudaMemcpyKind(0),
    }

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        for name, make in (
            ("srcPos", cudaPos), ("srcPtr", cudaPitchedPtr), ("dstPos", cudaPos),
            ("dstPtr", cudaPitchedPtr), ("extent", cudaExtent),
        ):  # fmt: skip
            if getattr(self, name) is None:
                setattr(self, name, make())
        for name in ("srcArray", "dstArray"):
            if getattr(self, name) is None:
                setattr(self, name, cudaArray_t(0))


class _RuntimeArrayRes(Struct):
    array: Any
    FIELDS: ClassVar[dict[str, Any]] = {"array": None}


class _RuntimeMipmapRes(Struct):
    mipmap: Any
    FIELDS: ClassVar[dict[str, Any]] = {"mipmap": 0}


class _RuntimeLinearRes(Struct):
    devPtr: Any
    desc: Any
    sizeInBytes: int
    FIELDS: ClassVar[dict[str, Any]] = {"devPtr": 0, "desc": None, "sizeInBytes": 0}


class _RuntimePitch2DRes(Struct):
    devPtr: Any
    desc: Any
    width: int
    height: int
    pitchInBytes: int
    FIELDS: ClassVar[dict[str, Any]] = {
        "devPtr": 0, "desc": None, "width": 0, "height": 0, "pitchInBytes": 0,
    }  # fmt: skip


class _RuntimeRes:
    def __init__(self) -> None:
        self.array = _RuntimeArrayRes(array=cudaArray_t(0))
        self.mipmap = _RuntimeMipmapRes()
        self.linear = _RuntimeLinearRes(desc=cudaChannelFormatDesc())
        self.pitch2D = _RuntimePitch2DRes(desc=cudaChannelFormatDesc())

    def __repr__(self) -> str:
        return "\n".join(f"{k} :\n{getattr(self, k)!r}" for k in ("array", "linear", "pitch2D"))


class cudaResourceDesc(Struct):
    res: Any
    FIELDS: ClassVar[dict[str, Any]] = {"resType": cudaResourceType(0), "res": None, "flags": 0}

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.res is None:
            self.res = _RuntimeRes()


class cudaTextureDesc(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "addressMode": [cudaTextureAddressMode(0)] * 3,
        "filterMode": cudaTextureFilterMode(0),
        "readMode": cudaTextureReadMode(0),
        "sRGB": 0,
        "borderColor": [0.0] * 4,
        "normalizedCoords": 0,
        "maxAnisotropy": 0,
        "mipmapFilterMode": cudaTextureFilterMode(0),
        "mipmapLevelBias": 0.0,
        "minMipmapLevelClamp": 0.0,
        "maxMipmapLevelClamp": 0.0,
        "disableTrilinearOptimization": 0,
        "seamlessCubemap": 0,
    }


class cudaResourceViewDesc(Struct):
    FIELDS: ClassVar[dict[str, Any]] = {
        "format": cudaResourceViewFormat(0),
        "width": 0,
        "height": 0,
        "depth": 0,
        "firstMipmapLevel": 0,
        "lastMipmapLevel": 0,
        "firstLayer": 0,
        "lastLayer": 0,
    }


MEMORY_HOST, MEMORY_DEVICE, MEMORY_ARRAY, MEMORY_UNIFIED = 1, 2, 3, 4  # CUmemorytype
