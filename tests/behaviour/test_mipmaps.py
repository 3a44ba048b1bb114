"""Mipmapped and sparse arrays, remote, on both backends: a sparse float4 mipmapped array's
sparse properties (the H200's answer: 64 x 64 x 1 tiles, mip tail from level 3 of 196608
bytes), levels that every copy takes (runtime and driver forms), the refusals CUDA gives
(destroying a level, a level past the last, a non-sparse array's sparse properties, another
session's mipmapped array), and a texture object over a mipmapped array."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from behaviour_helpers import check, foreign_handle_message

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
FLOAT = cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat
ARRAY = cuda.CUmemorytype.CU_MEMORYTYPE_ARRAY
HOST = cuda.CUmemorytype.CU_MEMORYTYPE_HOST



def extent(w: int, h: int, d: int = 0) -> Any:
    return cudart.make_cudaExtent(w, h, d)


def test_sparse_float4_mipmap_has_the_h200_sparse_properties(
    session: cricket_client.Connection,
) -> None:
    desc = check(cudart.cudaCreateChannelDesc(32, 32, 32, 32, FLOAT))
    levels = int(1.0 + math.log(1000, 2))
    mipmap = check(cudart.cudaMallocMipmappedArray(desc, extent(1000, 500), levels, cudart.cudaArraySparse))
    props = check(cudart.cudaMipmappedArrayGetSparseProperties(mipmap))
    tile = props.tileExtent
    assert (tile.width, tile.height, tile.depth) == (64, 64, 1)
    assert (props.miptailFirstLevel, props.miptailSize, props.flags) == (3, 196608, 0)
    level = check(cudart.cudaGetMipmappedArrayLevel(mipmap, levels - 1))
    _desc, ext, _flags = check(cudart.cudaArrayGetInfo(level))
    assert (ext.width, ext.height) == (1, 1)
    err, _ = cudart.cudaGetMipmappedArrayLevel(mipmap, levels)
    assert err == cudart.cudaError_t.cudaErrorInvalidValue
    check(cudart.cudaFreeMipmappedArray(mipmap))


def test_too_many_levels_are_refused(session: cricket_client.Connection) -> None:
    desc = check(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
    err, mipmap = cudart.cudaMallocMipmappedArray(desc, extent(16, 8), 6, 0)
    assert err == cudart.cudaError_t.cudaErrorInvalidValue and mipmap is None


def test_runtime_levels_take_2d_copies(session: cricket_client.Connection) -> None:
    desc = check(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
    mipmap = check(cudart.cudaMallocMipmappedArray(desc, extent(40, 24), 4, 0))
    for lv in range(4):
        level = check(cudart.cudaGetMipmappedArrayLevel(mipmap, lv))
        _d, ext, _f = check(cudart.cudaArrayGetInfo(level))
        w, h = 40 >> lv, 24 >> lv
        assert (ext.width, ext.height) == (w, h)
        host = np.arange(w * h, dtype=np.float32).reshape(h, w) + 1000 * lv
        check(cudart.cudaMemcpy2DToArray(level, 0, 0, host, w * 4, w * 4, h, H2D))
    for lv in range(4):
        level = check(cudart.cudaGetMipmappedArrayLevel(mipmap, lv))
        w, h = 40 >> lv, 24 >> lv
        out = np.zeros((h, w), dtype=np.float32)
        check(cudart.cudaMemcpy2DFromArray(out, w * 4, level, 0, 0, w * 4, h, D2H))
        assert np.array_equal(out, np.arange(w * h, dtype=np.float32).reshape(h, w) + 1000 * lv)
    check(cudart.cudaFreeMipmappedArray(mipmap))


def _driver_mipmap(w: int, h: int, levels: int, flags: int = 0) -> Any:
    d = cuda.CUDA_ARRAY3D_DESCRIPTOR()
    d.Width, d.Height, d.Depth = w, h, 0
    d.Format = cuda.CUarray_format.CU_AD_FORMAT_UNSIGNED_INT8
    d.NumChannels, d.Flags = 4, flags
    return check(cuda.cuMipmappedArrayCreate(d, levels))


def test_driver_levels_take_3d_copies_and_go_with_their_mipmap(
    session: cricket_client.Connection,
) -> None:
    mipmap = _driver_mipmap(32, 16, 3)
    level = check(cuda.cuMipmappedArrayGetLevel(mipmap, 1))
    got = check(cuda.cuArray3DGetDescriptor(level))
    assert (got.Width, got.Height, got.NumChannels) == (16, 8, 4)
    row = 16 * 4
    host = np.arange(8 * row, dtype=np.uint8).reshape(8, row)
    c = cuda.CUDA_MEMCPY3D()
    c.srcMemoryType, c.srcHost, c.srcPitch, c.srcHeight = HOST, host, row, 8
    c.dstMemoryType, c.dstArray = ARRAY, level
    c.WidthInBytes, c.Height, c.Depth = row, 8, 1
    check(cuda.cuMemcpy3D(c))
    out = np.zeros_like(host)
    c = cuda.CUDA_MEMCPY3D()
    c.srcMemoryType, c.srcArray = ARRAY, level
    c.dstMemoryType, c.dstHost, c.dstPitch, c.dstHeight = HOST, out, row, 8
    c.WidthInBytes, c.Height, c.Depth = row, 8, 1
    check(cuda.cuMemcpy3D(c))
    assert np.array_equal(out, host)
    (err,) = cuda.cuArrayDestroy(level)
    assert err != cuda.CUresult.CUDA_SUCCESS
    check(cuda.cuMipmappedArrayDestroy(mipmap))
    err, _ = cuda.cuArray3DGetDescriptor(level)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE


def test_sparse_properties_of_arrays(session: cricket_client.Connection) -> None:
    d = cuda.CUDA_ARRAY3D_DESCRIPTOR()
    d.Width, d.Height, d.Depth = 1024, 1024, 0
    d.Format, d.NumChannels = cuda.CUarray_format.CU_AD_FORMAT_FLOAT, 1
    d.Flags = cuda.CUDA_ARRAY3D_SPARSE
    sparse = check(cuda.cuArray3DCreate(d))
    props = check(cuda.cuArrayGetSparseProperties(sparse))
    tile = props.tileExtent
    assert (tile.width, tile.height, tile.depth) == (128, 128, 1)
    check(cuda.cuArrayDestroy(sparse))
    d.Flags = 0
    plain = check(cuda.cuArray3DCreate(d))
    err, _ = cuda.cuArrayGetSparseProperties(plain)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_VALUE
    check(cuda.cuArrayDestroy(plain))


def test_texture_object_over_a_mipmapped_array(session: cricket_client.Connection) -> None:
    mipmap = _driver_mipmap(64, 64, 7)
    res = cuda.CUDA_RESOURCE_DESC()
    res.resType = cuda.CUresourcetype.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
    res.res.mipmap.hMipmappedArray = mipmap
    tex = cuda.CUDA_TEXTURE_DESC()
    tex.filterMode = cuda.CUfilter_mode.CU_TR_FILTER_MODE_POINT
    tex.mipmapFilterMode = cuda.CUfilter_mode.CU_TR_FILTER_MODE_LINEAR
    tex.maxMipmapLevelClamp = 6.0
    tex.flags = 0x2  # normalized coordinates
    obj = check(cuda.cuTexObjectCreate(res, tex, None))
    got = check(cuda.cuTexObjectGetResourceDesc(obj))
    assert got.resType == cuda.CUresourcetype.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
    assert int(got.res.mipmap.hMipmappedArray) == int(mipmap)
    check(cuda.cuTexObjectDestroy(obj))
    check(cuda.cuMipmappedArrayDestroy(mipmap))


def test_another_sessions_mipmapped_array_is_refused(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    desc = check(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
    with other_session.active():
        theirs = check(cudart.cudaMallocMipmappedArray(desc, extent(16, 16), 2, 0))
        their_level = check(cudart.cudaGetMipmappedArrayLevel(theirs, 0))
    err, _ = cudart.cudaGetMipmappedArrayLevel(theirs, 0)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    assert foreign_handle_message() in cricket_client.last_error_message()
    host = np.zeros((16, 16), dtype=np.float32)
    (err,) = cudart.cudaMemcpy2DToArray(their_level, 0, 0, host, 64, 64, 16, H2D)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    (err,) = cudart.cudaFreeMipmappedArray(theirs)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    with other_session.active():
        check(cudart.cudaFreeMipmappedArray(theirs))  # still theirs


def test_memory_requirements_of_deferred_mapping_arrays(session: cricket_client.Connection) -> None:
    dev = check(cuda.cuDeviceGet(0))
    d = cuda.CUDA_ARRAY3D_DESCRIPTOR()
    d.Width, d.Height, d.Depth = 300, 200, 0
    d.Format, d.NumChannels = cuda.CUarray_format.CU_AD_FORMAT_FLOAT, 1
    d.Flags = cuda.CUDA_ARRAY3D_DEFERRED_MAPPING
    array = check(cuda.cuArray3DCreate(d))
    req = check(cuda.cuArrayGetMemoryRequirements(array, dev))
    assert req.size >= 300 * 200 * 4 and req.alignment > 0
    check(cuda.cuArrayDestroy(array))
    mipmap = check(cuda.cuMipmappedArrayCreate(d, 4))
    req = check(cuda.cuMipmappedArrayGetMemoryRequirements(mipmap, dev))
    assert req.size >= 300 * 200 * 4 and req.alignment > 0
    check(cuda.cuMipmappedArrayDestroy(mipmap))
