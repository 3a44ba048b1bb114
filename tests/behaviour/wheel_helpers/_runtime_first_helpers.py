"""A helper inside the cuda.bindings package that imports the runtime first, NVRTC next and the
driver last, all while it loads."""
# ruff: noqa: I001

from cuda.bindings import runtime

from cuda.bindings import nvrtc

from cuda.bindings import driver


def check(result):
    """The outputs of a runtime, driver or NVRTC call; RuntimeError naming a failure."""
    err, *values = result
    if isinstance(err, runtime.cudaError_t) and err != runtime.cudaError_t.cudaSuccess:
        raise RuntimeError(f"runtime: {runtime.cudaGetErrorName(err)[1].decode()}")
    if isinstance(err, driver.CUresult) and err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"driver: {driver.cuGetErrorName(err)[1].decode()}")
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC: {err.name}")
    if not isinstance(err, (runtime.cudaError_t, driver.CUresult, nvrtc.nvrtcResult)):
        raise RuntimeError(f"unknown result type {type(err).__module__}.{type(err).__name__}")
    return None if not values else values[0] if len(values) == 1 else tuple(values)


def device_memory(nbytes):
    """cudaMalloc through this module's runtime."""
    return check(runtime.cudaMalloc(nbytes))


def load_function(image, name):
    """(module, function) of kernel `name` through this module's driver."""
    module = check(driver.cuModuleLoadData(image))
    return module, check(driver.cuModuleGetFunction(module, name.encode()))
