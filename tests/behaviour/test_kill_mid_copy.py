"""A client killed in the middle of a 1 GiB copy: all its memory comes back, and another
client, working at the same time, goes on unharmed."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
from behaviour_helpers import BACKEND, KERNELS, ROOT, check

import cricket_client
from cricket_client import driver as cuda

GIB = 1 << 30
# A sim worker process simulates a device of its own: with process isolation another
# session's cuMemGetInfo cannot see the victim's memory (on cuda it is the one real device).
SHARED_DEVICE = not (BACKEND == "sim" and os.environ.get("CRICKET_TEST_ISOLATION") == "process")

VICTIM = textwrap.dedent(
    """
    import sys
    import numpy as np
    import cricket_client
    from cricket_client import driver as cuda

    cricket_client.connect(sys.argv[1])
    cuda.cuInit(0)
    err, dev = cuda.cuDeviceGet(0)
    err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
    cuda.cuCtxSetCurrent(ctx)
    err, ptr = cuda.cuMemAlloc(1 << 30)
    assert int(err) == 0, err
    host = np.ones(1 << 30, dtype=np.uint8)
    print("copying", flush=True)
    while True:
        cuda.cuMemcpyHtoD(ptr, host, host.nbytes)
    """
)


def _free_bytes() -> int:
    free, _total = check(cuda.cuMemGetInfo())
    return int(free)


def _wait_for(condition, what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_client_killed_mid_copy_frees_everything(
    server_address: str, session: cricket_client.Connection
) -> None:
    n = 1 << 20
    data = np.arange(n, dtype=np.uint32)
    mine = check(cuda.cuMemAlloc(data.nbytes))
    check(cuda.cuMemcpyHtoD(mine, data, data.nbytes))

    victim = subprocess.Popen(
        [sys.executable, "-c", VICTIM, server_address],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
    )
    try:
        assert victim.stdout is not None
        assert victim.stdout.readline().strip() == "copying"
        time.sleep(2.0)  # well inside the copy loop; a new spare worker, if any, has settled
        during = _free_bytes()
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        # The victim's gigabyte (and its context, where it had one of its own) comes back.
        if SHARED_DEVICE:
            _wait_for(lambda: _free_bytes() >= during + int(0.95 * GIB),
                      f"memory did not come back: free {_free_bytes()} vs {during} during the copy")
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()

    # The other client is unharmed: its data intact, and it goes on working.
    back = np.empty_like(data)
    check(cuda.cuMemcpyDtoH(back, mine, back.nbytes))
    assert np.array_equal(back, data)
    mod = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
    add = check(cuda.cuModuleGetFunction(mod, b"vector_add"))
    out = check(cuda.cuMemAlloc(data.nbytes))
    m = n  # float32 elements in the same number of bytes
    check(cuda.cuLaunchKernel(add, (m + 255) // 256, 1, 1, 256, 1, 1, 0, 0,
                              ((mine, mine, out, m), (None, None, None, ctypes.c_int)), 0))
    result = np.empty(m, dtype=np.float32)
    check(cuda.cuMemcpyDtoH(result, out, result.nbytes))
    as_float = data.view(np.float32)
    assert np.array_equal(result, as_float + as_float)
    check(cuda.cuMemFree(out))
    check(cuda.cuMemFree(mine))
    check(cuda.cuModuleUnload(mod))
