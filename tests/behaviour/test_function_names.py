"""cuFuncGetName and cuKernelGetName, on both backends: the name a function or library kernel
was looked up by; a NULL handle answers CUDA_ERROR_INVALID_VALUE and None, as the driver does;
a handle that is not one answers an error and None."""

from __future__ import annotations

from typing import Any

from behaviour_helpers import KERNELS, check

import cricket_client
from cricket_client import driver as cuda


def test_function_and_kernel_names(session: cricket_client.Connection, kernels: Any) -> None:
    func = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    assert cuda.cuFuncGetName(func) == (cuda.CUresult.CUDA_SUCCESS, b"add_to_counter")
    image = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
    lib = check(cuda.cuLibraryLoadData(image, None, None, 0, None, None, 0))
    kernel = check(cuda.cuLibraryGetKernel(lib, b"vector_add"))
    assert cuda.cuKernelGetName(kernel) == (cuda.CUresult.CUDA_SUCCESS, b"vector_add")
    check(cuda.cuLibraryUnload(lib))


def test_null_and_foreign_handles_answer_an_error_and_none(
    session: cricket_client.Connection,
) -> None:
    assert cuda.cuFuncGetName(0) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    assert cuda.cuKernelGetName(0) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE, None)
    err, name = cuda.cuFuncGetName(cuda.CUfunction(0x1234))
    assert err != cuda.CUresult.CUDA_SUCCESS and name is None
