"""Small synchronous host-to-device copies into memory the client knows allocated go without
waiting for their reply; everything a user can see stays as with a waited copy. Runs on
CRICKET_TEST_BACKEND."""

from __future__ import annotations

from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


def _read(ptr: object, n: int) -> bytes:
    out = bytearray(n)
    check(cuda.cuMemcpyDtoH(out, ptr, n))
    return bytes(out)


def test_copies_land_in_order_and_take_the_bytes_at_the_call(
    session: cricket_client.Connection,
) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    try:
        buf = bytearray(b"A" * 4096)
        for value in (b"B", b"C", b"D"):
            assert cuda.cuMemcpyHtoD(ptr, buf, 4096) == (E.CUDA_SUCCESS,)
            buf[:] = value * 4096  # the caller reuses its buffer at once
        assert session.pending_count >= 1  # the copies were not waited for
        assert _read(ptr, 4096) == b"C" * 4096
        assert cuda.cuMemcpyHtoD(int(ptr) + 4000, b"xyz", 3) == (E.CUDA_SUCCESS,)
        assert _read(ptr, 4096)[3998:4004] == b"CCxyzC"
    finally:
        check(cuda.cuMemFree(ptr))


def test_copies_outside_known_memory_fail_at_once(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    assert cuda.cuMemcpyHtoD(int(ptr) + 4090, bytes(16), 16)[0] != E.CUDA_SUCCESS  # past its end
    check(cuda.cuMemFree(ptr))
    assert cuda.cuMemcpyHtoD(ptr, bytes(16), 16)[0] != E.CUDA_SUCCESS  # freed
    unknown = session.info.va_base + session.info.va_size - 4096
    assert cuda.cuMemcpyHtoD(unknown, bytes(16), 16)[0] != E.CUDA_SUCCESS
    assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)  # nothing deferred is left over
