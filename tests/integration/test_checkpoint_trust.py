"""Secure checkpoint defaults of cricket-server, in both isolation modes:

- CHECKPOINT_SERVER (every session's memory and tokens) is the operator's: refused to a
  network client, served on the server's Unix socket to the server's own user;
- without --checkpoint-root, client-named paths are confined to the default root, a
  directory of the server's user (shown in --help), created mode 0700;
- no symbolic link below the root is followed out of it.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from security_helpers import ROOT, running_server

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr.rpc.client import RpcClient
from rpc_spec import cricket_rpc as proto

E = cuda.CUresult
ISOLATIONS = ["thread", "process"]


def allocate(conn: cricket_client.Connection) -> None:
    with conn.active():
        assert cuda.cuInit(0) == (E.CUDA_SUCCESS,)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(cuda.CUdevice(0))
        assert cuda.cuCtxSetCurrent(ctx) == (E.CUDA_SUCCESS,)
        err, _ptr = cuda.cuMemAlloc(4096)
        assert err == E.CUDA_SUCCESS


def cricket_checkpoint(server: str, directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "checkpoint", "--server", server, str(directory)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_only_the_operator_checkpoints_the_server(tmp_path: Path, isolation: str) -> None:
    root, sock = tmp_path / "root", tmp_path / "op.sock"
    options = ("--checkpoint-root", str(root), "--unix", str(sock))
    with running_server(tmp_path, isolation, *options) as address:
        tenant = cricket_client.connect(address, make_default=False)
        try:
            allocate(tenant)
            # A network client, with no HELLO, names another path: refused, nothing written.
            host, port = address.rsplit(":", 1)
            with RpcClient((host, int(port)), timeout=60) as rpc:
                result = proto.CRICKET_V1_Client(rpc).CHECKPOINT_SERVER(str(root / "stolen"), 0)
            assert result.err == E.CUDA_ERROR_NOT_PERMITTED
            assert "operator" in result.value
            # The tenant naming its own session through CHECKPOINT_SERVER: refused too.
            own = tenant.info.session_id
            result = proto.CRICKET_V1_Client(tenant._rpc).CHECKPOINT_SERVER(
                str(root / "own"), own
            )
            assert result.err == E.CUDA_ERROR_NOT_PERMITTED
            refused = cricket_checkpoint(address, root / "tcp")
            assert refused.returncode != 0 and "operator" in refused.stderr
            assert not root.exists() or not any(root.iterdir())
            # The operator: the server's own user on its Unix socket.
            taken = cricket_checkpoint(f"unix:{sock}", root / "all")
            assert taken.returncode == 0, taken.stderr
            assert "1 session(s)" in taken.stdout
            assert (root / "all" / "MANIFEST").is_file()
        finally:
            tenant.close()


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_client_paths_are_confined_to_the_default_root(
    tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    default_root = tmp_path / "state" / "cricket" / "checkpoints"
    shown = subprocess.run([sys.executable, "-m", "cricket_server", "--help"],
                           capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert str(default_root) in "".join(shown.stdout.split())  # however --help wraps it
    outside = tmp_path / "outside"
    with running_server(tmp_path, isolation) as address:
        conn = cricket_client.connect(address, make_default=False)
        try:
            allocate(conn)
            for bad in (outside, default_root / ".." / "escape"):
                with pytest.raises(Exception, match="checkpoint root"):
                    cricket_client.checkpoint(bad, connection=conn)
            assert not outside.exists() and not (default_root.parent / "escape").exists()
            cricket_client.checkpoint(default_root / "mine", connection=conn)
            assert (default_root / "mine" / "MANIFEST").is_file()
            assert stat.S_IMODE(os.stat(default_root).st_mode) == 0o700
        finally:
            conn.close()


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_no_symbolic_link_leads_out_of_the_root(tmp_path: Path, isolation: str) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(mode=0o700)
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "inner").mkdir()
    (root / "alias").symlink_to(root / "inner")
    with running_server(tmp_path, isolation, "--checkpoint-root", str(root)) as address:
        conn = cricket_client.connect(address, make_default=False)
        try:
            allocate(conn)
            for bad in (root / "link", root / "link" / "x", root / "alias" / "x"):
                with pytest.raises(Exception, match="symbolic link"):
                    cricket_client.checkpoint(bad, connection=conn)
            assert not any(outside.iterdir())
            assert not any((root / "inner").iterdir())
        finally:
            conn.close()


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_tenant_replaces_only_its_own_checkpoint(tmp_path: Path, isolation: str) -> None:
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    (root / "notes").mkdir()
    (root / "notes" / "keep.txt").write_text("not a checkpoint")
    with running_server(tmp_path, isolation, "--checkpoint-root", str(root)) as address:
        alice = cricket_client.connect(address, make_default=False)
        bob = cricket_client.connect(address, make_default=False)
        try:
            allocate(alice)
            allocate(bob)
            cricket_client.checkpoint(root / "alice", connection=alice)
            manifest = (root / "alice" / "MANIFEST").read_bytes()
            with pytest.raises(Exception, match="other sessions"):
                cricket_client.checkpoint(root / "alice", connection=bob)
            assert (root / "alice" / "MANIFEST").read_bytes() == manifest
            with pytest.raises(Exception, match="no checkpoint"):
                cricket_client.checkpoint(root / "notes", connection=bob)
            assert (root / "notes" / "keep.txt").read_text() == "not a checkpoint"
            cricket_client.checkpoint(root / "alice", connection=alice)  # its own: replaced
        finally:
            alice.close()
            bob.close()
