"""The linker (cuLinkCreate/AddData/AddFile/Complete/Destroy): the client collects a link's
inputs and the server's driver links them at cuLinkComplete. On cuda, PTX links into a cubin
that loads and runs; sim links a single cubin only and names what it cannot link."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from behaviour_helpers import BACKEND, KERNELS, SUCCESS, check

import cricket_client
from cricket_client import driver as cuda

JIT = cuda.CUjit_option
INPUT = cuda.CUjitInputType


def _state(log: bytearray) -> object:
    options = [JIT.CU_JIT_ERROR_LOG_BUFFER, JIT.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    return check(cuda.cuLinkCreate(2, options, [log, len(log)]))


def _run_fill(image: int) -> int:
    module = check(cuda.cuModuleLoadData(image))
    fill = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
    p = check(cuda.cuMemAlloc(64))
    args = ((p, 6, 16), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, 0, args, 0))
    out = np.zeros(16, dtype=np.uint32)
    check(cuda.cuMemcpyDtoH(out, p, 64))
    check(cuda.cuMemFree(p))
    check(cuda.cuModuleUnload(module))
    return int(out.sum())


def test_ptx_links_on_the_server(session: cricket_client.Connection) -> None:
    log = bytearray(4096)
    state = _state(log)
    ptx = (KERNELS / "test_kernels.ptx").read_bytes()
    check(cuda.cuLinkAddData(state, INPUT.CU_JIT_INPUT_PTX, ptx, len(ptx), b"test_kernels.ptx", 0, None, None))
    err, image, size = cuda.cuLinkComplete(state)
    if BACKEND == "sim":
        assert err == cuda.CUresult.CUDA_ERROR_NOT_SUPPORTED
        text = bytes(log).split(b"\0")[0].decode()
        assert "single cubin" in text and "PTX 'test_kernels.ptx'" in text
    else:
        assert err == SUCCESS, bytes(log).split(b"\0")[0].decode()
        assert size > 0
        assert _run_fill(image) == 96
    check(cuda.cuLinkDestroy(state))


@pytest.mark.skipif(BACKEND != "sim", reason="sim's pass-through of one cubin")
def test_one_cubin_links_to_itself_on_sim(session: cricket_client.Connection) -> None:
    state = _state(bytearray(256))
    path = str(KERNELS / "test_kernels.sm_90.cubin").encode()
    check(cuda.cuLinkAddFile(state, INPUT.CU_JIT_INPUT_CUBIN, path, 0, None, None))
    image, size = check(cuda.cuLinkComplete(state))
    assert ctypes.string_at(image, size) == (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
    assert _run_fill(image) == 96
    check(cuda.cuLinkDestroy(state))


def test_link_states_are_checked(session: cricket_client.Connection) -> None:
    state = _state(bytearray(64))
    check(cuda.cuLinkDestroy(state))
    assert cuda.cuLinkDestroy(state)[0] == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    assert cuda.cuLinkComplete(state)[0] == cuda.CUresult.CUDA_ERROR_INVALID_HANDLE
    missing = cuda.cuLinkAddFile(_state(bytearray(64)), INPUT.CU_JIT_INPUT_PTX, b"/nonexistent.ptx", 0, None, None)
    assert missing[0] == cuda.CUresult.CUDA_ERROR_FILE_NOT_FOUND
