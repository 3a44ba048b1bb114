"""Kernels read a texture object and write a surface object made remotely, on both backends
(sim has host implementations of exactly these two kernels). The values the client holds are
the ones the kernels get, so they must be the driver's own."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from behaviour_helpers import check, nvrtc_cubin

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

SOURCE = """
extern "C" __global__ void tex2d_fetch_f32(cudaTextureObject_t tex, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

extern "C" __global__ void surf2d_write_index_f32(cudaSurfaceObject_t surf, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) surf2Dwrite((float)(y * 1000 + x), surf, x * 4, y);
}
"""


def _resource(array: Any) -> Any:
    res = cudart.cudaResourceDesc()
    res.resType = cudart.cudaResourceType.cudaResourceTypeArray
    res.res.array.array = array
    return res


def test_a_kernel_samples_a_texture_and_writes_a_surface(
    session: cricket_client.Connection,
) -> None:
    w, h = 40, 12
    module = check(cuda.cuModuleLoadData(nvrtc_cubin(SOURCE, "arrays.cu")))
    sample = check(cuda.cuModuleGetFunction(module, b"tex2d_fetch_f32"))
    paint = check(cuda.cuModuleGetFunction(module, b"surf2d_write_index_f32"))
    desc = check(
        cudart.cudaCreateChannelDesc(
            32, 0, 0, 0, cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat
        )
    )
    array = check(cudart.cudaMallocArray(desc, w, h, cudart.cudaArraySurfaceLoadStore))
    image = np.random.default_rng(7).random((h, w), dtype=np.float32)
    check(cudart.cudaMemcpy2DToArray(
        array, 0, 0, image, w * 4, w * 4, h, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
    ))  # fmt: skip
    tex_desc = cudart.cudaTextureDesc()
    tex_desc.addressMode = [cudart.cudaTextureAddressMode.cudaAddressModeClamp] * 3
    tex_desc.filterMode = cudart.cudaTextureFilterMode.cudaFilterModePoint
    tex_desc.readMode = cudart.cudaTextureReadMode.cudaReadModeElementType
    tex = check(cudart.cudaCreateTextureObject(_resource(array), tex_desc, None))
    out = check(cuda.cuMemAlloc(w * h * 4))
    args = ((int(tex), out, w, h), (ctypes.c_uint64, None, ctypes.c_int, ctypes.c_int))
    check(cuda.cuLaunchKernel(sample, 1, h, 1, 64, 1, 1, 0, 0, args, 0))
    got = np.zeros((h, w), dtype=np.float32)
    check(cuda.cuMemcpyDtoH(got, out, got.nbytes))
    assert np.array_equal(got, image)

    surf = check(cudart.cudaCreateSurfaceObject(_resource(array)))
    args = ((int(surf), w, h), (ctypes.c_uint64, ctypes.c_int, ctypes.c_int))
    check(cuda.cuLaunchKernel(paint, 1, h, 1, 64, 1, 1, 0, 0, args, 0))
    check(cuda.cuCtxSynchronize())
    painted = np.zeros((h, w), dtype=np.float32)
    check(cudart.cudaMemcpy2DFromArray(
        painted, w * 4, array, 0, 0, w * 4, h, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
    ))  # fmt: skip
    assert np.array_equal(
        painted, np.add.outer(np.arange(h) * 1000, np.arange(w)).astype(np.float32)
    )
    check(cudart.cudaDestroySurfaceObject(surf))
    check(cudart.cudaDestroyTextureObject(tex))
    check(cuda.cuMemFree(out))
    check(cudart.cudaFreeArray(array))


def test_the_kernels_compile_for_sm_90() -> None:
    """The source above builds with NVRTC (the sim kernels stand for exactly it)."""
    assert nvrtc_cubin(SOURCE, "arrays.cu")[:4] == b"\x7fELF"
