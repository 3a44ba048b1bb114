"""Texture and surface objects, remote, on both backends: made on arrays, linear and pitched
memory in the runtime's and the driver's forms; what they were made from reads back as given;
destroyed ones and another session's are refused."""

from __future__ import annotations

from typing import Any

import pytest
from behaviour_helpers import foreign_handle_message, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess
FLOAT = cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat
UNSIGNED = cudart.cudaChannelFormatKind.cudaChannelFormatKindUnsigned


def _array(flags: int = 0) -> Any:
    desc = ok(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
    return ok(cudart.cudaMallocArray(desc, 32, 16, flags))


def _texture_desc() -> Any:
    tex = cudart.cudaTextureDesc()
    tex.addressMode = [
        cudart.cudaTextureAddressMode.cudaAddressModeClamp,
        cudart.cudaTextureAddressMode.cudaAddressModeBorder,
        cudart.cudaTextureAddressMode.cudaAddressModeClamp,
    ]
    tex.filterMode = cudart.cudaTextureFilterMode.cudaFilterModeLinear
    tex.readMode = cudart.cudaTextureReadMode.cudaReadModeElementType
    tex.normalizedCoords = 1
    tex.borderColor = [0.5, 0.25, 0.0, 1.0]
    return tex


def test_texture_object_on_an_array_reads_back_its_descriptors(
    session: cricket_client.Connection,
) -> None:
    array = _array()
    res = cudart.cudaResourceDesc()
    res.resType = cudart.cudaResourceType.cudaResourceTypeArray
    res.res.array.array = array
    tex = ok(cudart.cudaCreateTextureObject(res, _texture_desc(), None))
    assert int(tex) != 0
    got = ok(cudart.cudaGetTextureObjectResourceDesc(tex))
    assert got.resType == cudart.cudaResourceType.cudaResourceTypeArray
    assert int(got.res.array.array) == int(array)
    t = ok(cudart.cudaGetTextureObjectTextureDesc(tex))
    assert [int(m) for m in t.addressMode] == [1, 3, 1]
    assert t.filterMode == cudart.cudaTextureFilterMode.cudaFilterModeLinear
    assert t.readMode == cudart.cudaTextureReadMode.cudaReadModeElementType
    assert t.normalizedCoords == 1
    assert list(t.borderColor) == [0.5, 0.25, 0.0, 1.0]
    ok(cudart.cudaDestroyTextureObject(tex))
    err, _ = cudart.cudaGetTextureObjectResourceDesc(tex)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    assert "not a texture object of this session" in cricket_client.last_error_message()
    ok(cudart.cudaFreeArray(array))


def test_texture_object_on_pitched_memory_with_a_view(session: cricket_client.Connection) -> None:
    dptr, pitch = ok(cudart.cudaMallocPitch(64 * 4, 16))
    res = cudart.cudaResourceDesc()
    res.resType = cudart.cudaResourceType.cudaResourceTypePitch2D
    res.res.pitch2D.devPtr = dptr
    res.res.pitch2D.desc = ok(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
    res.res.pitch2D.width, res.res.pitch2D.height, res.res.pitch2D.pitchInBytes = 64, 16, pitch
    view = cudart.cudaResourceViewDesc()
    view.format = cudart.cudaResourceViewFormat.cudaResViewFormatFloat1
    view.width, view.height = 64, 16
    tex = ok(cudart.cudaCreateTextureObject(res, _texture_desc(), view))
    got = ok(cudart.cudaGetTextureObjectResourceDesc(tex))
    p2 = got.res.pitch2D
    assert (int(p2.devPtr), p2.width, p2.height, p2.pitchInBytes) == (dptr, 64, 16, pitch)
    assert (p2.desc.x, p2.desc.f) == (32, FLOAT)
    v = ok(cudart.cudaGetTextureObjectResourceViewDesc(tex))
    assert (v.format, v.width, v.height) == (
        cudart.cudaResourceViewFormat.cudaResViewFormatFloat1,
        64,
        16,
    )
    ok(cudart.cudaDestroyTextureObject(tex))
    ok(cudart.cudaFree(dptr))


def test_driver_texture_object_on_linear_memory(session: cricket_client.Connection) -> None:
    n = 256
    dptr = ok(cudart.cudaMalloc(n * 4))
    res = cuda.CUDA_RESOURCE_DESC()
    res.resType = cuda.CUresourcetype.CU_RESOURCE_TYPE_LINEAR
    res.res.linear.devPtr = dptr
    res.res.linear.format = cuda.CUarray_format.CU_AD_FORMAT_UNSIGNED_INT32
    res.res.linear.numChannels = 1
    res.res.linear.sizeInBytes = n * 4
    tex = cuda.CUDA_TEXTURE_DESC()
    tex.filterMode = cuda.CUfilter_mode.CU_TR_FILTER_MODE_POINT
    tex.flags = cuda.CU_TRSF_READ_AS_INTEGER
    obj = ok(cuda.cuTexObjectCreate(res, tex, None))
    got = ok(cuda.cuTexObjectGetResourceDesc(obj))
    assert got.resType == cuda.CUresourcetype.CU_RESOURCE_TYPE_LINEAR
    lin = got.res.linear
    assert (int(lin.devPtr), int(lin.format), lin.numChannels, lin.sizeInBytes) == (
        dptr,
        3,
        1,
        n * 4,
    )
    t = ok(cuda.cuTexObjectGetTextureDesc(obj))
    assert t.flags == cuda.CU_TRSF_READ_AS_INTEGER
    ok(cuda.cuTexObjectDestroy(obj))
    # a resource outside the session's memory is refused before the driver sees it
    res.res.linear.sizeInBytes = n * 4 + (1 << 20)
    err, none = cuda.cuTexObjectCreate(res, tex, None)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE and none is None
    ok(cudart.cudaFree(dptr))


def test_surface_object_on_a_load_store_array(session: cricket_client.Connection) -> None:
    array = _array(cudart.cudaArraySurfaceLoadStore)
    res = cudart.cudaResourceDesc()
    res.resType = cudart.cudaResourceType.cudaResourceTypeArray
    res.res.array.array = array
    surf = ok(cudart.cudaCreateSurfaceObject(res))
    got = ok(cudart.cudaGetSurfaceObjectResourceDesc(surf))
    assert int(got.res.array.array) == int(array)
    drv = ok(cuda.cuSurfObjectGetResourceDesc(surf))
    assert int(drv.res.array.hArray) == int(array)
    # a surface object is not a texture object
    err, _ = cudart.cudaGetTextureObjectResourceDesc(surf)
    assert err != OK
    ok(cudart.cudaDestroySurfaceObject(surf))
    ok(cudart.cudaFreeArray(array))


def test_another_sessions_texture_object_is_refused(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    with other_session.active():
        array = _array()
        res = cudart.cudaResourceDesc()
        res.resType = cudart.cudaResourceType.cudaResourceTypeArray
        res.res.array.array = array
        theirs = ok(cudart.cudaCreateTextureObject(res, _texture_desc(), None))
    err, _ = cudart.cudaGetTextureObjectResourceDesc(theirs)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    (err,) = cudart.cudaDestroyTextureObject(theirs)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    # nor can this session make one on their array
    res = cudart.cudaResourceDesc()
    res.resType = cudart.cudaResourceType.cudaResourceTypeArray
    res.res.array.array = array
    err, _ = cudart.cudaCreateTextureObject(res, _texture_desc(), None)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    assert foreign_handle_message() in cricket_client.last_error_message()
    with other_session.active():
        ok(cudart.cudaGetTextureObjectResourceDesc(theirs))  # still theirs
        ok(cudart.cudaDestroyTextureObject(theirs))
        ok(cudart.cudaFreeArray(array))


@pytest.mark.parametrize("bits", [(8, 8, 8, 0), (32, 16, 0, 0)])
def test_channel_descriptors_without_a_format_are_refused(
    session: cricket_client.Connection, bits: tuple[int, int, int, int]
) -> None:
    desc = ok(cudart.cudaCreateChannelDesc(*bits, UNSIGNED))
    err, array = cudart.cudaMallocArray(desc, 4, 4, 0)
    assert err == cudart.cudaError_t.cudaErrorInvalidChannelDescriptor and array is None
