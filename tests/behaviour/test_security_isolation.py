"""Isolation: from a second session, every attempt on the first session's memory, modules,
functions, streams, events, context and checkpoint is refused with the CUresult local CUDA
gives for a pointer or handle it does not know, and the owner's data and resources are intact
afterwards. One row per attempt.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import KERNELS, check

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr.rpc.client import RpcClient
from rpc_spec import cricket_rpc as proto

E = cuda.CUresult
N = 4096  # uint32 elements of the owner's buffer
PATTERN = np.arange(N, dtype=np.uint32) * 7 + 3


@dataclass
class Owned:
    """What the first session holds."""

    conn: cricket_client.Connection
    ptr: Any
    module: Any
    func: Any
    stream: Any
    event: Any
    ctx: Any  # a context it created (not current)
    current: Any  # its current context


@pytest.fixture
def owned(session: cricket_client.Connection) -> Owned:
    module = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
    func = check(cuda.cuModuleGetFunction(module, b"fill_u32"))
    ptr = check(cuda.cuMemAlloc(PATTERN.nbytes))
    check(cuda.cuMemcpyHtoD(ptr, PATTERN, PATTERN.nbytes))
    stream = check(cuda.cuStreamCreate(0))
    event = check(cuda.cuEventCreate(0))
    check(cuda.cuEventRecord(event, stream))
    current = check(cuda.cuCtxGetCurrent())
    ctx = check(cuda.cuCtxCreate(None, 0, 0))  # a context of its own, besides the primary one
    assert check(cuda.cuCtxPopCurrent()) == ctx
    return Owned(session, ptr, module, func, stream, event, ctx, current)


def _settled(result: tuple[Any, ...]) -> Any:
    """The CUresult of a call, or of the synchronize after it when it was pipelined."""
    if result[0] != E.CUDA_SUCCESS:
        return result[0]
    return cuda.cuCtxSynchronize()[0]


def _checkpoint_other(o: Owned, mine: Any, tmp: str) -> Any:
    host, port = o.conn.address.rsplit(":", 1)
    with RpcClient((host, int(port)), timeout=60) as rpc:
        stub = proto.CRICKET_V1_Client(rpc)
        hello = stub.HELLO(proto.hello_args(proto.CRICKET_PROTOCOL_VERSION, b"", "intruder"))
        assert hello.err == 0
        return stub.CHECKPOINT_SERVER(tmp + "/stolen", o.conn.info.session_id).err


def _launch(o: Owned, mine: Any) -> Any:
    args = ((mine, 0xDEAD, 16), (None, ctypes.c_uint, ctypes.c_ulonglong))
    return _settled(cuda.cuLaunchKernel(o.func, 1, 1, 1, 16, 1, 1, 0, 0, args, 0))


out = np.empty(N, dtype=np.uint32)
ATTEMPTS: dict[str, tuple[Callable[[Owned, Any, str], Any], Any]] = {
    "read (DtoH)": (lambda o, m, t: cuda.cuMemcpyDtoH(out, o.ptr, 64)[0], E.CUDA_ERROR_INVALID_VALUE),
    "write (HtoD)": (
        lambda o, m, t: _settled(cuda.cuMemcpyHtoD(o.ptr, np.zeros(16, np.uint32), 64)),
        E.CUDA_ERROR_INVALID_VALUE,
    ),
    "memset": (lambda o, m, t: _settled(cuda.cuMemsetD8(o.ptr, 0, 64)), E.CUDA_ERROR_INVALID_VALUE),
    "DtoD from it": (
        lambda o, m, t: _settled(cuda.cuMemcpyDtoD(m, o.ptr, 64)), E.CUDA_ERROR_INVALID_VALUE
    ),
    "DtoD to it": (
        lambda o, m, t: _settled(cuda.cuMemcpyDtoD(o.ptr, m, 64)), E.CUDA_ERROR_INVALID_VALUE
    ),
    "address range": (lambda o, m, t: cuda.cuMemGetAddressRange(o.ptr)[0], E.CUDA_ERROR_NOT_FOUND),
    "free": (lambda o, m, t: cuda.cuMemFree(o.ptr)[0], E.CUDA_ERROR_INVALID_VALUE),
    "free async": (
        lambda o, m, t: _settled(cuda.cuMemFreeAsync(o.ptr, 0)), E.CUDA_ERROR_INVALID_VALUE
    ),
    "launch its function": (lambda o, m, t: _launch(o, m), E.CUDA_ERROR_INVALID_HANDLE),
    "function attribute": (
        lambda o, m, t: cuda.cuFuncGetAttribute(
            cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, o.func
        )[0],
        E.CUDA_ERROR_INVALID_HANDLE,
    ),
    "wait on its event": (
        lambda o, m, t: _settled(cuda.cuStreamWaitEvent(0, o.event, 0)),
        E.CUDA_ERROR_INVALID_HANDLE,
    ),
    "record its event": (
        lambda o, m, t: _settled(cuda.cuEventRecord(o.event, 0)), E.CUDA_ERROR_INVALID_HANDLE
    ),
    "synchronize its event": (
        lambda o, m, t: cuda.cuEventSynchronize(o.event)[0], E.CUDA_ERROR_INVALID_HANDLE
    ),
    "destroy its event": (
        lambda o, m, t: cuda.cuEventDestroy(o.event)[0], E.CUDA_ERROR_INVALID_HANDLE
    ),
    "synchronize its stream": (
        lambda o, m, t: cuda.cuStreamSynchronize(o.stream)[0], E.CUDA_ERROR_INVALID_HANDLE
    ),
    "use its stream": (
        lambda o, m, t: _settled(cuda.cuMemsetD8Async(m, 0, 64, o.stream)),
        E.CUDA_ERROR_INVALID_HANDLE,
    ),
    "destroy its stream": (
        lambda o, m, t: cuda.cuStreamDestroy(o.stream)[0], E.CUDA_ERROR_INVALID_HANDLE
    ),
    "get a function of its module": (
        lambda o, m, t: cuda.cuModuleGetFunction(o.module, b"fill_u32")[0],
        E.CUDA_ERROR_INVALID_HANDLE,
    ),
    "unload its module": (
        lambda o, m, t: cuda.cuModuleUnload(o.module)[0], E.CUDA_ERROR_INVALID_HANDLE
    ),
    "make its context current": (
        lambda o, m, t: cuda.cuCtxSetCurrent(o.ctx)[0], E.CUDA_ERROR_INVALID_CONTEXT
    ),
    "push its context": (
        lambda o, m, t: cuda.cuCtxPushCurrent(o.ctx)[0], E.CUDA_ERROR_INVALID_CONTEXT
    ),
    "checkpoint its session": (_checkpoint_other, E.CUDA_ERROR_NOT_PERMITTED),  # operator only
}


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_another_session_cannot_touch_what_a_session_owns(
    attempt: str, owned: Owned, other_session: cricket_client.Connection, tmp_path: Any
) -> None:
    run, refused_with = ATTEMPTS[attempt]
    with other_session.active():
        mine = check(cuda.cuMemAlloc(PATTERN.nbytes))
        assert run(owned, mine, str(tmp_path)) == refused_with
        check(cuda.cuCtxSynchronize())  # the intruder's own session goes on
    assert not (tmp_path / "stolen").exists()
    # the owner's data and resources are intact
    got = np.empty_like(PATTERN)
    check(cuda.cuMemcpyDtoH(got, owned.ptr, got.nbytes))
    assert (got == PATTERN).all()
    assert check(cuda.cuMemGetAddressRange(owned.ptr)) == (owned.ptr, PATTERN.nbytes)
    assert check(cuda.cuCtxGetCurrent()) == owned.current
    check(cuda.cuCtxPushCurrent(owned.ctx))
    assert check(cuda.cuCtxPopCurrent()) == owned.ctx
    check(cuda.cuStreamSynchronize(owned.stream))
    check(cuda.cuEventRecord(owned.event, owned.stream))
    check(cuda.cuEventSynchronize(owned.event))
    assert check(cuda.cuModuleGetFunction(owned.module, b"fill_u32")) == owned.func
    args = ((owned.ptr, 5, 16), (None, ctypes.c_uint, ctypes.c_ulonglong))
    check(cuda.cuLaunchKernel(owned.func, 1, 1, 1, 16, 1, 1, 0, owned.stream, args, 0))
    check(cuda.cuStreamSynchronize(owned.stream))
    check(cuda.cuMemcpyDtoH(got, owned.ptr, got.nbytes))
    assert (got[:16] == 5).all() and (got[16:] == PATTERN[16:]).all()


def test_pointer_attributes_of_another_sessions_memory_reveal_nothing(
    owned: Owned, other_session: cricket_client.Connection
) -> None:
    """cuPointerGetAttributes gives a pointer CUDA does not know default (zero) values."""
    A = cuda.CUpointer_attribute
    attrs = [A.CU_POINTER_ATTRIBUTE_CONTEXT, A.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
             A.CU_POINTER_ATTRIBUTE_RANGE_SIZE, A.CU_POINTER_ATTRIBUTE_BUFFER_ID]  # fmt: skip
    mine = check(cuda.cuPointerGetAttributes(len(attrs), attrs, owned.ptr))
    assert int(mine[2]) == PATTERN.nbytes
    with other_session.active():
        err, values = cuda.cuPointerGetAttributes(len(attrs), attrs, owned.ptr)
        assert err == E.CUDA_SUCCESS
        assert [int(v or 0) for v in values] == [0, 0, 0, 0]

