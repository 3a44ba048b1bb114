"""Device checks and module loading; imports the runtime before the driver."""
# ruff: noqa: I001

import sys

from cuda.bindings import runtime as cudart

from .helper_cuda import check_cuda_errors

from cuda.bindings import driver as cuda  # after the runtime, on purpose


def check_compute_capability_too_low(dev_id, required_cc_major_minor):
    attr = cudart.cudaDeviceAttr
    major = check_cuda_errors(cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, dev_id))
    minor = check_cuda_errors(cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, dev_id))
    if (major, minor) < required_cc_major_minor:
        print(f"compute capability {major}.{minor} is too low", file=sys.stderr)
        sys.exit(1)


def load_module(image):
    return check_cuda_errors(cuda.cuModuleLoadData(image))
