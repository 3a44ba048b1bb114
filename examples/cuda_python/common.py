"""Helpers shared by the cuda-python examples (as NVIDIA's examples have their `common`).

Written for cuda-python only: nothing here knows about Cricket. Under `cricket-run` the same
imports give the remote driver and runtime, while NVRTC stays local.
"""

from __future__ import annotations

from typing import Any

from cuda.bindings import driver, nvrtc, runtime


def check(result: tuple[Any, ...]) -> Any:
    """The outputs of a driver, runtime or NVRTC call; exit naming the error on failure."""
    err, *values = result
    if isinstance(err, driver.CUresult) and err != driver.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA driver error {err.name}")
    if isinstance(err, runtime.cudaError_t) and err != runtime.cudaError_t.cudaSuccess:
        raise SystemExit(f"CUDA runtime error {err.name}")
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise SystemExit(f"NVRTC error {err.name}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def device_arch(device: int = 0) -> str:
    """`sm_XY` of a device, asked through the runtime (which also initializes it)."""
    attr = runtime.cudaDeviceAttr
    major = check(runtime.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, device))
    minor = check(runtime.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, device))
    return f"sm_{major}{minor}"


def compile_cubin(source: str, name: str, arch: str) -> bytes:
    """CUDA C++ compiled to a cubin for `arch` with NVRTC (which runs here, on the CPU)."""
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    opts = [f"--gpu-architecture={arch}".encode()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        raise SystemExit(f"NVRTC failed for {name}:\n{log.decode(errors='replace')}")
    size = check(nvrtc.nvrtcGetCUBINSize(prog))
    cubin = b" " * size
    check(nvrtc.nvrtcGetCUBIN(prog, cubin))
    check(nvrtc.nvrtcDestroyProgram(prog))
    return cubin


def load_kernel(cubin: bytes, name: str) -> tuple[Any, Any]:
    """(module, function) of kernel `name` in a cubin, loaded in the current context."""
    module = check(driver.cuModuleLoadData(cubin))
    return module, check(driver.cuModuleGetFunction(module, name.encode()))
