"""Sim host implementations of two kernels that use texture and surface objects.

The sim registry is keyed by kernel name, so these implement exactly the CUDA kernels of the
same names (tests/behaviour/test_arrays_kernels.py holds their source):

    extern "C" __global__ void tex2d_fetch_f32(cudaTextureObject_t tex, float *out, int w, int h)
    {   // one row a block row: x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y
        if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f); }

    extern "C" __global__ void surf2d_write_index_f32(cudaSurfaceObject_t surf, int w, int h)
    {   if (x < w && y < h) surf2Dwrite((float)(y * 1000 + x), surf, x * 4, y); }

Only what they need is modelled: a 2D single-channel float array, unnormalized coordinates
at texel centres (so point and linear filtering both give the texel), and a surface on such
an array; anything else is CUDA_ERROR_NOT_SUPPORTED naming the kernel. Objects are looked up
by value in `cricket_server.backends.sim.arrays` (sim values are unique in the process).
"""

from __future__ import annotations

import numpy as np

from cricket_server.backends.base import CUDA_ERROR_NOT_SUPPORTED, CudaError
from cricket_server.backends.sim.arrays import SimArray, object_by_value
from cricket_server.backends.sim.devmem import KernelMemory
from cricket_server.backends.sim.kernels import KernelArgs, Launch, sim_kernel

__all__ = ["tex2d_fetch_f32", "surf2d_write_index_f32"]

_FLOAT = 0x20
_NORMALIZED = 0x02  # CU_TRSF_NORMALIZED_COORDINATES


def _float_plane(value: int, kernel: str, surface: bool) -> np.ndarray:
    found = object_by_value(value)
    kind = "surface" if surface else "texture"
    if found is None:
        raise CudaError(700, f"{kernel}: {value:#x} is not a live {kind} object")  # illegal address
    res, tex, _view = found
    array = res.array
    if not isinstance(array, SimArray) or (tex is None) != surface:
        raise CudaError(CUDA_ERROR_NOT_SUPPORTED, f"{kernel}: sim models {kind}s on arrays only")
    d = array.desc
    if d.format != _FLOAT or d.channels != 1 or d.depth or (tex is not None and tex.flags & _NORMALIZED):
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED,
            f"{kernel}: sim models 2D single-channel float arrays with unnormalized coordinates",
        )
    return np.frombuffer(array.data, dtype=np.float32).reshape(d.rows, d.width)


def _extent(launch: Launch, w: int, h: int) -> tuple[int, int]:
    return max(0, min(w, launch.grid[0] * launch.block[0])), max(0, min(h, launch.grid[1]))


@sim_kernel("tex2d_fetch_f32")
def tex2d_fetch_f32(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    plane = _float_plane(args.u64(0), "tex2d_fetch_f32", surface=False)
    w, h = args.i32(2), args.i32(3)
    cols, rows = _extent(launch, w, h)
    if not (cols and rows):
        return
    out = mem.array(args.ptr(1), np.float32, (rows - 1) * w + cols)
    ys = np.clip(np.arange(rows), 0, plane.shape[0] - 1)  # clamp addressing
    xs = np.clip(np.arange(cols), 0, plane.shape[1] - 1)
    for y in range(rows):
        out[y * w : y * w + cols] = plane[ys[y], xs]


@sim_kernel("surf2d_write_index_f32")
def surf2d_write_index_f32(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    plane = _float_plane(args.u64(0), "surf2d_write_index_f32", surface=True)
    cols, rows = _extent(launch, args.i32(1), args.i32(2))
    if cols > plane.shape[1] or rows > plane.shape[0]:
        raise CudaError(700, "surf2d_write_index_f32: write outside the surface")  # trap mode
    plane[:rows, :cols] = np.add.outer(np.arange(rows) * 1000, np.arange(cols)).astype(np.float32)
