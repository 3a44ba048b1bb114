"""A checkpoint directory is untrusted input: files are read without following symbolic links,
only regular files are read, and a manifest that asks for anything a restore would refuse
(a blob larger than its allocation, overlapping allocations, duplicate or unknown handles,
references to objects that are not there) is refused by `cricket-checkpoint verify` and by
the restore, with the same message, before the device is touched."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from checkpoint.cli import tools
from checkpoint.format import MANIFEST, CheckpointError, decode_manifest, encode_manifest
from checkpoint.reader import Checkpoint
from cricket_server.backends import make_backend
from cricket_server.checkpointing import restore_checkpoint, write_checkpoint
from cricket_server.memory import AddressArena
from cricket_server.session import Session, SessionManager
from rpc_spec import checkpoint_rpc as ck

ROOT = Path(__file__).resolve().parents[2]
CUBIN = (ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin").read_bytes()


def manager() -> SessionManager:
    backend = make_backend("sim")
    return SessionManager(backend, AddressArena(*backend.address_space()))


def build(m: SessionManager) -> Session:
    s = m.open("127.0.0.1:1", "test")
    s.init(0)
    s.ctx_set_current(s.primary_ctx_retain(0))
    for size in (4096, 300, 70_000):
        ptr = s.mem_alloc(size)
        s.memcpy_htod(ptr, memoryview(bytes([size & 0xFF]) * size))
    module = s.module_load(CUBIN, {})
    s.module_get_function(module, "list_sum")
    s.module_get_global(module, "counter")
    s.stream_create(1, 0)
    s.event_create(2)
    return s


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    s = build(manager())
    write_checkpoint(s.manager, [s], tmp_path / "c")
    s.close("test")
    return tmp_path / "c"


def rewrite(path: Path, change: Callable[[ck.manifest_body], None]) -> None:
    """Change the manifest as a forger would: its checksum is made to match again."""
    manifest = path / MANIFEST
    body = decode_manifest(manifest.read_bytes(), manifest)
    change(body)
    manifest.write_bytes(encode_manifest(body))


def verify_cli(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(tools, ["verify", str(path)])
    return result.exit_code, result.output


def refused_everywhere(path: Path, expected: str) -> CheckpointError:
    """Verify (API and command) and the restore all refuse `path` naming `expected`; the
    restoring server is left as it was."""
    with pytest.raises(CheckpointError, match=expected):
        Checkpoint.open(path).verify()
    code, output = verify_cli(path)
    assert code == 1 and expected in output, output
    m = manager()
    free = m.arena.free_bytes()
    with pytest.raises(CheckpointError, match=expected) as info:
        restore_checkpoint(m, path)
    assert m.sessions() == [] and m.arena.free_bytes() == free
    return info.value


# -- files ----------------------------------------------------------------------------------


def test_a_blob_that_is_a_symbolic_link_is_refused_naming_it(
    checkpoint_dir: Path, tmp_path: Path
) -> None:
    ref = Checkpoint.open(checkpoint_dir).manifest.sessions[0].allocations[0].contents
    blob = checkpoint_dir / ref.file
    elsewhere = tmp_path / "outside"
    os.rename(blob, elsewhere)  # the same bytes: every checksum still matches
    blob.symlink_to(elsewhere)
    error = refused_everywhere(checkpoint_dir, "symbolic link")
    assert error.path == str(blob)


def test_a_blob_folder_that_is_a_symbolic_link_is_refused(
    checkpoint_dir: Path, tmp_path: Path
) -> None:
    ref = Checkpoint.open(checkpoint_dir).manifest.sessions[0].allocations[0].contents
    folder = (checkpoint_dir / ref.file).parent
    os.rename(folder, tmp_path / "outside")
    folder.symlink_to(tmp_path / "outside")
    error = refused_everywhere(checkpoint_dir, "symbolic link")
    assert error.path == str(folder)


def test_a_manifest_that_is_a_symbolic_link_is_refused(
    checkpoint_dir: Path, tmp_path: Path
) -> None:
    manifest = checkpoint_dir / MANIFEST
    os.rename(manifest, tmp_path / "outside")
    manifest.symlink_to(tmp_path / "outside")
    with pytest.raises(CheckpointError, match="symbolic link") as info:
        Checkpoint.open(checkpoint_dir)
    assert info.value.path == str(manifest)


def test_a_blob_that_is_a_fifo_is_refused_without_blocking(checkpoint_dir: Path) -> None:
    ref = Checkpoint.open(checkpoint_dir).manifest.sessions[0].allocations[0].contents
    blob = checkpoint_dir / ref.file
    blob.unlink()
    os.mkfifo(blob)  # opening it for reading would wait for a writer forever
    done = threading.Event()

    def unblock() -> None:  # a reader that waits anyway is let go (the test then fails)
        while not done.wait(5.0):
            with contextlib.suppress(OSError):
                os.close(os.open(blob, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        error = refused_everywhere(checkpoint_dir, "not a regular file")
    finally:
        done.set()
        thread.join()
    assert error.path == str(blob)
