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
