"""cuProfilerStart/Stop and cudaProfilerStart/Stop mark profiling ranges of the session's GPU
work where it runs: in the server's process (a profiler attached there records them)."""

from __future__ import annotations

import numpy as np
from behaviour_helpers import check, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

ERR = cuda.CUresult


def test_a_range_around_work_in_the_current_context(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(256))
    ok(cuda.cuProfilerStart())
    ok(cuda.cuMemsetD8(ptr, 7, 256))
    ok(cuda.cuProfilerStop())
    back = np.zeros(256, dtype=np.uint8)
    ok(cuda.cuMemcpyDtoH(back, ptr, 256))
    assert (back == 7).all()
    ok(cuda.cuProfilerStop())  # stopping twice is no error, as locally
    ok(cuda.cuMemFree(ptr))


def test_the_runtime_forms(session: cricket_client.Connection) -> None:
    assert cudart.cudaProfilerStart() == (cudart.cudaError_t.cudaSuccess,)
    assert cudart.cudaProfilerStop() == (cudart.cudaError_t.cudaSuccess,)


def test_without_a_current_context_it_is_refused(session: cricket_client.Connection) -> None:
    ctx = check(cuda.cuCtxGetCurrent())
    ok(cuda.cuCtxSetCurrent(None))
    try:
        assert cuda.cuProfilerStart() == (ERR.CUDA_ERROR_INVALID_CONTEXT,)
    finally:
        ok(cuda.cuCtxSetCurrent(ctx))
