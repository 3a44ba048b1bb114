"""CUDA arrays and 2D/3D copies through them, remote, on both backends: 1D, 2D, 3D and
layered arrays filled and read back from host memory, pitched device memory and other arrays,
in the runtime's forms (cudaMallocArray, cudaMemcpy2DToArray, cudaMemcpy3D, ...) and the
driver's (cuArray3DCreate, cuMemcpy2D, cuMemcpy3D, cuMemcpyHtoA, ...); descriptors as made;
another session's array refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check, foreign_handle_message, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess
H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
D2D = cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice
FLOAT = cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat
UNSIGNED = cudart.cudaChannelFormatKind.cudaChannelFormatKindUnsigned


def float_desc() -> Any:
    return ok(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))


def test_channel_descriptors_and_small_structs_are_local() -> None:
    desc = ok(cudart.cudaCreateChannelDesc(8, 8, 8, 8, UNSIGNED))
    assert (desc.x, desc.y, desc.z, desc.w, desc.f) == (8, 8, 8, 8, UNSIGNED)
    pos = cudart.make_cudaPos(1, 2, 3)
    assert (pos.x, pos.y, pos.z) == (1, 2, 3)
    ext = cudart.make_cudaExtent(4, 5, 6)
    assert (ext.width, ext.height, ext.depth) == (4, 5, 6)
    pp = cudart.make_cudaPitchedPtr(0x1000, 512, 100, 7)
    assert (pp.ptr, pp.pitch, pp.xsize, pp.ysize) == (0x1000, 512, 100, 7)


def test_2d_array_round_trip_through_host_with_offsets(session: cricket_client.Connection) -> None:
    width, height = 37, 11
    array = ok(cudart.cudaMallocArray(float_desc(), width, height, 0))
    desc, extent, flags = ok(cudart.cudaArrayGetInfo(array))
    assert (desc.x, desc.f, extent.width, extent.height, extent.depth, flags) == (
        32, FLOAT, width, height, 0, 0,
    )  # fmt: skip
    host = np.arange(height * 40, dtype=np.float32).reshape(height, 40)  # 40 floats a row
    ok(cudart.cudaMemcpy2DToArray(array, 0, 0, host, 40 * 4, width * 4, height, H2D))
    out = np.zeros((height, width), dtype=np.float32)
    ok(cudart.cudaMemcpy2DFromArray(out, width * 4, array, 0, 0, width * 4, height, D2H))
    assert np.array_equal(out, host[:, :width])
    # a window: columns 3..8 (bytes 12..32) of rows 2..6
    part = np.zeros((4, 5), dtype=np.float32)
    ok(cudart.cudaMemcpy2DFromArray(part, 5 * 4, array, 3 * 4, 2, 5 * 4, 4, D2H))
    assert np.array_equal(part, host[2:6, 3:8])
    # leaving the array is refused, naming it
    (err,) = cudart.cudaMemcpy2DFromArray(part, 5 * 4, array, (width - 2) * 4, 0, 5 * 4, 1, D2H)
    assert err == cudart.cudaError_t.cudaErrorInvalidValue
    assert "leave array" in cricket_client.last_error_message()
    ok(cudart.cudaFreeArray(array))


def test_1d_array_linear_copies_runtime_and_driver(session: cricket_client.Connection) -> None:
    n = 1000
    array = ok(cudart.cudaMallocArray(float_desc(), n, 0, 0))
    data = np.random.default_rng(1).random(n, dtype=np.float32)
    ok(cudart.cudaMemcpyToArray(array, 0, 0, data, data.nbytes, H2D))
    out = np.zeros(n, dtype=np.float32)
    check(cuda.cuMemcpyAtoH(out, array, 0, out.nbytes))
    assert np.array_equal(out, data)
    check(cuda.cuMemcpyHtoA(array, 40, np.full(10, 7, np.float32), 40))
    out2 = np.zeros(n, dtype=np.float32)
    ok(cudart.cudaMemcpyFromArray(out2, array, 0, 0, out2.nbytes, D2H))
    expect = data.copy()
    expect[10:20] = 7
    assert np.array_equal(out2, expect)
    ok(cudart.cudaFreeArray(array))


def test_linear_copies_span_the_rows_of_a_2d_array(session: cricket_client.Connection) -> None:
    """cudaMemcpyToArray takes the rows one after another: a copy from the middle of a row
    continues at the start of the next."""
    array = ok(
        cudart.cudaMallocArray(ok(cudart.cudaCreateChannelDesc(8, 0, 0, 0, UNSIGNED)), 16, 4, 0)
    )
    data = np.arange(64, dtype=np.uint8)
    ok(cudart.cudaMemcpy2DToArray(array, 0, 0, np.zeros(64, np.uint8), 16, 16, 4, H2D))
    ok(cudart.cudaMemcpyToArray(array, 5, 1, data[:30], 30, H2D))
    out = np.zeros(64, dtype=np.uint8)
    ok(cudart.cudaMemcpy2DFromArray(out, 16, array, 0, 0, 16, 4, D2H))
    expect = np.zeros(64, np.uint8)
    expect[16 + 5 : 16 + 5 + 30] = data[:30]
    assert np.array_equal(out, expect)
    ok(cudart.cudaFreeArray(array))


def _parms(**fields: Any) -> Any:
    p = cudart.cudaMemcpy3DParms()
    for name, value in fields.items():
        setattr(p, name, value)
    return p


def test_3d_array_host_array_pitched_device_host(session: cricket_client.Connection) -> None:
    w, h, d = 9, 5, 4
    extent = cudart.make_cudaExtent(w, h, d)
    array = ok(cudart.cudaMalloc3DArray(float_desc(), extent, 0))
    host = np.arange(w * h * d, dtype=np.float32).reshape(d, h, w)
    ok(cudart.cudaMemcpy3D(_parms(
        srcPtr=cudart.make_cudaPitchedPtr(host.ctypes.data, w * 4, w, h), dstArray=array,
        extent=extent, kind=H2D,
    )))  # fmt: skip
    pitched = ok(cudart.cudaMalloc3D(cudart.make_cudaExtent(w * 4, h, d)))
    assert pitched.pitch >= w * 4 and pitched.ysize == h
    stream = ok(cudart.cudaStreamCreate())
    ok(
        cudart.cudaMemcpy3DAsync(
            _parms(srcArray=array, dstPtr=pitched, extent=extent, kind=D2D), stream
        )
    )
    ok(cudart.cudaStreamSynchronize(stream))
    out = np.zeros((d, h, w), dtype=np.float32)
    ok(cudart.cudaMemcpy3D(_parms(
        srcPtr=pitched, dstPtr=cudart.make_cudaPitchedPtr(out.ctypes.data, w * 4, w, h),
        extent=cudart.make_cudaExtent(w * 4, h, d), kind=D2H,
    )))  # fmt: skip
    assert np.array_equal(out, host)
    # one element out of the middle, positions in elements of the array
    one = np.zeros(1, dtype=np.float32)
    ok(cudart.cudaMemcpy3D(_parms(
        srcArray=array, srcPos=cudart.make_cudaPos(3, 2, 1),
        dstPtr=cudart.make_cudaPitchedPtr(one.ctypes.data, 4, 1, 1),
        extent=cudart.make_cudaExtent(1, 1, 1), kind=D2H,
    )))  # fmt: skip
    assert one[0] == host[1, 2, 3]
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFree(pitched.ptr))
    ok(cudart.cudaFreeArray(array))


def test_layered_array_keeps_its_layers(session: cricket_client.Connection) -> None:
    w, h, layers = 8, 4, 3
    array = ok(cudart.cudaMalloc3DArray(
        float_desc(), cudart.make_cudaExtent(w, h, layers), cudart.cudaArrayLayered,
    ))  # fmt: skip
    _desc, extent, flags = ok(cudart.cudaArrayGetInfo(array))
    assert (extent.width, extent.height, extent.depth) == (w, h, layers)
    assert flags & cudart.cudaArrayLayered
    for layer in range(layers):
        data = np.full((h, w), layer + 1, dtype=np.float32)
        ok(cudart.cudaMemcpy3D(_parms(
            srcPtr=cudart.make_cudaPitchedPtr(data.ctypes.data, w * 4, w, h), dstArray=array,
            dstPos=cudart.make_cudaPos(0, 0, layer), extent=cudart.make_cudaExtent(w, h, 1), kind=H2D,
        )))  # fmt: skip
    out = np.zeros((layers, h, w), dtype=np.float32)
    ok(cudart.cudaMemcpy3D(_parms(
        srcArray=array, dstPtr=cudart.make_cudaPitchedPtr(out, w * 4, w, h),  # a buffer
        extent=cudart.make_cudaExtent(w, h, layers), kind=D2H,
    )))  # fmt: skip
    assert [float(out[i].min()) for i in range(layers)] == [1.0, 2.0, 3.0]
    assert [float(out[i].max()) for i in range(layers)] == [1.0, 2.0, 3.0]
    ok(cudart.cudaFreeArray(array))


def test_driver_forms_array_to_pitched_device_and_back(session: cricket_client.Connection) -> None:
    w, h = 24, 6
    d = cuda.CUDA_ARRAY3D_DESCRIPTOR()
    d.Width, d.Height, d.Depth = w, h, 0
    d.Format = cuda.CUarray_format.CU_AD_FORMAT_UNSIGNED_INT16
    d.NumChannels = 2
    array = check(cuda.cuArray3DCreate(d))
    got = check(cuda.cuArray3DGetDescriptor(array))
    assert (got.Width, got.Height, got.Depth, got.NumChannels, got.Flags) == (w, h, 0, 2, 0)
    assert got.Format == cuda.CUarray_format.CU_AD_FORMAT_UNSIGNED_INT16
    row = w * 4  # two 16-bit channels
    host = np.arange(h * row, dtype=np.uint8).reshape(h, row)
    c = cuda.CUDA_MEMCPY2D()
    c.srcMemoryType, c.srcHost, c.srcPitch = cuda.CUmemorytype.CU_MEMORYTYPE_HOST, host, row
    c.dstMemoryType, c.dstArray = cuda.CUmemorytype.CU_MEMORYTYPE_ARRAY, array
    c.WidthInBytes, c.Height = row, h
    check(cuda.cuMemcpy2D(c))
    dptr, pitch = check(cuda.cuMemAllocPitch(row, h, 4))
    c = cuda.CUDA_MEMCPY2D()
    c.srcMemoryType, c.srcArray = cuda.CUmemorytype.CU_MEMORYTYPE_ARRAY, array
    c.dstMemoryType, c.dstDevice, c.dstPitch = cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE, dptr, pitch
    c.WidthInBytes, c.Height = row, h
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuMemcpy2DAsync(c, stream))
    check(cuda.cuStreamSynchronize(stream))
    out = np.zeros((h, row), dtype=np.uint8)
    c3 = cuda.CUDA_MEMCPY3D()
    c3.srcMemoryType, c3.srcDevice, c3.srcPitch, c3.srcHeight = (
        cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE, dptr, pitch, h,
    )  # fmt: skip
    c3.dstMemoryType, c3.dstHost, c3.dstPitch, c3.dstHeight = (
        cuda.CUmemorytype.CU_MEMORYTYPE_HOST, out, row, h,
    )  # fmt: skip
    c3.WidthInBytes, c3.Height, c3.Depth = row, h, 1
    check(cuda.cuMemcpy3D(c3))
    assert np.array_equal(out, host)
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuMemFree(dptr))
    check(cuda.cuArrayDestroy(array))


def test_array_to_array_and_1d_driver_create(session: cricket_client.Connection) -> None:
    d = cuda.CUDA_ARRAY_DESCRIPTOR()
    d.Width, d.Height, d.Format, d.NumChannels = 64, 0, cuda.CUarray_format.CU_AD_FORMAT_FLOAT, 1
    a = check(cuda.cuArrayCreate(d))
    b = check(cuda.cuArrayCreate(d))
    got = check(cuda.cuArrayGetDescriptor(a))
    assert (got.Width, got.Height, got.NumChannels) == (64, 0, 1)
    data = np.linspace(0, 1, 64, dtype=np.float32)
    check(cuda.cuMemcpyHtoA(a, 0, data, data.nbytes))
    check(cuda.cuMemcpyAtoA(b, 0, a, 0, data.nbytes))
    dev = check(cuda.cuMemAlloc(data.nbytes))
    check(cuda.cuMemcpyAtoD(dev, b, 0, data.nbytes))
    out = np.zeros_like(data)
    check(cuda.cuMemcpyDtoH(out, dev, out.nbytes))
    assert np.array_equal(out, data)
    check(cuda.cuMemFree(dev))
    check(cuda.cuArrayDestroy(a))
    check(cuda.cuArrayDestroy(b))


def test_a_destroyed_array_is_gone(session: cricket_client.Connection) -> None:
    array = ok(cudart.cudaMallocArray(float_desc(), 4, 4, 0))
    ok(cudart.cudaFreeArray(array))
    (err,) = cuda.cuArrayDestroy(array)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    assert "unknown or already destroyed" in cricket_client.last_error_message()


def test_another_sessions_array_is_refused(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    with other_session.active():
        theirs = ok(cudart.cudaMallocArray(float_desc(), 16, 16, 0))
    host = np.zeros((16, 16), dtype=np.float32)
    (err,) = cudart.cudaMemcpy2DToArray(theirs, 0, 0, host, 64, 64, 16, H2D)
    assert err == cudart.cudaError_t.cudaErrorInvalidResourceHandle
    assert foreign_handle_message() in cricket_client.last_error_message()
    (err,) = cuda.cuArrayDestroy(theirs)
    assert err == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    with other_session.active():
        ok(cudart.cudaFreeArray(theirs))  # still theirs


@pytest.mark.parametrize("fmt", [0x30, 0x00])
def test_formats_without_a_layout_are_refused(session: cricket_client.Connection, fmt: int) -> None:
    d = cuda.CUDA_ARRAY3D_DESCRIPTOR()
    d.Width, d.Height, d.NumChannels = 4, 4, 1
    d.Format = fmt
    err, array = cuda.cuArray3DCreate(d)
    assert err != cuda.CUresult.CUDA_SUCCESS and array is None


def test_async_copies_and_array_to_array_on_a_stream(session: cricket_client.Connection) -> None:
    w, h = 20, 6
    a = ok(cudart.cudaMallocArray(float_desc(), w, h, 0))
    b = ok(cudart.cudaMallocArray(float_desc(), w, h, 0))
    stream = ok(cudart.cudaStreamCreate())
    host = np.arange(w * h, dtype=np.float32).reshape(h, w)
    dev, pitch = ok(cudart.cudaMallocPitch(w * 4, h))
    ok(cudart.cudaMemcpy2D(dev, pitch, host, w * 4, w * 4, h, H2D))
    ok(cudart.cudaMemcpy2DToArrayAsync(a, 0, 0, dev, pitch, w * 4, h, D2D, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    ok(cudart.cudaMemcpy2DArrayToArray(b, 4, 1, a, 0, 0, (w - 1) * 4, h - 1, D2D))
    out = np.zeros((h, w), dtype=np.float32)
    ok(cudart.cudaMemcpy2DFromArrayAsync(out, w * 4, b, 0, 0, w * 4, h, D2H, stream))
    ok(cudart.cudaStreamSynchronize(stream))
    assert np.array_equal(out[1:, 1:], host[: h - 1, : w - 1])
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFree(dev))
    ok(cudart.cudaFreeArray(a))
    ok(cudart.cudaFreeArray(b))


def test_destroying_a_context_frees_its_arrays_and_objects(
    session: cricket_client.Connection,
) -> None:
    memory = check(cuda.cuMemAlloc(1 << 20))  # in the primary context: it stays
    dev = check(cuda.cuDeviceGet(0))
    ctx = check(cuda.cuCtxCreate(None, 0, dev))
    d = cuda.CUDA_ARRAY3D_DESCRIPTOR()
    d.Width, d.Height, d.Format, d.NumChannels = 8, 8, cuda.CUarray_format.CU_AD_FORMAT_FLOAT, 1
    array = check(cuda.cuArray3DCreate(d))
    res = cuda.CUDA_RESOURCE_DESC()
    res.resType = cuda.CUresourcetype.CU_RESOURCE_TYPE_ARRAY
    res.res.array.hArray = array
    on_array = check(cuda.cuTexObjectCreate(res, cuda.CUDA_TEXTURE_DESC(), None))
    res = cuda.CUDA_RESOURCE_DESC()
    res.resType = cuda.CUresourcetype.CU_RESOURCE_TYPE_LINEAR
    res.res.linear.devPtr = memory
    res.res.linear.format = cuda.CUarray_format.CU_AD_FORMAT_FLOAT
    res.res.linear.numChannels = 1
    res.res.linear.sizeInBytes = 1 << 20
    on_memory = check(cuda.cuTexObjectCreate(res, cuda.CUDA_TEXTURE_DESC(), None))
    check(cuda.cuCtxDestroy(ctx))
    for result in (
        cuda.cuArray3DGetDescriptor(array),
        cuda.cuTexObjectGetResourceDesc(on_array),
        cuda.cuTexObjectGetResourceDesc(on_memory),
    ):
        assert result[0] == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
