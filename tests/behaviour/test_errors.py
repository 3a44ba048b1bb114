"""Mistakes answer the CUresult local cuda-python gives for them; unsupported names fail loudly."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import KERNELS, SUCCESS, check, open_session

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


def test_unknown_handles(session: cricket_client.Connection) -> None:
    assert cuda.cuModuleGetFunction(cuda.CUmodule(0x12345), b"saxpy") == (E.CUDA_ERROR_INVALID_HANDLE, None)
    assert cuda.cuStreamSynchronize(cuda.CUstream(0x12345)) == (E.CUDA_ERROR_INVALID_HANDLE,)
    assert cuda.cuEventQuery(cuda.CUevent(0x12345)) == (E.CUDA_ERROR_INVALID_HANDLE,)
    assert cuda.cuCtxSetCurrent(cuda.CUcontext(0x12345)) == (E.CUDA_ERROR_INVALID_CONTEXT,)


def test_unknown_kernel_name(session: cricket_client.Connection, kernels: Any) -> None:
    assert cuda.cuModuleGetFunction(kernels, b"no_such_kernel") == (E.CUDA_ERROR_NOT_FOUND, None)
    assert cuda.cuModuleGetGlobal(kernels, b"no_such_global") == (E.CUDA_ERROR_NOT_FOUND, None, None)


def test_out_of_memory(session: cricket_client.Connection) -> None:
    total = check(cuda.cuDeviceTotalMem(cuda.CUdevice(0)))
    assert cuda.cuMemAlloc(total + (1 << 30)) == (E.CUDA_ERROR_OUT_OF_MEMORY, None)
    check(cuda.cuMemFree(check(cuda.cuMemAlloc(1 << 20))))  # still usable afterwards


def test_double_free(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    assert cuda.cuMemFree(ptr) == (SUCCESS,)
    assert cuda.cuMemFree(ptr) == (E.CUDA_ERROR_INVALID_VALUE,)


def test_another_sessions_pointer(session: cricket_client.Connection, other_session: cricket_client.Connection) -> None:
    with other_session.active():
        foreign = check(cuda.cuMemAlloc(4096))
        check(cuda.cuMemsetD8(foreign, 0x5A, 4096))
    out = bytearray(16)
    assert cuda.cuMemcpyDtoH(out, foreign, 16) == (E.CUDA_ERROR_INVALID_VALUE,)
    assert cuda.cuMemFree(foreign) == (E.CUDA_ERROR_INVALID_VALUE,)
    with other_session.active():
        check(cuda.cuMemcpyDtoH(out, foreign, 16))
    assert out == b"\x5a" * 16


def test_launch_with_wrong_argument_count(session: cricket_client.Connection, kernels: Any) -> None:
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    y = check(cuda.cuMemAlloc(16))
    check(cuda.cuMemsetD32(y, 0, 4))
    args = ((2.0, y, y), (ctypes.c_float, None, None))
    assert cuda.cuLaunchKernel(saxpy, 1, 1, 1, 4, 1, 1, 0, 0, args, 0) == (E.CUDA_ERROR_INVALID_VALUE,)
    assert "takes 4 parameters, got 3" in cricket_client.last_error_message()
    assert cuda.cuCtxSynchronize() == (SUCCESS,)


def test_illegal_address_surfaces_at_the_next_synchronizing_call(server_address: str) -> None:
    bystander = open_session(server_address, make_default=False)  # made before the fault
    conn = None
    try:
        conn = open_session(server_address, make_default=False)
        with conn.active():
            mod = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
            poke = check(cuda.cuModuleGetFunction(mod, b"poke"))
            assert cuda.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, 0, ((16, 1), (None, ctypes.c_int)), 0) == (SUCCESS,)
            assert cuda.cuCtxSynchronize() == (E.CUDA_ERROR_ILLEGAL_ADDRESS,)
        # Another tenant's session is untouched: allocation, copies both ways, a launch.
        with bystander.active():
            mod = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
            vector_add = check(cuda.cuModuleGetFunction(mod, b"vector_add"))
            n = 4096
            a, b = np.arange(n, dtype=np.float32), np.full(n, 2.0, dtype=np.float32)
            ptrs = [check(cuda.cuMemAlloc(a.nbytes)) for _ in range(3)]
            check(cuda.cuMemcpyHtoD(ptrs[0], a, a.nbytes))
            check(cuda.cuMemcpyHtoD(ptrs[1], b, b.nbytes))
            check(cuda.cuLaunchKernel(vector_add, n // 128, 1, 1, 128, 1, 1, 0, 0,
                                      ((*ptrs, n), (None, None, None, ctypes.c_int)), 0))
            out = np.empty_like(a)
            check(cuda.cuMemcpyDtoH(out, ptrs[2], out.nbytes))
            np.testing.assert_array_equal(out, a + b)
            check(cuda.cuCtxSynchronize())
    finally:
        if conn is not None:
            conn.close()
        bystander.close()


def test_unsupported_functions_fail_loudly(session: cricket_client.Connection) -> None:
    for name in ("cuGraphicsGLRegisterBuffer", "cuGraphicsUnmapResources", "cuIpcGetMemHandle",
                 "cuIpcOpenMemHandle"):
        with pytest.raises(cricket_client.NotSupportedRemotely, match=f"{name}.*not supported remotely"):
            getattr(cuda, name)


def test_null_host_pointer_is_refused_before_sending(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(16))
    with pytest.raises(TypeError, match="NULL host pointer"):
        cuda.cuMemcpyHtoD(ptr, 0, 16)
    with pytest.raises(TypeError, match="holds 4 bytes, 16 asked for"):
        cuda.cuMemcpyHtoD(ptr, np.zeros(1, np.int32), 16)
