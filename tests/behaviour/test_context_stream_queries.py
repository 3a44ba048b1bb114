"""What a context or stream is (ids, owner, device, API version), device lookups by PCI bus
id, the 1D linear texture width, cudaInitDevice/cudaChooseDevice and
cuEventRecordWithFlags (driver and runtime forms)."""

from __future__ import annotations

from behaviour_helpers import check, ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

ERR = cuda.CUresult


def test_context_id_and_api_version(session: cricket_client.Connection) -> None:
    primary = check(cuda.cuCtxGetCurrent())
    ident = check(cuda.cuCtxGetId(primary))
    assert ident == check(cuda.cuCtxGetId(None))  # NULL: the current context
    assert check(cuda.cuCtxGetId(primary)) == ident  # stable
    other = check(cuda.cuCtxCreate(None, 0, check(cuda.cuDeviceGet(0))))
    assert check(cuda.cuCtxGetId(other)) != ident
    assert check(cuda.cuCtxGetApiVersion(other)) == check(cuda.cuCtxGetApiVersion(primary)) > 0
    check(cuda.cuCtxDestroy(other))
    assert cuda.cuCtxGetId(other)[0] in (ERR.CUDA_ERROR_INVALID_CONTEXT, ERR.CUDA_ERROR_INVALID_HANDLE)


def test_stream_context_id_and_device(session: cricket_client.Connection) -> None:
    ctx = check(cuda.cuCtxGetCurrent())
    a = check(cuda.cuStreamCreate(0))
    b = check(cuda.cuStreamCreate(0))
    assert int(check(cuda.cuStreamGetCtx(a))) == int(ctx)
    assert int(check(cuda.cuStreamGetCtx(0))) == int(ctx)  # the default stream: current context
    err, c, green = cuda.cuStreamGetCtx_v2(a)
    assert err == ERR.CUDA_SUCCESS and int(c) == int(ctx) and not green
    ids = {check(cuda.cuStreamGetId(s)) for s in (a, b, 0, cuda.CU_STREAM_PER_THREAD)}
    assert len(ids) == 4  # unique
    assert check(cuda.cuStreamGetId(a)) == check(cuda.cuStreamGetId(a))
    assert int(check(cuda.cuStreamGetDevice(a))) == int(check(cuda.cuCtxGetDevice()))
    check(cuda.cuStreamDestroy(a))
    assert cuda.cuStreamGetId(a)[0] == ERR.CUDA_ERROR_INVALID_HANDLE
    check(cuda.cuStreamDestroy(b))


def test_device_by_pci_bus_id(session: cricket_client.Connection) -> None:
    dev = check(cuda.cuDeviceGet(0))
    bus_id = bytes(check(cuda.cuDeviceGetPCIBusId(64, dev))).split(b"\0")[0]
    assert int(check(cuda.cuDeviceGetByPCIBusId(bus_id))) == 0
    assert int(check(cuda.cuDeviceGetByPCIBusId(bus_id.decode().lower()))) == 0
    assert cuda.cuDeviceGetByPCIBusId(b"not a bus id") == (ERR.CUDA_ERROR_INVALID_VALUE, None)
    assert cuda.cuDeviceGetByPCIBusId(b"ffff:ff:1f.0")[0] == ERR.CUDA_ERROR_INVALID_DEVICE


def test_texture_1d_linear_max_width(session: cricket_client.Connection) -> None:
    dev = check(cuda.cuDeviceGet(0))
    fmt = cuda.CUarray_format.CU_AD_FORMAT_FLOAT
    width = check(cuda.cuDeviceGetTexture1DLinearMaxWidth(fmt, 1, dev))
    assert width > 0
    assert cuda.cuDeviceGetTexture1DLinearMaxWidth(fmt, 1, cuda.CUdevice(99))[0] == ERR.CUDA_ERROR_INVALID_DEVICE


def test_event_record_with_flags(session: cricket_client.Connection) -> None:
    event = check(cuda.cuEventCreate(0))
    stream = check(cuda.cuStreamCreate(0))
    check(cuda.cuEventRecordWithFlags(event, stream, cuda.CUevent_record_flags.CU_EVENT_RECORD_DEFAULT))
    check(cuda.cuEventRecordWithFlags(event, stream, cuda.CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL))
    check(cuda.cuEventSynchronize(event))
    assert cuda.cuEventRecordWithFlags(event, stream, 0x80) == (ERR.CUDA_ERROR_INVALID_VALUE,)
    check(cuda.cuStreamDestroy(stream))
    check(cuda.cuEventDestroy(event))


def test_runtime_device_and_stream_calls(rt: cricket_client.Connection) -> None:
    ok(cudart.cudaInitDevice(0, 0, 0))
    assert cudart.cudaInitDevice(99, 0, 0)[0] == cudart.cudaError_t.cudaErrorInvalidDevice
    cudart.cudaGetLastError()
    stream = ok(cudart.cudaStreamCreate())
    assert ok(cudart.cudaStreamGetDevice(stream)) == ok(cudart.cudaGetDevice())
    assert ok(cudart.cudaStreamGetId(stream)) != ok(cudart.cudaStreamGetId(0))
    ok(cudart.cudaStreamDestroy(stream))
    bus_id = ok(cudart.cudaDeviceGetPCIBusId(64, 0)).split(b"\0")[0]
    assert bus_id == bytes(check(cuda.cuDeviceGetPCIBusId(64, check(cuda.cuDeviceGet(0))))).split(b"\0")[0]
    assert ok(cudart.cudaDeviceGetByPCIBusId(bus_id)) == 0
    prop = ok(cudart.cudaGetDeviceProperties(0))
    assert ok(cudart.cudaChooseDevice(prop)) == 0
    desc = ok(cudart.cudaCreateChannelDesc(32, 0, 0, 0, cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat))
    width = ok(cudart.cudaDeviceGetTexture1DLinearMaxWidth(desc, 0))
    dev = check(cuda.cuDeviceGet(0))
    assert width == check(cuda.cuDeviceGetTexture1DLinearMaxWidth(cuda.CUarray_format.CU_AD_FORMAT_FLOAT, 1, dev))


