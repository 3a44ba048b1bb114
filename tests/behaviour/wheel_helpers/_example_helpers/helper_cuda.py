"""Result checking and device selection, bound to the driver, NVRTC and runtime at import."""

from cuda.bindings import driver as cuda
from cuda.bindings import nvrtc
from cuda.bindings import runtime as cudart


def _error_name(error):
    if isinstance(error, cuda.CUresult):
        err, name = cuda.cuGetErrorName(error)
        return name if err == cuda.CUresult.CUDA_SUCCESS else "<unknown>"
    if isinstance(error, cudart.cudaError_t):
        return cudart.cudaGetErrorName(error)[1]
    if isinstance(error, nvrtc.nvrtcResult):
        return nvrtc.nvrtcGetErrorString(error)[1]
    raise RuntimeError(f"Unknown error type: {error}")


def check_cuda_errors(result):
    if result[0].value:
        raise RuntimeError(f"CUDA error code={result[0].value}({_error_name(result[0])})")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def find_cuda_device(dev_id=0):
    check_cuda_errors(cudart.cudaSetDevice(dev_id))
    return dev_id


def find_cuda_device_drv(dev_id=0):
    check_cuda_errors(cuda.cuInit(0))
    return check_cuda_errors(cuda.cuDeviceGet(dev_id))
