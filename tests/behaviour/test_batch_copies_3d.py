"""cuMemcpy3DBatchAsync / cuMemcpy3DWithAttributesAsync and their cuda forms: pointer and
array operands (client host memory, device memory, CUDA arrays), row lengths and layer
heights in elements, offsets into arrays, in stream order; operations CUDA refuses refused."""

from __future__ import annotations

import numpy as np
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

W, H, D = 16, 4, 3  # the extent of a copy (elements)
STREAM_ORDER = cuda.CUmemcpySrcAccessOrder.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
POINTER = cuda.CUmemcpy3DOperandType.CU_MEMCPY_OPERAND_TYPE_POINTER
ARRAY = cuda.CUmemcpy3DOperandType.CU_MEMCPY_OPERAND_TYPE_ARRAY


def pointer(ptr: int, row: int = 0, layer: int = 0) -> cuda.CUmemcpy3DOperand:
    operand = cuda.CUmemcpy3DOperand()
    operand.type = POINTER
    operand.op.ptr.ptr = ptr
    operand.op.ptr.rowLength = row
    operand.op.ptr.layerHeight = layer
    return operand


def array(handle: cuda.CUarray, x: int = 0, y: int = 0, z: int = 0) -> cuda.CUmemcpy3DOperand:
    operand = cuda.CUmemcpy3DOperand()
    operand.type = ARRAY
    operand.op.array.array = handle
    operand.op.array.offset.x, operand.op.array.offset.y, operand.op.array.offset.z = x, y, z
    return operand


def op(
    src: cuda.CUmemcpy3DOperand, dst: cuda.CUmemcpy3DOperand, w: int = W, h: int = H, d: int = D
) -> cuda.CUDA_MEMCPY3D_BATCH_OP:
    o = cuda.CUDA_MEMCPY3D_BATCH_OP()
    o.src, o.dst = src, dst
    o.extent.width, o.extent.height, o.extent.depth = w, h, d
    o.srcAccessOrder = STREAM_ORDER
    return o


def test_host_to_device_to_host_with_row_lengths_in_one_batch(
    session: cricket_client.Connection,
) -> None:
    """Host (rows of 20 in layers of 6) -> device (tight) -> host (rows of 24), one batch."""
    stream = check(cuda.cuStreamCreate(0))
    src = np.arange(D * 6 * 20, dtype=np.uint8).reshape(D, 6, 20)
    dev = check(cuda.cuMemAlloc(W * H * D))
    back = np.zeros((D, H, 24), np.uint8)
    ops = [
        op(pointer(src.ctypes.data, 20, 6), pointer(int(dev))),
        op(pointer(int(dev)), pointer(back.ctypes.data, 24)),
    ]
    assert cuda.cuMemcpy3DBatchAsync(2, ops, 0, stream) == (cuda.CUresult.CUDA_SUCCESS,)
    check(cuda.cuStreamSynchronize(stream))
    assert np.array_equal(back[:, :, :W], src[:, :H, :W])
    assert not back[:, :, W:].any()
    tight = np.zeros(W * H * D, np.uint8)
    check(cuda.cuMemcpyDtoH(tight, dev, tight.nbytes))
    assert np.array_equal(tight.reshape(D, H, W), src[:, :H, :W])
    check(cuda.cuMemFree(dev))
    check(cuda.cuStreamDestroy(stream))


def test_arrays_with_offsets_in_elements(session: cricket_client.Connection) -> None:
    """Into a 3D float array at offset (2, 1, 1) and back out of it: elements of 4 bytes."""
    desc = cuda.CUDA_ARRAY3D_DESCRIPTOR()
    desc.Width, desc.Height, desc.Depth = 8, 4, 3
    desc.Format, desc.NumChannels = cuda.CUarray_format.CU_AD_FORMAT_FLOAT, 1
    arr = check(cuda.cuArray3DCreate(desc))
    values = np.arange(4 * 2 * 2, dtype=np.float32).reshape(2, 2, 4) + 1
    check(
        cuda.cuMemcpy3DWithAttributesAsync(
            op(pointer(values.ctypes.data), array(arr, 2, 1, 1), 4, 2, 2), 0, 0
        )
    )
    whole = np.zeros((3, 4, 8), np.float32)
    check(
        cuda.cuMemcpy3DWithAttributesAsync(
            op(array(arr), pointer(whole.ctypes.data), 8, 4, 3), 0, 0
        )
    )
    check(cuda.cuCtxSynchronize())
    assert np.array_equal(whole[1:3, 1:3, 2:6], values)
    whole[1:3, 1:3, 2:6] = 0
    assert not whole.any()
    check(cuda.cuArrayDestroy(arr))


def test_operations_cuda_refuses(session: cricket_client.Connection) -> None:
    dev = check(cuda.cuMemAlloc(W * H * D))
    host = np.zeros(W * H * D, np.uint8)
    invalid = (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    good = op(pointer(host.ctypes.data), pointer(int(dev)))
    unordered = op(pointer(host.ctypes.data), pointer(int(dev)))
    unordered.srcAccessOrder = 0
    cases = [
        (0, [good], 0, "numOps is 0"),
        (1, [good], 1, "flags 1"),
        (1, [op(pointer(host.ctypes.data), pointer(int(dev)), d=0)], 0, "zero dimension"),
        (1, [op(pointer(host.ctypes.data, 8), pointer(int(dev)))], 0, "rowLength 8"),
        (1, [op(pointer(host.ctypes.data), pointer(int(dev), 0, 2))], 0, "layerHeight 2"),
        (1, [unordered], 0, "srcAccessOrder 0"),
        (2, [good], 0, "numOps 2 but 1"),
    ]
    for count, ops, flags, why in cases:
        assert cuda.cuMemcpy3DBatchAsync(count, ops, flags, 0) == invalid, why
        assert why in cricket_client.last_error_message()
    check(cuda.cuMemFree(dev))


def test_the_runtime_forms(rt: cricket_client.Connection) -> None:
    ok = (cudart.cudaError_t.cudaSuccess,)
    err, dev = cudart.cudaMalloc(W * H * D)
    assert err == cudart.cudaError_t.cudaSuccess
    src = np.arange(W * H * D, dtype=np.uint8)[::-1].copy()
    back = np.zeros_like(src)

    def rt_op(s: int, d: int) -> cudart.cudaMemcpy3DBatchOp:
        o = cudart.cudaMemcpy3DBatchOp()
        for operand, ptr in ((o.src, s), (o.dst, d)):
            operand.type = cudart.cudaMemcpy3DOperandType.cudaMemcpyOperandTypePointer
            operand.op.ptr.ptr = ptr
        o.extent = cudart.make_cudaExtent(W, H, D)
        o.srcAccessOrder = cudart.cudaMemcpySrcAccessOrder.cudaMemcpySrcAccessOrderStream
        return o

    assert cudart.cudaMemcpy3DBatchAsync(1, [rt_op(src.ctypes.data, int(dev))], 0, 0) == ok
    assert cudart.cudaMemcpy3DWithAttributesAsync(rt_op(int(dev), back.ctypes.data), 0, 0) == ok
    assert cudart.cudaStreamSynchronize(0) == ok
    assert np.array_equal(back, src)
    assert cudart.cudaMemcpy3DBatchAsync(0, [], 0, 0) == (cudart.cudaError_t.cudaErrorInvalidValue,)
    assert cudart.cudaFree(dev) == ok
