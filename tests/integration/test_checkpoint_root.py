"""cricket-server --checkpoint-root: checkpoint paths that clients name must lie inside it,
for a client's own session and for cricket-checkpoint --server, in both isolation modes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from security_helpers import running_server

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_checkpoint_paths_are_confined_to_the_root(tmp_path: Path, isolation: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "elsewhere"
    sock = tmp_path / "operator.sock"  # CHECKPOINT_SERVER is the operator's, on this socket
    options = ("--checkpoint-root", str(root), "--unix", str(sock))
    with running_server(tmp_path, isolation, *options) as address:
        conn = cricket_client.connect(address, make_default=False)
        try:
            with conn.active():
                assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
                err, ctx = cuda.cuDevicePrimaryCtxRetain(cuda.CUdevice(0))
                assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
                err, ptr = cuda.cuMemAlloc(4096)
                assert err == E.CUDA_SUCCESS
            for bad in (outside, root / ".." / "escape", root):
                with pytest.raises(Exception, match="checkpoint root"):
                    cricket_client.checkpoint(bad, connection=conn)
                assert not Path(bad).resolve().joinpath("MANIFEST").exists()
            assert not outside.exists() and not (tmp_path / "escape").exists()
            cricket_client.checkpoint(root / "mine", connection=conn)
            assert (root / "mine").is_dir()
        finally:
            conn.close()
        run = [sys.executable, "-m", "checkpoint", "--server", f"unix:{sock}"]
        refused = subprocess.run([*run, str(outside)], capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0 and "checkpoint root" in refused.stderr
        assert not outside.exists()
        taken = subprocess.run([*run, str(root / "all")], capture_output=True, text=True,
                               timeout=60)  # fmt: skip
        assert taken.returncode == 0, taken.stderr
