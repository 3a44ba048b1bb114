"""Runtime calls built from remoted ones, on both backends: cudaMemset3D sets every slice of
pitched memory, cudaMemcpyArrayToArray copies bytes across row ends, cudaMemcpy3DPeer copies on
one device (and refuses two, naming them), getLocalRuntimeVersion is the server's runtime."""

from __future__ import annotations

import numpy as np
from behaviour_helpers import ok

import cricket_client
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess
H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
D2D = cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice
UNSIGNED = cudart.cudaChannelFormatKind.cudaChannelFormatKindUnsigned


def test_memset3d_sets_every_slice(rt: cricket_client.Connection) -> None:
    pitched = ok(cudart.cudaMalloc3D(cudart.make_cudaExtent(64, 4, 3)))
    total = pitched.pitch * pitched.ysize * 3
    ok(cudart.cudaMemset(pitched.ptr, 0, total))
    ok(cudart.cudaMemset3D(pitched, 7, cudart.make_cudaExtent(64, 4, 3)))
    host = np.zeros(total, dtype=np.uint8)
    ok(cudart.cudaMemcpy(host, pitched.ptr, total, D2H))
    rows = host.reshape(3 * 4, pitched.pitch)
    assert np.all(rows[:, :64] == 7) and np.all(rows[:, 64:] == 0)
    stream = ok(cudart.cudaStreamCreate())
    ok(cudart.cudaMemset3DAsync(pitched, 9, cudart.make_cudaExtent(8, 1, 1), stream))
    ok(cudart.cudaStreamSynchronize(stream))
    ok(cudart.cudaMemcpy(host, pitched.ptr, total, D2H))
    assert np.all(host[:8] == 9) and host[8] == 7
    ok(cudart.cudaStreamDestroy(stream))
    ok(cudart.cudaFree(pitched.ptr))


def test_array_to_array_copies_run_across_row_ends(rt: cricket_client.Connection) -> None:
    desc = ok(cudart.cudaCreateChannelDesc(8, 0, 0, 0, UNSIGNED))
    src = ok(cudart.cudaMallocArray(desc, 16, 4, 0))
    dst = ok(cudart.cudaMallocArray(desc, 8, 8, 0))
    data = np.arange(64, dtype=np.uint8)
    ok(cudart.cudaMemcpy2DToArray(src, 0, 0, data, 16, 16, 4, H2D))
    zero = np.zeros(64, dtype=np.uint8)
    ok(cudart.cudaMemcpy2DToArray(dst, 0, 0, zero, 8, 8, 8, H2D))
    # 30 bytes from src byte 5 of row 0 to dst byte 3 of row 1
    ok(cudart.cudaMemcpyArrayToArray(dst, 3, 1, src, 5, 0, 30, D2D))
    out = np.zeros(64, dtype=np.uint8)
    ok(cudart.cudaMemcpy2DFromArray(out, 8, dst, 0, 0, 8, 8, D2H))
    expected = zero.copy()
    expected[11:41] = data[5:35]
    assert np.array_equal(out, expected)
    ok(cudart.cudaFreeArray(src))
    ok(cudart.cudaFreeArray(dst))


def test_memcpy3d_peer_on_one_device_and_two_refused(rt: cricket_client.Connection) -> None:
    size = 256
    dptr = ok(cudart.cudaMalloc(size))
    data = np.arange(size, dtype=np.uint8)
    ok(cudart.cudaMemcpy(dptr, data, size, H2D))
    desc = ok(cudart.cudaCreateChannelDesc(8, 0, 0, 0, UNSIGNED))
    arr = ok(cudart.cudaMallocArray(desc, size, 0, 0))
    params = cudart.cudaMemcpy3DPeerParms()
    params.srcPtr = cudart.make_cudaPitchedPtr(dptr, size, 1, 1)
    params.dstArray = arr
    params.extent = cudart.make_cudaExtent(size, 1, 1)
    ok(cudart.cudaMemcpy3DPeer(params))
    out = np.zeros(size, dtype=np.uint8)
    ok(cudart.cudaMemcpy2DFromArray(out, size, arr, 0, 0, size, 1, D2H))
    assert np.array_equal(out, data)
    params.dstDevice = 1
    (err,) = cudart.cudaMemcpy3DPeer(params)
    assert err == cudart.cudaError_t.cudaErrorNotSupported
    assert "dstDevice 1" in cricket_client.last_error_message()
    ok(cudart.cudaFreeArray(arr))
    ok(cudart.cudaFree(dptr))


def test_local_runtime_version_is_the_servers(rt: cricket_client.Connection) -> None:
    assert ok(cudart.getLocalRuntimeVersion()) == ok(cudart.cudaRuntimeGetVersion())