def test_stream_copy_attributes(session: cricket_client.Connection) -> None:
    src = check(cuda.cuStreamCreate(0))
    dst = check(cuda.cuStreamCreate(0))
    policy = cuda.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY
    value = cuda.CUstreamAttrValue()
    value.syncPolicy = cuda.CUsynchronizationPolicy.CU_SYNC_POLICY_YIELD
    check(cuda.cuStreamSetAttribute(src, policy, value))
    check(cuda.cuStreamCopyAttributes(dst, src))
    got = check(cuda.cuStreamGetAttribute(dst, policy))
    assert int(got.syncPolicy) == int(cuda.CUsynchronizationPolicy.CU_SYNC_POLICY_YIELD)
    check(cuda.cuStreamDestroy(src))
    assert cuda.cuStreamCopyAttributes(dst, src) == (ERR.CUDA_ERROR_INVALID_HANDLE,)
    check(cuda.cuStreamDestroy(dst))


def test_runtime_stream_copy_attributes(rt: cricket_client.Connection) -> None:
    src = ok(cudart.cudaStreamCreate())
    dst = ok(cudart.cudaStreamCreate())
    ok(cudart.cudaStreamCopyAttributes(dst, src))
    ok(cudart.cudaStreamDestroy(src))
    ok(cudart.cudaStreamDestroy(dst))


def test_context_record_and_wait_event(session: cricket_client.Connection) -> None:
    ctx = check(cuda.cuCtxGetCurrent())
    stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    n = 1 << 20
    ptr = check(cuda.cuMemAlloc(n))
    check(cuda.cuMemsetD8Async(ptr, 0x5A, n, stream))
    event = check(cuda.cuEventCreate(0))
    check(cuda.cuCtxRecordEvent(ctx, event))  # all work of the context so far, that stream's too
    check(cuda.cuEventSynchronize(event))
    out = bytearray(16)
    check(cuda.cuMemcpyDtoH(out, int(ptr) + n - 16, 16))  # the legacy stream: no wait for `stream`
    assert out == b"\x5a" * 16
    check(cuda.cuCtxWaitEvent(ctx, event))
    check(cuda.cuCtxSynchronize())
    check(cuda.cuEventDestroy(event))
    assert cuda.cuCtxRecordEvent(ctx, event)[0] == ERR.CUDA_ERROR_INVALID_HANDLE
    check(cuda.cuMemFree(ptr))
    check(cuda.cuStreamDestroy(stream))


def test_shared_memory_bank_configuration(session: cricket_client.Connection, kernels: object) -> None:
    config = check(cuda.cuCtxGetSharedMemConfig())
    assert config in set(cuda.CUsharedconfig)
    check(cuda.cuCtxSetSharedMemConfig(config))
    assert check(cuda.cuCtxGetSharedMemConfig()) == config
    func = check(cuda.cuModuleGetFunction(kernels, b"saxpy"))
    check(cuda.cuFuncSetSharedMemConfig(func, cuda.CUsharedconfig.CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE))
    assert cuda.cuCtxSetSharedMemConfig(7) == (ERR.CUDA_ERROR_INVALID_VALUE,)


def test_runtime_shared_memory_bank_configuration(rt: cricket_client.Connection) -> None:
    config = ok(cudart.cudaDeviceGetSharedMemConfig())
    assert isinstance(config, cudart.cudaSharedMemConfig)
    assert int(config) == int(check(cuda.cuCtxGetSharedMemConfig()))
    ok(cudart.cudaDeviceSetSharedMemConfig(config))


def test_synchronize_a_named_context(session: cricket_client.Connection) -> None:
    primary = check(cuda.cuCtxGetCurrent())
    stream = check(cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING))
    ptr = check(cuda.cuMemAlloc(1 << 20))
    check(cuda.cuMemsetD8Async(ptr, 0x3C, 1 << 20, stream))
    check(cuda.cuCtxSynchronize_v2(primary))
    assert cuda.cuStreamQuery(stream) == (ERR.CUDA_SUCCESS,)
    out = bytearray(8)
    check(cuda.cuMemcpyDtoH(out, int(ptr) + (1 << 20) - 8, 8))
    assert out == b"\x3c" * 8
    check(cuda.cuCtxSynchronize_v2(None))
    other = check(cuda.cuCtxCreate(None, 0, check(cuda.cuDeviceGet(0))))
    check(cuda.cuCtxSetCurrent(primary))
    check(cuda.cuCtxSynchronize_v2(other))  # not the current one
    check(cuda.cuCtxDestroy(other))
    assert cuda.cuCtxSynchronize_v2(other)[0] in (ERR.CUDA_ERROR_INVALID_CONTEXT, ERR.CUDA_ERROR_INVALID_HANDLE)
    check(cuda.cuMemFree(ptr))
    check(cuda.cuStreamDestroy(stream))
