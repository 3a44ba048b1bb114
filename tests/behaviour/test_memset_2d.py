"""cuMemsetD2D8/16/32 and their Async forms: pitched rows set, the bytes between rows kept."""

from __future__ import annotations

import numpy as np
import pytest
from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

WIDTH, HEIGHT = 24, 5  # elements per row, rows


@pytest.mark.parametrize(
    ("size", "value", "dtype"), [(1, 0xA5, np.uint8), (2, 0xBEEF, np.uint16), (4, 0xDEADBEEF, np.uint32)]
)
@pytest.mark.parametrize("asynchronous", [False, True])
def test_pitched_memset(
    session: cricket_client.Connection, size: int, value: int, dtype: type, asynchronous: bool
) -> None:
    ptr, pitch = check(cuda.cuMemAllocPitch(WIDTH * size, HEIGHT, 4))
    total = pitch * HEIGHT
    check(cuda.cuMemsetD8(ptr, 0x11, total))
    name = f"cuMemsetD2D{8 * size}"
    if asynchronous:
        stream = check(cuda.cuStreamCreate(0))
        check(getattr(cuda, name + "Async")(ptr, pitch, value, WIDTH, HEIGHT, stream))
        check(cuda.cuStreamSynchronize(stream))
        check(cuda.cuStreamDestroy(stream))
    else:
        check(getattr(cuda, name)(ptr, pitch, value, WIDTH, HEIGHT))
    out = np.zeros(total, np.uint8)
    check(cuda.cuMemcpyDtoH(out, ptr, total))
    rows = out.reshape(HEIGHT, pitch)
    for r in range(HEIGHT):
        assert np.all(rows[r, : WIDTH * size].view(dtype) == value)
        assert np.all(rows[r, WIDTH * size :] == 0x11)  # the pitch's padding is untouched
    check(cuda.cuMemFree(ptr))


def test_pitched_memset_checks(session: cricket_client.Connection) -> None:
    ptr, pitch = check(cuda.cuMemAllocPitch(64, 4, 4))
    # rows wider than the pitch
    assert cuda.cuMemsetD2D32(ptr, 16, 1, 8, 4) == (cuda.CUresult.CUDA_ERROR_INVALID_VALUE,)
    # past the end of the allocation
    assert cuda.cuMemsetD2D16(ptr, pitch, 1, 32, 64)[0] != cuda.CUresult.CUDA_SUCCESS
    with pytest.raises(OverflowError):
        cuda.cuMemsetD2D16(ptr, pitch, 1 << 16, 32, 4)
    check(cuda.cuMemFree(ptr))
