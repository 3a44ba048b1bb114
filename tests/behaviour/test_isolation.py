"""Two clients at once: each sees only its own resources."""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np
from behaviour_helpers import KERNELS, check

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


def test_handles_of_another_session_are_unknown(
    session: cricket_client.Connection, other_session: cricket_client.Connection, kernels: Any
) -> None:
    saxpy = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    stream = check(cuda.cuStreamCreate(0))
    event = check(cuda.cuEventCreate(0))
    with other_session.active():
        assert cuda.cuModuleGetFunction(kernels, b"saxpy") == (E.CUDA_ERROR_INVALID_HANDLE, None)
        assert cuda.cuFuncGetAttribute(
            cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, saxpy
        ) == (E.CUDA_ERROR_INVALID_HANDLE, None)
        assert cuda.cuStreamSynchronize(stream) == (E.CUDA_ERROR_INVALID_HANDLE,)
        assert cuda.cuEventSynchronize(event) == (E.CUDA_ERROR_INVALID_HANDLE,)
    check(cuda.cuStreamSynchronize(stream))


def _vector_add_in(conn: cricket_client.Connection, seed: int, results: dict[int, bool]) -> None:
    with conn.active():
        mod = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        func = check(cuda.cuModuleGetFunction(mod, b"vector_add"))
        n = 10_000
        rng = np.random.default_rng(seed)
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        ptrs = [check(cuda.cuMemAlloc(a.nbytes)) for _ in range(3)]
        check(cuda.cuMemcpyHtoD(ptrs[0], a, a.nbytes))
        check(cuda.cuMemcpyHtoD(ptrs[1], b, b.nbytes))
        for _ in range(20):
            check(cuda.cuLaunchKernel(func, (n + 127) // 128, 1, 1, 128, 1, 1, 0, 0,
                                      ((*ptrs, n), (None, None, None, ctypes.c_int)), 0))
        out = np.empty_like(a)
        check(cuda.cuMemcpyDtoH(out, ptrs[2], out.nbytes))
        results[seed] = bool(np.array_equal(out, a + b))


def test_two_clients_work_at_the_same_time(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    results: dict[int, bool] = {}
    threads = [
        threading.Thread(target=_vector_add_in, args=(conn, seed, results))
        for seed, conn in ((1, session), (2, other_session))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {1: True, 2: True}


def test_allocations_are_per_session(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    ptr = check(cuda.cuMemAlloc(1 << 20))
    with other_session.active():
        other = check(cuda.cuMemAlloc(1 << 20))
        assert check(cuda.cuMemGetAddressRange(other)) == (other, 1 << 20)
        assert cuda.cuMemGetAddressRange(ptr) == (E.CUDA_ERROR_NOT_FOUND, None, None)
    assert check(cuda.cuMemGetAddressRange(ptr)) == (ptr, 1 << 20)
    assert cuda.cuMemGetAddressRange(other) == (E.CUDA_ERROR_NOT_FOUND, None, None)
