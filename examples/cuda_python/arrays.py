"""CUDA arrays, 2D/3D copies and texture/surface objects with cuda-python's runtime API.

A 2D float array is filled from host memory with a pitch wider than its rows, copied into
pitched device memory (cudaMalloc3D) with cudaMemcpy3D and read back; a layered array gets
one layer at a time and is read back whole; a texture object and a surface object are made on
the 2D array and their descriptors read back. Everything printed is exact (no timings).
"""

from __future__ import annotations

import numpy as np
from common import check
from cuda.bindings import runtime

WIDTH, HEIGHT = 64, 32
LAYER_W, LAYER_H, LAYERS = 16, 8, 4


def copy_3d(**fields: object) -> None:
    params = runtime.cudaMemcpy3DParms()
    for name, value in fields.items():
        setattr(params, name, value)
    check(runtime.cudaMemcpy3D(params))


def main() -> int:
    check(runtime.cudaSetDevice(0))
    desc = check(runtime.cudaCreateChannelDesc(
        32, 0, 0, 0, runtime.cudaChannelFormatKind.cudaChannelFormatKindFloat
    ))
    flags = runtime.cudaArraySurfaceLoadStore
    array = check(runtime.cudaMallocArray(desc, WIDTH, HEIGHT, flags))
    got_desc, extent, got_flags = check(runtime.cudaArrayGetInfo(array))
    print(f"2D array: {extent.width} x {extent.height} x {extent.depth}, "
          f"{got_desc.x}-bit channel kind {int(got_desc.f)}, flags {int(got_flags)}")

    # host rows 80 floats apart; only the first WIDTH of each row go to the array
    host = np.arange(HEIGHT * 80, dtype=np.float32).reshape(HEIGHT, 80)
    check(runtime.cudaMemcpy2DToArray(
        array, 0, 0, host, 80 * 4, WIDTH * 4, HEIGHT, runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    ))
    pitched = check(runtime.cudaMalloc3D(runtime.make_cudaExtent(WIDTH * 4, HEIGHT, 1)))
    copy_3d(srcArray=array, dstPtr=pitched, extent=runtime.make_cudaExtent(WIDTH, HEIGHT, 1),
            kind=runtime.cudaMemcpyKind.cudaMemcpyDeviceToDevice)
    back = np.zeros((HEIGHT, WIDTH), dtype=np.float32)
    check(runtime.cudaMemcpy2D(
        back, WIDTH * 4, pitched.ptr, pitched.pitch, WIDTH * 4, HEIGHT,
        runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost,
    ))
    same = bool(np.array_equal(back, host[:, :WIDTH]))
    print(f"host -> array -> pitched device memory -> host: {same}")
    window = np.zeros((4, 8), dtype=np.float32)
    check(runtime.cudaMemcpy2DFromArray(
        window, 8 * 4, array, 10 * 4, 5, 8 * 4, 4, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
    ))
    print(f"window at column 10, row 5: first {window[0, 0]:.0f}, last {window[-1, -1]:.0f}")

    layered = check(runtime.cudaMalloc3DArray(
        desc, runtime.make_cudaExtent(LAYER_W, LAYER_H, LAYERS), runtime.cudaArrayLayered
    ))
    for layer in range(LAYERS):
        plane = np.full((LAYER_H, LAYER_W), layer + 1, dtype=np.float32)
        copy_3d(srcPtr=runtime.make_cudaPitchedPtr(plane.ctypes.data, LAYER_W * 4, LAYER_W, LAYER_H),
                dstArray=layered, dstPos=runtime.make_cudaPos(0, 0, layer),
                extent=runtime.make_cudaExtent(LAYER_W, LAYER_H, 1),
                kind=runtime.cudaMemcpyKind.cudaMemcpyHostToDevice)
    stack = np.zeros((LAYERS, LAYER_H, LAYER_W), dtype=np.float32)
    copy_3d(srcArray=layered,
            dstPtr=runtime.make_cudaPitchedPtr(stack.ctypes.data, LAYER_W * 4, LAYER_W, LAYER_H),
            extent=runtime.make_cudaExtent(LAYER_W, LAYER_H, LAYERS),
            kind=runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost)
    print(f"layer sums: {[int(s) for s in stack.sum(axis=(1, 2))]}")

    res = runtime.cudaResourceDesc()
    res.resType = runtime.cudaResourceType.cudaResourceTypeArray
    res.res.array.array = array
    tex_desc = runtime.cudaTextureDesc()
    tex_desc.addressMode = [runtime.cudaTextureAddressMode.cudaAddressModeClamp] * 3
    tex_desc.filterMode = runtime.cudaTextureFilterMode.cudaFilterModeLinear
    tex_desc.readMode = runtime.cudaTextureReadMode.cudaReadModeElementType
    tex_desc.normalizedCoords = 1
    tex = check(runtime.cudaCreateTextureObject(res, tex_desc, None))
    got = check(runtime.cudaGetTextureObjectResourceDesc(tex))
    got_tex = check(runtime.cudaGetTextureObjectTextureDesc(tex))
    print(f"texture object: resource type {int(got.resType)}, "
          f"same array {int(got.res.array.array) == int(array)}, "
          f"filter mode {int(got_tex.filterMode)}, normalized {got_tex.normalizedCoords}")
    surf = check(runtime.cudaCreateSurfaceObject(res))
    got = check(runtime.cudaGetSurfaceObjectResourceDesc(surf))
    print(f"surface object: same array {int(got.res.array.array) == int(array)}")

    check(runtime.cudaDestroySurfaceObject(surf))
    check(runtime.cudaDestroyTextureObject(tex))
    check(runtime.cudaFree(pitched.ptr))
    check(runtime.cudaFreeArray(layered))
    check(runtime.cudaFreeArray(array))
    ok = same and window[0, 0] == 5 * 80 + 10 and [int(s) for s in stack.sum(axis=(1, 2))] == [
        (i + 1) * LAYER_W * LAYER_H for i in range(LAYERS)
    ]
    print("Test PASSED" if ok else "Test FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
