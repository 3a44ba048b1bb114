"""Batched 3D copies as a cuda-python program writes them (run through either door by
test_native_batch_copies_3d.py): host -> device with row lengths, device -> array at an
offset, array -> host, one operation with attributes, and a refused batch."""

import cuda.bindings.driver as cu
import numpy as np


def ok(result):
    assert result[0] == cu.CUresult.CUDA_SUCCESS, result
    return result[1] if len(result) == 2 else result[1:]


def operand(kind, ptr=0, row=0, array=None, x=0, y=0, z=0):
    o = cu.CUmemcpy3DOperand()
    o.type = kind
    if array is None:
        o.op.ptr.ptr, o.op.ptr.rowLength = ptr, row
    else:
        o.op.array.array = array
        o.op.array.offset.x, o.op.array.offset.y, o.op.array.offset.z = x, y, z
    return o


def batch_op(src, dst, w, h, d):
    o = cu.CUDA_MEMCPY3D_BATCH_OP()
    o.src, o.dst = src, dst
    o.extent.width, o.extent.height, o.extent.depth = w, h, d
    o.srcAccessOrder = cu.CUmemcpySrcAccessOrder.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
    return o


POINTER = cu.CUmemcpy3DOperandType.CU_MEMCPY_OPERAND_TYPE_POINTER
ARRAY = cu.CUmemcpy3DOperandType.CU_MEMCPY_OPERAND_TYPE_ARRAY
ok(cu.cuInit(0))
ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
ok(cu.cuCtxSetCurrent(ctx))
stream = ok(cu.cuStreamCreate(0))
src = np.arange(2 * 4 * 20, dtype=np.uint8).reshape(2, 4, 20)
dev = ok(cu.cuMemAlloc(2 * 4 * 16))
desc = cu.CUDA_ARRAY3D_DESCRIPTOR()
desc.Width, desc.Height, desc.Depth = 32, 8, 4
desc.Format, desc.NumChannels = cu.CUarray_format.CU_AD_FORMAT_UNSIGNED_INT8, 1
arr = ok(cu.cuArray3DCreate(desc))
back = np.zeros((2, 4, 16), np.uint8)
ops = [
    batch_op(operand(POINTER, src.ctypes.data, 20), operand(POINTER, int(dev)), 16, 4, 2),
    batch_op(operand(POINTER, int(dev)), operand(ARRAY, array=arr, x=3, y=2, z=1), 16, 4, 2),
]
ok(cu.cuMemcpy3DBatchAsync(2, ops, 0, stream))
ok(cu.cuMemcpy3DWithAttributesAsync(
    batch_op(operand(ARRAY, array=arr, x=3, y=2, z=1), operand(POINTER, back.ctypes.data), 16, 4, 2), 0, stream))
ok(cu.cuStreamSynchronize(stream))
print("3d batch round trip", bool((back == src[:, :, :16]).all()))
empty = batch_op(operand(POINTER, src.ctypes.data), operand(POINTER, int(dev)), 0, 4, 2)
print("zero extent", cu.cuMemcpy3DBatchAsync(1, [empty], 0, stream)[0].name)
ok(cu.cuArrayDestroy(arr))
ok(cu.cuMemFree(dev))
print("done")
