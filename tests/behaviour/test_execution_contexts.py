"""Execution contexts of devices, on both backends: cudaDeviceGetExecutionCtx gives the
device's primary context (the same one every time, the one the runtime uses), whose device,
id and streams the runtime can ask for; a context that is not one answers an error."""

from __future__ import annotations

from behaviour_helpers import ok

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess


def test_a_devices_execution_context_is_its_primary_context(rt: cricket_client.Connection) -> None:
    ctx = ok(cudart.cudaDeviceGetExecutionCtx(0))
    assert isinstance(ctx, cudart.cudaExecutionContext_t)
    assert int(ok(cudart.cudaDeviceGetExecutionCtx(0))) == int(ctx)
    ok(cudart.cudaFree(0))  # the runtime's own context
    assert int(ok(cuda.cuCtxGetCurrent())) == int(ctx)
    assert ok(cudart.cudaExecutionCtxGetDevice(ctx)) == 0
    ident = ok(cudart.cudaExecutionCtxGetId(ctx))
    assert isinstance(ident, int) and ident > 0
    stream = ok(cudart.cudaExecutionCtxStreamCreate(ctx, 0, 0))
    assert isinstance(stream, cudart.cudaStream_t)
    ok(cudart.cudaStreamSynchronize(stream))
    ok(cudart.cudaStreamDestroy(stream))
    err, value = cudart.cudaExecutionCtxGetDevice(cudart.cudaExecutionContext_t(0x1234))
    assert err != OK and value is None
