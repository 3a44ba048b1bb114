"""Device facts, green-context ids, array planes and pointer attributes, remote, on both
backends: LUIDs answer as CUDA on Linux, atomics with the client's host have no capabilities,
a device is no peer of itself, contexts limited to some SMs read as unsupported while a
context's SM count is the device's, the NVLink fabric queries agree with each other, a green
context's id is stable and its own, an array of a plain format has no planes, and
CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set on an allocation reads back and keeps copies into it
synchronous."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from behaviour_helpers import check, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

ERR = cuda.CUresult
RT = cudart.cudaError_t
OPS = [cuda.CUatomicOperation.CU_ATOMIC_OPERATION_INTEGER_ADD,
       cuda.CUatomicOperation.CU_ATOMIC_OPERATION_CAS,
       cuda.CUatomicOperation.CU_ATOMIC_OPERATION_FLOAT_ADD]  # fmt: skip
SM_COUNT = cuda.CUexecAffinityType.CU_EXEC_AFFINITY_TYPE_SM_COUNT
SYNC_MEMOPS = cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS


def device() -> Any:
    return check(cuda.cuDeviceGet(0))


def skip_if_the_server_lacks_it(err: Any, call: str) -> None:
    """A call newer than the server's cuda-python or driver answers CUDA_ERROR_NOT_SUPPORTED
    saying so: the test has nothing to check there."""
    message = cricket_client.last_error_message() or ""
    if err == ERR.CUDA_ERROR_NOT_SUPPORTED and "the server's" in message and " has no " in message:
        pytest.skip(f"{call}: {message}")


def test_luid_answers_as_cuda_on_linux(session: cricket_client.Connection) -> None:
    err, luid, mask = cuda.cuDeviceGetLuid(device())
    assert err == ERR.CUDA_ERROR_NOT_SUPPORTED and luid is None and mask is None
    count = check(cuda.cuDeviceGetCount())
    assert cuda.cuDeviceGetLuid(cuda.CUdevice(count))[0] == ERR.CUDA_ERROR_INVALID_DEVICE


def test_atomics_with_the_clients_host_have_no_capabilities(
    session: cricket_client.Connection,
) -> None:
    assert check(cuda.cuDeviceGetHostAtomicCapabilities(OPS, len(OPS), device())) == [0, 0, 0]
    assert check(cuda.cuDeviceGetHostAtomicCapabilities(OPS, 1, device())) == [0]
    assert cuda.cuDeviceGetHostAtomicCapabilities([], 0, device())[0] == ERR.CUDA_ERROR_INVALID_VALUE
    count = check(cuda.cuDeviceGetCount())
    err, caps = cuda.cuDeviceGetHostAtomicCapabilities(OPS, 3, cuda.CUdevice(count))
    assert err == ERR.CUDA_ERROR_INVALID_DEVICE and caps is None
    with pytest.raises(RuntimeError, match="List is too small: 3 < 4"):
        cuda.cuDeviceGetHostAtomicCapabilities(OPS, 4, device())
    with pytest.raises(TypeError):
        cuda.cuDeviceGetHostAtomicCapabilities([0], 1, device())
    ops = [cudart.cudaAtomicOperation.cudaAtomicOperationIntegerAdd]
    assert ok(cudart.cudaDeviceGetHostAtomicCapabilities(ops, 1, 0)) == [0]


def test_a_device_is_no_peer_of_itself(session: cricket_client.Connection) -> None:
    dev = device()
    err, caps = cuda.cuDeviceGetP2PAtomicCapabilities(OPS, len(OPS), dev, dev)
    skip_if_the_server_lacks_it(err, "cuDeviceGetP2PAtomicCapabilities")
    assert err == ERR.CUDA_ERROR_INVALID_DEVICE and caps is None
    ops = [cudart.cudaAtomicOperation.cudaAtomicOperationIntegerAdd]
    assert cudart.cudaDeviceGetP2PAtomicCapabilities(ops, 1, 0, 0)[0] == RT.cudaErrorInvalidDevice


def test_execution_affinity(session: cricket_client.Connection) -> None:
    dev = device()
    assert check(cuda.cuDeviceGetExecAffinitySupport(SM_COUNT, dev)) == 0  # not remotely
    assert cuda.cuDeviceGetExecAffinitySupport(7, dev)[0] == ERR.CUDA_ERROR_INVALID_VALUE
    sms = check(cuda.cuDeviceGetAttribute(
        cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev
    ))  # fmt: skip
    param = check(cuda.cuCtxGetExecAffinity(SM_COUNT))
    assert param.type == SM_COUNT and param.param.smCount.val == sms
    ctx = check(cuda.cuCtxGetCurrent())
    check(cuda.cuCtxSetCurrent(None))
    try:
        assert cuda.cuCtxGetExecAffinity(SM_COUNT)[0] == ERR.CUDA_ERROR_INVALID_CONTEXT
    finally:
        check(cuda.cuCtxSetCurrent(ctx))


def test_fabric_queries_agree(session: cricket_client.Connection) -> None:
    """The server's answers: on a device in no NVLink fabric (sim, and a lone H200) the
    queries fail alike; where they succeed, the clique list is as long as the count."""
    dev = device()
    err, count = cuda.cuDeviceGetCliqueCount(dev)
    err2, cliques, got = cuda.cuDeviceGetCliqueInfo(max(count or 0, 1), dev)
    assert err2 == err
    if err == ERR.CUDA_SUCCESS:
        assert got == count == len(cliques)
    else:
        assert err in (ERR.CUDA_ERROR_NOT_SUPPORTED, ERR.CUDA_ERROR_NOT_PERMITTED)
        assert cliques is None
    err, uuid = cuda.cuDeviceGetFabricClusterUuid(dev)
    if err == ERR.CUDA_SUCCESS:
        assert len(uuid.bytes) == 16
    else:
        assert err in (ERR.CUDA_ERROR_NOT_SUPPORTED, ERR.CUDA_ERROR_NOT_PERMITTED)


def _green() -> Any:
    sm = cuda.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM
    res = check(cuda.cuDeviceGetDevResource(device(), sm))
    groups, _count, _rest = check(cuda.cuDevSmResourceSplitByCount(2, res, 0, 16))
    desc = check(cuda.cuDevResourceGenerateDesc([groups[0]], 1))
    flags = cuda.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM
    return check(cuda.cuGreenCtxCreate(desc, device(), flags))


def test_a_green_contexts_id_is_stable_and_its_own(session: cricket_client.Connection) -> None:
    first, second = _green(), _green()
    try:
        one = check(cuda.cuGreenCtxGetId(first))
        assert check(cuda.cuGreenCtxGetId(first)) == one
        assert check(cuda.cuGreenCtxGetId(second)) != one
        ctx = check(cuda.cuCtxGetCurrent())
        check(cuda.cuCtxSetCurrent(check(cuda.cuCtxFromGreenCtx(first))))
        try:
            assert check(cuda.cuGreenCtxGetId(None)) == one  # NULL: the current one's
        finally:
            check(cuda.cuCtxSetCurrent(ctx))
        assert cuda.cuGreenCtxGetId(None)[0] != ERR.CUDA_SUCCESS  # a context of no green one
    finally:
        check(cuda.cuGreenCtxDestroy(second))
        check(cuda.cuGreenCtxDestroy(first))
    assert cuda.cuGreenCtxGetId(first)[0] != ERR.CUDA_SUCCESS


def test_an_array_of_a_plain_format_has_no_planes(session: cricket_client.Connection) -> None:
    desc = cuda.CUDA_ARRAY_DESCRIPTOR()
    desc.Width, desc.Height, desc.NumChannels = 16, 8, 1
    desc.Format = cuda.CUarray_format.CU_AD_FORMAT_FLOAT
    array = check(cuda.cuArrayCreate(desc))
    try:
        for plane in (0, 1):
            err, got = cuda.cuArrayGetPlane(array, plane)
            assert err == ERR.CUDA_ERROR_INVALID_VALUE and got is None
        assert "multi-planar" in cricket_client.last_error_message()
        assert cudart.cudaArrayGetPlane(cudart.cudaArray_t(int(array)), 0)[0] == RT.cudaErrorInvalidValue
    finally:
        check(cuda.cuArrayDestroy(array))
    assert cuda.cuArrayGetPlane(array, 0)[0] == ERR.CUDA_ERROR_INVALID_HANDLE


def test_sync_memops_set_on_an_allocation_reads_back(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    other = check(cuda.cuMemAlloc(4096))
    try:
        assert check(cuda.cuPointerGetAttribute(SYNC_MEMOPS, ptr)) == 0
        check(cuda.cuPointerSetAttribute(1, SYNC_MEMOPS, ptr))
        assert check(cuda.cuPointerGetAttribute(SYNC_MEMOPS, int(ptr) + 100)) == 1
        assert check(cuda.cuPointerGetAttribute(SYNC_MEMOPS, other)) == 0
        # a copy into it waits for the server (no early return), and lands
        assert not session.known.allocations.holds(int(ptr), 64)
        data = np.arange(64, dtype=np.uint8)
        check(cuda.cuMemcpyHtoD(ptr, data, 64))
        back = np.zeros(64, np.uint8)
        check(cuda.cuMemcpyDtoH(back, ptr, 64))
        assert (back == data).all()
        check(cuda.cuPointerSetAttribute(0, SYNC_MEMOPS, ptr))
        assert check(cuda.cuPointerGetAttribute(SYNC_MEMOPS, ptr)) == 0
    finally:
        check(cuda.cuMemFree(other))
        check(cuda.cuMemFree(ptr))


def test_pointer_attributes_that_cannot_be_set(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(256))
    try:
        access = cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS
        assert cuda.cuPointerSetAttribute(1, access, ptr)[0] == ERR.CUDA_ERROR_INVALID_VALUE
    finally:
        check(cuda.cuMemFree(ptr))
    assert cuda.cuPointerSetAttribute(1, SYNC_MEMOPS, ptr)[0] == ERR.CUDA_ERROR_INVALID_VALUE


def test_a_new_allocation_at_the_same_address_starts_unset(
    session: cricket_client.Connection,
) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    check(cuda.cuPointerSetAttribute(1, SYNC_MEMOPS, ptr))
    check(cuda.cuMemFree(ptr))
    again = check(cuda.cuMemAlloc(4096))
    try:
        assert check(cuda.cuPointerGetAttribute(SYNC_MEMOPS, again)) == 0
    finally:
        check(cuda.cuMemFree(again))


def test_location_info_of_unshared_memory_and_get_kernel_say_why(
    session: cricket_client.Connection,
) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    try:
        loc = cuda.CUmemLocation()
        assert cuda.cuMemGetLocationInfo(ptr, 4096, 4096, 0, loc) == (ERR.CUDA_ERROR_NOT_SUPPORTED,)
        assert "managed" in cricket_client.last_error_message()
        assert cudart.cudaMemGetLocationInfo(ptr, 4096, 4096, 0, loc) == (RT.cudaErrorNotSupported,)
    finally:
        check(cuda.cuMemFree(ptr))
    assert cudart.cudaGetKernel(0x1234) == (RT.cudaErrorNotSupported, None)
    assert "cudaLibraryGetKernel" in cricket_client.last_error_message()


def test_repeated_device_facts_do_not_travel(session: cricket_client.Connection) -> None:
    dev = device()

    def ask() -> list[Any]:
        return [
            cuda.cuDeviceGetHostAtomicCapabilities(OPS, len(OPS), dev),
            cuda.cuDeviceGetExecAffinitySupport(SM_COUNT, dev),
        ]

    first = ask()
    calls = session.sync("SESSION_CALLS")[1].value
    assert ask() == first
    assert session.sync("SESSION_CALLS")[1].value == calls, "repeated facts reached the server"
