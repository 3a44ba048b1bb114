"""Value types of cuda.bindings that the client holds alone behave as cuda-python's do where a
program can tell: they exist under the same names, print the same, copy nested structs on
assignment, share the bytes of a union, keep host buffers set in them alive, and give the C
sizes; the driver's error texts are the driver's short ones."""

from __future__ import annotations

import ctypes
import textwrap

import numpy as np
import pytest

from cricket_client import driver as cuda
from cricket_client import runtime as cudart


def test_scalar_and_pointer_types_print_and_bound_as_cuda_python() -> None:
    assert str(cuda.cuuint32_t(7)) == "<cuuint32_t 7>"
    assert int(cuda.cuuint32_t(4294967295)) == 4294967295
    with pytest.raises(OverflowError):
        cuda.cuuint32_t(1 << 32)
    b2d = cuda.CUoccupancyB2DSize(12345)
    assert str(b2d) == "<CUoccupancyB2DSize 0x3039>" and hex(b2d) == "0x3039"


def test_structs_print_their_fields_nested_as_cuda_python() -> None:
    expected = textwrap.dedent("""
        params :
            fence :
                value : 0
            nvSciSync :
                fence : 0x0
                reserved : 0
            keyedMutex :
                key : 0
            reserved : [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        flags : 0
        reserved : [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    """).strip()
    assert repr(cuda.CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS()) == expected
    kernel = repr(cuda.CUDA_KERNEL_NODE_PARAMS_st()).splitlines()
    assert kernel[0] == "func : <CUfunction 0x0>" and kernel[-2:] == [
        "kernelParams : 0",
        "extra : 0",
    ]


def test_nested_structs_are_assigned_by_value() -> None:
    extent = cudart.cudaExtent()
    extent.width, extent.height, extent.depth = 4, 5, 6
    desc = cudart.cudaExternalMemoryMipmappedArrayDesc()
    desc.extent = extent
    desc.extent.width = 5  # changes the copy inside desc, not `extent`
    assert (extent.width, desc.extent.width) == (4, 5)
    desc.extent = extent
    assert desc.extent.width == 4
    one, two = cuda.CUexecAffinityParam_st(), cuda.CUexecAffinityParam_st()
    two.param.smCount.val = 11
    one.param = two.param
    two.param.smCount.val = 3
    assert one.param.smCount.val == 11


def test_union_arms_share_their_bytes() -> None:
    frame = cudart.cudaEglFrame()
    frame.frame.pArray = [1, 2, cudart.cudaArray_t(4)]
    pitched = frame.frame.pPitch[0]
    assert (pitched.ptr, pitched.pitch, pitched.xsize, pitched.ysize) == (1, 2, 4, 0)
    pitched.pitch = 123
    frame.frame.pPitch = [pitched] * 3
    pitched.pitch = 1234  # the union holds copies
    assert [int(p.pitch) for p in frame.frame.pPitch] == [123, 123, 123]
    driver_frame = cuda.CUeglFrame()
    driver_frame.frame.pArray = [cuda.CUarray(4), 2, 3]
    assert [int(a) for a in driver_frame.frame.pArray] == [4, 2, 3]
    assert driver_frame.frame.pPitch == [4, 2, 3]


def test_small_members_convert_as_c_does() -> None:
    handle = cuda.CUipcMemHandle_st()
    handle.reserved = [-1] * 64
    assert handle.reserved[0] == 255
    params = cuda.CUstreamBatchMemOpParams()
    params.waitValue.value64 = 666
    assert int(params.waitValue.value64) == 666
    assert int(cuda.CUmemDecompressParams_st().dstActBytes) == 0
    node = cudart.cudaExternalSemaphoreSignalNodeParams()
    node.extSemArray = [0, 123]
    assert node.extSemArray == [
        cudart.cudaExternalSemaphore_t(0),
        cudart.cudaExternalSemaphore_t(123),
    ]


def test_a_host_buffer_set_in_a_struct_stays_alive_and_reads_back_as_its_address() -> None:
    params = cuda.CUgraphNodeParams()
    host = np.full(1024, 2, dtype=np.uint8)
    params.memcpy.copyParams.dstHost = host
    address = host.ctypes.data
    del host
    assert params.memcpy.copyParams.dstHost == address
    view = np.ctypeslib.as_array(
        ctypes.cast(address, ctypes.POINTER(ctypes.c_uint8)), shape=(1024,)
    )
    assert np.all(view == 2)


def test_sizeof_gives_the_c_sizes() -> None:
    assert cudart.sizeof(cudart.dim3) == 12
    assert cudart.sizeof(cudart.cudaSurfaceObject_t) == 8
    assert cudart.sizeof(cudart.cudaStream_t) == 8
    with pytest.raises(TypeError):
        cudart.sizeof(int)


def test_driver_error_texts_are_the_drivers_short_ones() -> None:
    assert cuda.cuGetErrorString(cuda.CUresult.CUDA_SUCCESS) == (
        cuda.CUresult.CUDA_SUCCESS,
        b"no error",
    )
    text = cuda.cuGetErrorString(cuda.CUresult.CUDA_ERROR_INVALID_DEVICE)[1]
    assert text == b"invalid device ordinal"
