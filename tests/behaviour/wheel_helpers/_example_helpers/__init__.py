"""Example helpers inside the cuda.bindings package (the layout of the wheel's own)."""

from .common import check_compute_capability_too_low, load_module
from .helper_cuda import check_cuda_errors, find_cuda_device, find_cuda_device_drv

__all__ = [
    "check_compute_capability_too_low",
    "check_cuda_errors",
    "find_cuda_device",
    "find_cuda_device_drv",
    "load_module",
]
