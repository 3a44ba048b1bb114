"""A checkpoint directory is untrusted input: files are read without following symbolic links,
only regular files are read, and a manifest that asks for anything a restore would refuse
(a blob larger than its allocation, overlapping allocations, duplicate or unknown handles,
references to objects that are not there) is refused by `cricket-checkpoint verify` and by
the restore, with the same message, before the device is touched."""

from __future__ import annotations

import contextlib
import copy
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from checkpoint.cli import tools
from checkpoint.format import MANIFEST, CheckpointError, decode_manifest, encode_manifest
from checkpoint.reader import Checkpoint
from checkpoint.writer import BlobSink
from cricket_server.backends import make_backend
from cricket_server.checkpoints.sessions import restore_checkpoint, write_checkpoint
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
    with pytest.raises(CheckpointError, match=re.escape(expected)):
        Checkpoint.open(path).verify()
    code, output = verify_cli(path)
    assert code == 1 and expected in output, output
    m = manager()
    free = m.arena.free_bytes()
    with pytest.raises(CheckpointError, match=re.escape(expected)) as info:
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


# -- what the manifest asks for -------------------------------------------------------------


def _bigger_blob(path: Path) -> Callable[[ck.manifest_body], None]:
    """Give the first allocation a blob twice its size, checksums and all."""

    def change(body: ck.manifest_body) -> None:
        a = body.sessions[0].allocations[0]
        a.contents = BlobSink(path, compress=False).write("s/big", [b"\xee" * (2 * a.size)])

    return change


def _session(body: ck.manifest_body) -> ck.session_image:
    return body.sessions[0]


def _overlap(body: ck.manifest_body) -> None:
    first, second = _session(body).allocations[:2]
    second.ptr = first.ptr + 16


def _stack(body: ck.manifest_body) -> None:
    _session(body).context_stack = [0x1 << 56 | 0xDEAD]


def _stream_ctx(body: ck.manifest_body) -> None:
    _session(body).streams[0].ctx = 0x1 << 56 | 0xDEAD


def _event_ctx(body: ck.manifest_body) -> None:
    _session(body).events[0].ctx = 0x1 << 56 | 0xDEAD


def _duplicate_stream(body: ck.manifest_body) -> None:
    s = _session(body)
    s.streams.append(copy.deepcopy(s.streams[0]))


def _kindless_handle(body: ck.manifest_body) -> None:
    _session(body).streams[0].handle = 0x7F << 56 | 5


def _global_size(body: ck.manifest_body) -> None:
    _session(body).modules[0].globals[0].size = 1


def _allocation_size(body: ck.manifest_body) -> None:
    _session(body).allocations[0].size = 16


def _outside(body: ck.manifest_body) -> None:
    a = _session(body).allocations[0]
    a.ptr = body.va_base + body.va_size - 16


def _device(body: ck.manifest_body) -> None:
    _session(body).allocations[0].dev = 1


def _buffer_id(body: ck.manifest_body) -> None:
    first, second = _session(body).allocations[:2]
    second.buffer_id = first.buffer_id


def _twice(body: ck.manifest_body) -> None:
    body.sessions.append(copy.deepcopy(body.sessions[0]))


def _blob_path(body: ck.manifest_body) -> None:
    _session(body).allocations[0].contents.file = "../../etc/passwd"


TAMPERED = {
    "an allocation's blob larger than it": (None, "is {size} bytes, its blob s/big holds"),
    "an allocation smaller than its blob": (_allocation_size, "is 16 bytes, its blob"),
    "a global smaller than its blob": (_global_size, "global 'bias' is 1 bytes, its blob"),
    "overlapping allocations": (_overlap, "overlaps allocation"),
    "a stack of a missing context": (_stack, "the context stack names context 0x10000000000dead"),
    "a stream of a missing context": (_stream_ctx, "names context 0x10000000000dead, which is"),
    "an event of a missing context": (_event_ctx, "names context 0x10000000000dead, which is"),
    "a handle held twice": (_duplicate_stream, "is held twice: by stream and by stream"),
    "a handle of no kind": (_kindless_handle, "stream handle 0x7f00000000000005 is not a stream"),
    "an allocation outside the range": (_outside, "lies outside the checkpoint's device address"),
    "an allocation off its context's device": (_device, "is on device 1, its context"),
    "a buffer id held twice": (_buffer_id, "as has allocation"),
    "a session twice": (_twice, "appears twice"),
    "a blob path out of the checkpoint": (_blob_path, "'../../etc/passwd' leaves the checkpoint"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_manifest_asking_for_what_a_restore_refuses_fails_verify_and_restore(
    checkpoint_dir: Path, case: str
) -> None:
    change, expected = TAMPERED[case]
    size = Checkpoint.open(checkpoint_dir).manifest.sessions[0].allocations[0].size
    rewrite(checkpoint_dir, change or _bigger_blob(checkpoint_dir))
    error = refused_everywhere(checkpoint_dir, expected.format(size=size))
    assert error.path == str(checkpoint_dir / MANIFEST)


def test_verify_lists_every_problem_of_the_manifest(checkpoint_dir: Path) -> None:
    def change(body: ck.manifest_body) -> None:
        _overlap(body)
        _stream_ctx(body)

    rewrite(checkpoint_dir, change)
    problems = [p.message for p in Checkpoint.open(checkpoint_dir).problems()]
    assert len(problems) == 2, problems
    code, output = verify_cli(checkpoint_dir)
    assert code == 1 and "overlaps allocation" in output and "names context" in output


def test_a_worker_restoring_a_verified_checkpoint_still_checks_the_manifest(
    checkpoint_dir: Path,
) -> None:
    """A worker of cricket-restart --isolation process restores after its parent verified
    every blob; the manifest checks still run in the worker."""
    rewrite(checkpoint_dir, _overlap)
    sid = Checkpoint.open(checkpoint_dir).manifest.sessions[0].session_id
    m = manager()
    with pytest.raises(CheckpointError, match="overlaps allocation"):
        restore_checkpoint(m, checkpoint_dir, only={sid})
    assert m.sessions() == []


def test_a_checkpoint_as_written_has_no_problems(checkpoint_dir: Path) -> None:
    assert Checkpoint.open(checkpoint_dir).problems() == []
    code, output = verify_cli(checkpoint_dir)
    assert code == 0, output
