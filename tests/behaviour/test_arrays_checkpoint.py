"""Arrays, texture and surface objects survive checkpoint, SIGKILL and `cricket-restart`:
the same handles and object values, the same descriptors, contents bit-exact. Runs on
CRICKET_TEST_BACKEND (on cuda the driver issues object values: the restore must get them
back, or fail naming them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from behaviour_helpers import ok, open_session
from checkpoint_helpers import ServerProcess, server_list, start_restart, start_server

import cricket_client
from checkpoint.reader import Checkpoint
from cricket_client import runtime as cudart

OK = cudart.cudaError_t.cudaSuccess
FLOAT = cudart.cudaChannelFormatKind.cudaChannelFormatKindFloat
H2D = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def _texture(array: Any) -> Any:
    res = cudart.cudaResourceDesc()
    res.resType = cudart.cudaResourceType.cudaResourceTypeArray
    res.res.array.array = array
    tex = cudart.cudaTextureDesc()
    tex.addressMode = [cudart.cudaTextureAddressMode.cudaAddressModeWrap] * 3
    tex.filterMode = cudart.cudaTextureFilterMode.cudaFilterModePoint
    tex.normalizedCoords = 1
    return ok(cudart.cudaCreateTextureObject(res, tex, None))


def _read_layers(array: Any, w: int, h: int, d: int) -> np.ndarray:
    out = np.zeros((d, h, w), dtype=np.float32)
    p = cudart.cudaMemcpy3DParms()
    p.srcArray = array
    p.dstPtr = cudart.make_cudaPitchedPtr(out.ctypes.data, w * 4, w, h)
    p.extent = cudart.make_cudaExtent(w, h, d)
    p.kind = D2H
    ok(cudart.cudaMemcpy3D(p))
    return out


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_arrays_and_objects_come_back_after_a_restart(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    server = start_server(servers, tmp_path, isolation)
    conn = open_session(server.address, make_default=True)
    try:
        desc = ok(cudart.cudaCreateChannelDesc(32, 0, 0, 0, FLOAT))
        w, h = 33, 7
        flat = ok(cudart.cudaMallocArray(desc, w, h, cudart.cudaArraySurfaceLoadStore))
        image = np.random.default_rng(3).random((h, w), dtype=np.float32)
        ok(cudart.cudaMemcpy2DToArray(flat, 0, 0, image, w * 4, w * 4, h, H2D))
        layers = ok(cudart.cudaMalloc3DArray(
            desc, cudart.make_cudaExtent(8, 4, 3), cudart.cudaArrayLayered,
        ))  # fmt: skip
        stack = np.arange(3 * 4 * 8, dtype=np.float32).reshape(3, 4, 8)
        p = cudart.cudaMemcpy3DParms()
        p.srcPtr = cudart.make_cudaPitchedPtr(stack.ctypes.data, 8 * 4, 8, 4)
        p.dstArray = layers
        p.extent = cudart.make_cudaExtent(8, 4, 3)
        p.kind = H2D
        ok(cudart.cudaMemcpy3D(p))
        first = _texture(flat)
        gone = _texture(layers)
        third = _texture(layers)
        ok(cudart.cudaDestroyTextureObject(gone))  # a gap in the values
        res = cudart.cudaResourceDesc()
        res.resType = cudart.cudaResourceType.cudaResourceTypeArray
        res.res.array.array = flat
        surf = ok(cudart.cudaCreateSurfaceObject(res))

        info = cricket_client.checkpoint(tmp_path / "ckpt")
        assert info.sessions == 1
        manifest = Checkpoint.open(tmp_path / "ckpt").manifest
        (s,) = manifest.sessions
        assert sorted(a.handle for a in s.arrays) == sorted([int(flat), int(layers)])
        assert sorted(t.value for t in s.tex_objects) == sorted([int(first), int(third), int(surf)])
        server.kill()

        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)

        out = np.zeros((h, w), dtype=np.float32)
        ok(cudart.cudaMemcpy2DFromArray(out, w * 4, flat, 0, 0, w * 4, h, D2H))
        assert np.array_equal(out, image)
        assert np.array_equal(_read_layers(layers, 8, 4, 3), stack)
        _d, extent, flags = ok(cudart.cudaArrayGetInfo(layers))
        assert (extent.width, extent.height, extent.depth) == (8, 4, 3)
        assert flags & cudart.cudaArrayLayered
        for tex, array in ((first, flat), (third, layers)):
            got = ok(cudart.cudaGetTextureObjectResourceDesc(tex))
            assert int(got.res.array.array) == int(array)
            t = ok(cudart.cudaGetTextureObjectTextureDesc(tex))
            assert t.normalizedCoords == 1
        err, _ = cudart.cudaGetTextureObjectResourceDesc(gone)
        assert err != OK  # destroyed before the checkpoint: not brought back
        assert int(ok(cudart.cudaGetSurfaceObjectResourceDesc(surf)).res.array.array) == int(flat)
        ok(cudart.cudaDestroySurfaceObject(surf))
        ok(cudart.cudaDestroyTextureObject(first))
        ok(cudart.cudaDestroyTextureObject(third))
        ok(cudart.cudaFreeArray(flat))
        ok(cudart.cudaFreeArray(layers))
    finally:
        conn.close()
