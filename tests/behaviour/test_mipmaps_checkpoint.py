"""Mipmapped arrays survive checkpoint, SIGKILL and `cricket-restart`: the same mipmapped
array and level handles, every level's contents bit-exact, a texture object over the
mipmapped array with its value. A session holding a green context is refused a checkpoint
with the reason, and checkpoints again once the green context is destroyed. Runs on
CRICKET_TEST_BACKEND."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from behaviour_helpers import check, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server

import cricket_client
from checkpoint.reader import Checkpoint
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

FLOAT = cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat
H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()



def _level_image(lv: int, w: int, h: int) -> np.ndarray:
    return np.random.default_rng(lv).random((h, w), dtype=np.float32)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_mipmapped_array_comes_back_after_a_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    server = start_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    try:
        desc = check(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
        w, h, levels = 48, 20, 5
        mipmap = check(cudart.cudaMallocMipmappedArray(desc, cudart.make_cudaExtent(w, h, 0), levels, 0))
        handles = []
        for lv in range(levels):
            level = check(cudart.cudaGetMipmappedArrayLevel(mipmap, lv))
            handles.append(int(level))
            lw, lh = max(1, w >> lv), max(1, h >> lv)
            check(cudart.cudaMemcpy2DToArray(
                level, 0, 0, _level_image(lv, lw, lh), lw * 4, lw * 4, lh, H2D
            ))  # fmt: skip
        res = cudart.cudaResourceDesc()
        res.resType = cudart.cudaResourceType.cudaResourceTypeMipmappedArray
        res.res.mipmap.mipmap = mipmap
        tex = cudart.cudaTextureDesc()
        tex.normalizedCoords = 1
        tex.maxMipmapLevelClamp = float(levels - 1)
        obj = check(cudart.cudaCreateTextureObject(res, tex, None))

        cricket_client.checkpoint(tmp_path / "ckpt")
        (s,) = Checkpoint.open(tmp_path / "ckpt").manifest.sessions
        (m,) = s.mipmaps
        assert m.handle == int(mipmap) and [lv.handle for lv in m.levels] == handles
        assert s.arrays == []  # the levels travel with their mipmapped array
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        for lv in range(levels):
            level = check(cudart.cudaGetMipmappedArrayLevel(mipmap, lv))
            assert int(level) == handles[lv]
            lw, lh = max(1, w >> lv), max(1, h >> lv)
            out = np.zeros((lh, lw), dtype=np.float32)
            check(cudart.cudaMemcpy2DFromArray(out, lw * 4, level, 0, 0, lw * 4, lh, D2H))
            assert np.array_equal(out, _level_image(lv, lw, lh))
        got = check(cudart.cudaGetTextureObjectResourceDesc(obj))
        assert got.resType == cudart.cudaResourceType.cudaResourceTypeMipmappedArray
        assert int(got.res.mipmap.mipmap) == int(mipmap)
        check(cudart.cudaDestroyTextureObject(obj))
        check(cudart.cudaFreeMipmappedArray(mipmap))
    finally:
        conn.close()


def test_a_green_context_refuses_a_checkpoint_until_destroyed(
    tmp_path: Path, servers: list[ServerProcess]
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        sm = cuda.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM
        res = check(cuda.cuDeviceGetDevResource(check(cuda.cuDeviceGet(0)), sm))
        groups, _n, _rest = check(cuda.cuDevSmResourceSplitByCount(1, res, 0, 8))
        desc = check(cuda.cuDevResourceGenerateDesc(groups, 1))
        green = check(cuda.cuGreenCtxCreate(desc, check(cuda.cuDeviceGet(0)), 1))
        with pytest.raises(cricket_client.CheckpointFailed, match="green context") as refused:
            cricket_client.checkpoint(tmp_path / "ckpt")
        assert "cuGreenCtxDestroy" in str(refused.value)
        check(cuda.cuGreenCtxDestroy(green))
        assert cricket_client.checkpoint(tmp_path / "ckpt").sessions == 1
    finally:
        conn.close()


def test_sparse_and_deferred_arrays_come_back_without_contents(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        float4 = check(cudart.cudaCreateChannelDesc(32, 32, 32, 32, FLOAT))
        sparse = check(cudart.cudaMallocMipmappedArray(
            float4, cudart.make_cudaExtent(256, 128, 0), 9, cudart.cudaArraySparse
        ))  # fmt: skip
        before = check(cudart.cudaMipmappedArrayGetSparseProperties(sparse))
        level = check(cudart.cudaGetMipmappedArrayLevel(sparse, 8))
        d = cuda.CUDA_ARRAY3D_DESCRIPTOR()
        d.Width, d.Height, d.Format, d.NumChannels = 64, 64, cuda.CUarray_format.CU_AD_FORMAT_FLOAT, 1
        d.Flags = cuda.CUDA_ARRAY3D_DEFERRED_MAPPING
        deferred = check(cuda.cuArray3DCreate(d))

        cricket_client.checkpoint(tmp_path / "ckpt")
        (s,) = Checkpoint.open(tmp_path / "ckpt").manifest.sessions
        assert [a.contents.size for a in s.arrays] == [0]
        assert {lv.contents.size for lv in s.mipmaps[0].levels} == {0}
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        after = check(cudart.cudaMipmappedArrayGetSparseProperties(sparse))
        assert (after.miptailFirstLevel, after.miptailSize) == (
            before.miptailFirstLevel, before.miptailSize
        )  # fmt: skip
        assert int(check(cudart.cudaGetMipmappedArrayLevel(sparse, 8))) == int(level)
        assert check(cuda.cuArray3DGetDescriptor(deferred)).Flags == cuda.CUDA_ARRAY3D_DEFERRED_MAPPING
        check(cuda.cuArrayDestroy(deferred))
        check(cudart.cudaFreeMipmappedArray(sparse))
    finally:
        conn.close()
