"""Mipmapped and sparse arrays with cuda-python's runtime and driver APIs.

A sparse float4 mipmapped array reports its sparse tiles and mip tail; a float mipmapped
array gets every level from host memory (each level a 2 x 2 box filter of the one above),
reads them back, and a texture object is made over the whole mipmapped array; the driver
API reads a level's descriptor. Everything printed is exact (no timings).
"""

from __future__ import annotations

import math

import numpy as np
from common import check
from cuda.bindings import driver, runtime

SIZE = 64
H2D = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
FLOAT = runtime.cudaChannelFormatKind.cudaChannelFormatKindFloat


def box_filter(image: np.ndarray) -> np.ndarray:
    h, w = image.shape
    return image.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3), dtype=np.float32)


def main() -> int:
    check(runtime.cudaSetDevice(0))

    float4 = check(runtime.cudaCreateChannelDesc(32, 32, 32, 32, FLOAT))
    levels = int(1.0 + math.log(1000, 2))
    sparse = check(runtime.cudaMallocMipmappedArray(
        float4, runtime.make_cudaExtent(1000, 500, 0), levels, runtime.cudaArraySparse
    ))
    props = check(runtime.cudaMipmappedArrayGetSparseProperties(sparse))
    tile = props.tileExtent
    print(f"sparse float4 1000 x 500, {levels} levels: tiles {tile.width} x {tile.height} x "
          f"{tile.depth}, mip tail from level {props.miptailFirstLevel}, "
          f"{props.miptailSize} bytes")
    check(runtime.cudaFreeMipmappedArray(sparse))

    desc = check(runtime.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
    levels = int(math.log2(SIZE)) + 1
    mipmap = check(runtime.cudaMallocMipmappedArray(
        desc, runtime.make_cudaExtent(SIZE, SIZE, 0), levels, 0
    ))
    images = [np.arange(SIZE * SIZE, dtype=np.float32).reshape(SIZE, SIZE)]
    while len(images) < levels:
        images.append(box_filter(images[-1]))
    for lv, image in enumerate(images):
        level = check(runtime.cudaGetMipmappedArrayLevel(mipmap, lv))
        h, w = image.shape
        check(runtime.cudaMemcpy2DToArray(level, 0, 0, image.ctypes.data, w * 4, w * 4, h, H2D))
    for lv, image in enumerate(images):
        level = check(runtime.cudaGetMipmappedArrayLevel(mipmap, lv))
        _desc, extent, _flags = check(runtime.cudaArrayGetInfo(level))
        out = np.zeros_like(image)
        h, w = image.shape
        check(runtime.cudaMemcpy2DFromArray(out.ctypes.data, w * 4, level, 0, 0, w * 4, h, D2H))
        print(f"level {lv}: {extent.width} x {extent.height}, mean {float(out.mean()):.2f}, "
              f"read back exactly: {bool(np.array_equal(out, image))}")

    res = runtime.cudaResourceDesc()
    res.resType = runtime.cudaResourceType.cudaResourceTypeMipmappedArray
    res.res.mipmap.mipmap = mipmap
    tex = runtime.cudaTextureDesc()
    tex.filterMode = runtime.cudaTextureFilterMode.cudaFilterModeLinear
    tex.mipmapFilterMode = runtime.cudaTextureFilterMode.cudaFilterModeLinear
    tex.maxMipmapLevelClamp = float(levels - 1)
    tex.normalizedCoords = 1
    texture = check(runtime.cudaCreateTextureObject(res, tex, None))
    got = check(runtime.cudaGetTextureObjectResourceDesc(texture))
    same = int(got.res.mipmap.mipmap) == int(mipmap)
    print(f"texture object over the mipmapped array: resource type {int(got.resType)}, "
          f"same mipmapped array {same}")
    check(runtime.cudaDestroyTextureObject(texture))

    level2 = check(driver.cuMipmappedArrayGetLevel(driver.CUmipmappedArray(int(mipmap)), 2))
    d = check(driver.cuArray3DGetDescriptor(level2))
    print(f"driver: level 2 is {d.Width} x {d.Height}, {d.NumChannels} channel")
    check(runtime.cudaFreeMipmappedArray(mipmap))
    print("Test PASSED")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
