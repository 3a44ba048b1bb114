"""What flags and attribute calls set survives checkpoint, SIGKILL and cricket-restart:
context flags and cache configuration, a function's cache configuration and attributes,
stream priority and attributes; cuLaunchKernelEx runs on the restored function."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from behaviour_helpers import KERNELS, check, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def test_settings_survive_checkpoint_and_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        sched = int(cuda.CUctx_flags.CU_CTX_SCHED_YIELD)
        check(cuda.cuCtxSetFlags(sched))
        check(cuda.cuCtxSetCacheConfig(cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_EQUAL))
        module = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        func = check(cuda.cuModuleGetFunction(module, b"vector_add"))
        check(cuda.cuFuncSetCacheConfig(func, cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED))
        dyn = cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(cuda.cuFuncSetAttribute(func, dyn, 65536))
        _least, greatest = check(cuda.cuCtxGetStreamPriorityRange())
        stream = check(cuda.cuStreamCreateWithPriority(0, greatest))
        domain = cuda.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN
        value = cuda.CUstreamAttrValue()
        value.memSyncDomain = cuda.CUlaunchMemSyncDomain.CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
        check(cuda.cuStreamSetAttribute(stream, domain, value))

        cricket_client.checkpoint(tmp_path / "ckpt")
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        assert check(cuda.cuCtxGetFlags()) & 0x7 == sched
        assert check(cuda.cuCtxGetCacheConfig()) == cuda.CUfunc_cache.CU_FUNC_CACHE_PREFER_EQUAL
        assert check(cuda.cuFuncGetAttribute(dyn, func)) == 65536
        assert check(cuda.cuStreamGetPriority(stream)) == greatest
        got = check(cuda.cuStreamGetAttribute(stream, domain))
        assert int(got.memSyncDomain) == int(
            cuda.CUlaunchMemSyncDomain.CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
        )
        n = 1024
        a = np.arange(n, dtype=np.float32)
        da, dc = check(cuda.cuMemAlloc(a.nbytes)), check(cuda.cuMemAlloc(a.nbytes))
        check(cuda.cuMemcpyHtoD(da, a, a.nbytes))
        config = cuda.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = n // 128, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = 128, 1, 1
        config.hStream = stream
        config.numAttrs = 0
        args = ((da, da, dc, n), (None, None, None, ctypes.c_int))
        check(cuda.cuLaunchKernelEx(config, func, args, 0))
        check(cuda.cuStreamSynchronize(stream))
        out = np.zeros(n, dtype=np.float32)
        check(cuda.cuMemcpyDtoH(out, dc, out.nbytes))
        assert np.array_equal(out, 2 * a)
    finally:
        conn.close()
