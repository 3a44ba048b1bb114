"""CUDA arrays, 2D/3D copies and texture/surface objects with cuda-python's runtime API.

A 2D float array is filled from host memory with a pitch wider than its rows, copied into
pitched device memory (cudaMalloc3D) with cudaMemcpy3D and read back; a layered array gets
one layer at a time and is read back whole; a texture object and a surface object are made on
the 2D array, their descriptors read back, and a kernel (compiled with NVRTC) fetches every
texel through the texture object. Everything printed is exact (no timings).
"""

from __future__ import annotations

import numpy as np
from common import check, compile_cubin, device_arch, load_kernel
from cuda.bindings import driver, runtime

SOURCE = """
extern "C" __global__ void tex2d_fetch_f32(cudaTextureObject_t tex, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}
"""

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
    tex_desc.filterMode = runtime.cudaTextureFilterMode.cudaFilterModePoint
    tex_desc.readMode = runtime.cudaTextureReadMode.cudaReadModeElementType
    tex_desc.normalizedCoords = 0
    tex = check(runtime.cudaCreateTextureObject(res, tex_desc, None))
    got = check(runtime.cudaGetTextureObjectResourceDesc(tex))
    got_tex = check(runtime.cudaGetTextureObjectTextureDesc(tex))
    print(f"texture object: resource type {int(got.resType)}, "
          f"same array {int(got.res.array.array) == int(array)}, "
          f"filter mode {int(got_tex.filterMode)}, normalized {got_tex.normalizedCoords}")
    _module, fetch = load_kernel(compile_cubin(SOURCE, "arrays.cu", device_arch()), "tex2d_fetch_f32")
    d_out = check(runtime.cudaMalloc(WIDTH * HEIGHT * 4))
    args = [
        np.array([int(tex)], dtype=np.uint64),
        np.array([int(d_out)], dtype=np.uint64),
        np.array([WIDTH], dtype=np.int32),
        np.array([HEIGHT], dtype=np.int32),
    ]
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    check(driver.cuLaunchKernel(fetch, 1, HEIGHT, 1, 128, 1, 1, 0, 0, params.ctypes.data, 0))
    fetched = np.zeros((HEIGHT, WIDTH), dtype=np.float32)
    check(runtime.cudaMemcpy(
        fetched, d_out, fetched.nbytes, runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
    ))
    fetched_ok = bool(np.array_equal(fetched, host[:, :WIDTH]))
    print(f"a kernel fetched every texel through the texture object: {fetched_ok}")
    check(runtime.cudaFree(d_out))
    surf = check(runtime.cudaCreateSurfaceObject(res))
    got = check(runtime.cudaGetSurfaceObjectResourceDesc(surf))
    print(f"surface object: same array {int(got.res.array.array) == int(array)}")

    check(runtime.cudaDestroySurfaceObject(surf))
    check(runtime.cudaDestroyTextureObject(tex))
    check(runtime.cudaFree(pitched.ptr))
    check(runtime.cudaFreeArray(layered))
    check(runtime.cudaFreeArray(array))
    ok = same and fetched_ok and window[0, 0] == 5 * 80 + 10 and [int(s) for s in stack.sum(axis=(1, 2))] == [
        (i + 1) * LAYER_W * LAYER_H for i in range(LAYERS)
    ]
    print("Test PASSED" if ok else "Test FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
