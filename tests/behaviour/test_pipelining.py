"""D6: launches are pipelined; an error raised by the 1000th of 1000 queued launches
surfaces at the next synchronizing call, after the 999 before it have run."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


def test_error_of_the_1000th_queued_launch_surfaces_at_the_next_synchronize(
    session: cricket_client.Connection, kernels: Any
) -> None:
    counter, _size = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
    check(cuda.cuMemsetD32(counter, 0, 1))
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    one = ((1,), (ctypes.c_int,))
    for _ in range(999):
        assert cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, one, 0) == (E.CUDA_SUCCESS,)
    # The 1000th asks for 2048 threads a block (the limit is 1024): CUDA refuses the launch
    # with CUDA_ERROR_INVALID_VALUE. Queued, it is answered at the next synchronizing call.
    queued = cuda.cuLaunchKernel(add, 1, 1, 1, 2048, 1, 1, 0, 0, one, 0)
    assert queued in ((E.CUDA_SUCCESS,), (E.CUDA_ERROR_INVALID_VALUE,))
    if queued == (E.CUDA_SUCCESS,):
        assert cuda.cuCtxSynchronize() == (E.CUDA_ERROR_INVALID_VALUE,)
    assert "cuLaunchKernel" in cricket_client.last_error_message()
    # Not a sticky error: the session goes on, and the 999 good launches all ran.
    assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)
    word = bytearray(4)
    check(cuda.cuMemcpyDtoH(word, counter, 4))
    assert struct.unpack("<i", word)[0] == 999
