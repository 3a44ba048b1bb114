"""Launches through the native door with `void **kernelParams` (packed in C per function):
each launch carries its arguments as they were at the call, in the program's order with the
calls around it (pipelined, gathered into batches), on the legacy and the per-thread default
stream; a NULL parameter pointer is refused with CUDA_ERROR_INVALID_VALUE and the launches
after it run."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator

import pytest
from server_harness import Server, running_server
from test_native_door import CUBIN, cricket_run

from cricket_client.native import library_path

LAUNCHES = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()
    with running_server(tmp_path_factory.mktemp("native-launch")) as srv:
        yield srv


SCRIPT = textwrap.dedent(
    """
    import ctypes, sys
    import numpy as np
    from cuda.bindings import driver as cuda

    def ok(result):
        err = result[0]
        if err != cuda.CUresult.CUDA_SUCCESS:
            raise SystemExit(f"failed: {err.name}")
        return result[1] if len(result) == 2 else result[1:]

    ok(cuda.cuInit(0))
    ctx = ok(cuda.cuDevicePrimaryCtxRetain(ok(cuda.cuDeviceGet(0))))
    ok(cuda.cuCtxSetCurrent(ctx))
    module = ok(cuda.cuModuleLoadData(open(sys.argv[1], "rb").read()))
    fill = ok(cuda.cuModuleGetFunction(module, b"fill_u32"))
    base = ok(cuda.cuMemAlloc(64))
    ok(cuda.cuMemsetD32(base, 0, 16))
    out, value, count = ctypes.c_uint64(), ctypes.c_uint32(), ctypes.c_uint64(1)
    params = (ctypes.c_void_p * 3)(*(ctypes.addressof(c) for c in (out, value, count)))
    per_thread = cuda.CUstream(2)  # CU_STREAM_PER_THREAD
    for k in range(int(sys.argv[2])):  # launch k writes k into element k % 16
        out.value, value.value = int(base) + 4 * (k % 16), k
        stream = per_thread if k % 2 else cuda.CUstream(0)
        ok(cuda.cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, stream, ctypes.addressof(params), 0))
    ok(cuda.cuStreamSynchronize(per_thread))
    host = np.zeros(16, dtype=np.uint32)
    ok(cuda.cuMemcpyDtoH(host, base, 64))
    print("values", " ".join(map(str, host.tolist())))
    params[1] = None
    print("null", cuda.cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, 0, ctypes.addressof(params), 0)[0].name)
    params[1] = ctypes.addressof(value)
    out.value, value.value, count.value = int(base), 7, 16
    ok(cuda.cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, 0, ctypes.addressof(params), 0))
    ok(cuda.cuMemcpyDtoH(host, base, 64))
    print("after", int(host.sum()))
    """
)


def test_each_launch_carries_its_own_arguments_in_order(server: Server) -> None:
    done = cricket_run(server, "--", sys.executable, "-c", SCRIPT, str(CUBIN), str(LAUNCHES))
    assert done.returncode == 0, done.stderr
    last = [max(k for k in range(LAUNCHES) if k % 16 == j) for j in range(16)]
    assert done.stdout.splitlines() == [
        "values " + " ".join(map(str, last)),
        "null CUDA_ERROR_INVALID_VALUE",
        f"after {16 * 7}",
    ]
