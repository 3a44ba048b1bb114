"""The checkpoint directory format: round trip, every corruption refused naming the file,
and a writer that dies mid-way leaving the previous checkpoint as it was."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkpoint.format import MANIFEST, CheckpointError, zstd_available
from checkpoint.inspect import describe
from checkpoint.reader import Checkpoint, blob_refs
from checkpoint.writer import BlobSink, CheckpointWriter
from rpc_spec import checkpoint_rpc as ck

ROOT = Path(__file__).resolve().parents[2]
RANDOM = random.Random(1).randbytes(300_000)  # the same in a subprocess
ZEROS = bytes(5 << 20)


def _blob_session(sink: BlobSink, contents: list[bytes]) -> ck.session_image:
    allocs = []
    for i, data in enumerate(contents):
        ptr = 0x600000000000 + i * (8 << 20)
        pieces = [data[j : j + 65536] for j in range(0, len(data), 65536)] or [b""]
        ref = sink.write(f"s1/alloc-{ptr:x}", pieces)
        allocs.append(
            ck.allocation_image(
                ptr=ptr, size=len(data), dev=0, ctx=1 << 56 | 1, buffer_id=i + 1, contents=ref
            )
        )
    return ck.session_image(
        session_id=1,
        token_salt=b"s" * 16,
        token_digest=b"d" * 32,
        resume_hint=b"h" * 32,
        peer="127.0.0.1:1",
        client_name="test",
        initialized=True,
        calls=12,
        context_stack=[1 << 56 | 1],
        contexts=[
            ck.context_image(handle=1 << 56 | 1, dev=0, flags=0, primary=True, retain_count=1)
        ],
        devices=[],
        modules=[],
        libraries=[],
        streams=[],
        events=[],
        allocations=allocs,
        arrays=[],
        tex_objects=[],
        settings=[],
        graphs=[],
        graph_execs=[],
        vmm=ck.vmm_image(reservations=[], physicals=[], mappings=[]),
        pools=[],
        mipmaps=[],
    )


def write(path: Path, contents: list[bytes]) -> None:
    with CheckpointWriter(path) as writer:
        session = _blob_session(writer.sink, contents)
        writer.commit(
            ck.manifest_body(
                created_by="test",
                created_unix_ns=1,
                backend="sim",
                driver_version=13000,
                va_base=0x600000000000,
                va_size=1 << 40,
                sessions=[session],
            )
        )


def contents_of(path: Path) -> list[bytes]:
    ckpt = Checkpoint.open(path)
    return [ckpt.read_blob(a.contents) for a in ckpt.manifest.sessions[0].allocations]


def test_round_trip_is_bit_exact_and_compresses_where_it_pays(tmp_path: Path) -> None:
    write(tmp_path / "c", [RANDOM, ZEROS, b"x"])
    ckpt = Checkpoint.open(tmp_path / "c")
    assert contents_of(tmp_path / "c") == [RANDOM, ZEROS, b"x"]
    report = ckpt.verify()
    assert report.blobs == 3 and report.bytes == len(RANDOM) + len(ZEROS) + 1
    codecs = [a.contents.codec for a in ckpt.manifest.sessions[0].allocations]
    assert codecs[0] == ck.blob_codec.BLOB_RAW  # random bytes do not shrink
    if zstd_available():
        assert codecs[1] == ck.blob_codec.BLOB_ZSTD
        assert ckpt.manifest.sessions[0].allocations[1].contents.stored_size < len(ZEROS) // 100
    assert "allocation 0x600000000000: 300000 bytes" in describe(ckpt.manifest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]  # no temporary directory left


def _alloc_file(path: Path, i: int = 0) -> Path:
    ref = Checkpoint.open(path).manifest.sessions[0].allocations[i].contents
    return path / ref.file


def _flip(file: Path, offset: int) -> None:
    data = bytearray(file.read_bytes())
    data[offset] ^= 0x01
    file.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "missing", "compressed flip"])
def test_a_damaged_blob_is_refused_naming_its_file(tmp_path: Path, damage: str) -> None:
    write(tmp_path / "c", [RANDOM, ZEROS])
    index = 1 if damage == "compressed flip" else 0
    file = _alloc_file(tmp_path / "c", index)
    if damage in ("flipped byte", "compressed flip"):
        _flip(file, file.stat().st_size // 2)
    elif damage == "truncated":
        file.write_bytes(file.read_bytes()[:-1])
    else:
        file.unlink()
    ckpt = Checkpoint.open(tmp_path / "c")
    with pytest.raises(CheckpointError) as info:
        ckpt.verify()
    assert str(file) in str(info.value)
    assert [p.path for p in ckpt.problems()] == [str(file)]


def test_a_manifest_of_an_unknown_version_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "c", [b"abc"])
    manifest = tmp_path / "c" / MANIFEST
    data = bytearray(manifest.read_bytes())
    data[4:8] = (99).to_bytes(4, "big")
    manifest.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="format version 99 is not supported") as info:
        Checkpoint.open(tmp_path / "c")
    assert info.value.path == str(manifest)


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "missing", "not a manifest"])
def test_a_damaged_manifest_is_refused_naming_it(tmp_path: Path, damage: str) -> None:
    write(tmp_path / "c", [b"abc"])
    manifest = tmp_path / "c" / MANIFEST
    if damage == "flipped byte":
        _flip(manifest, manifest.stat().st_size - 20)
    elif damage == "truncated":
        manifest.write_bytes(manifest.read_bytes()[:-7])
    elif damage == "missing":
        manifest.unlink()
    else:
        manifest.write_bytes(b"hello world, not xdr")
    with pytest.raises(CheckpointError) as info:
        Checkpoint.open(tmp_path / "c")
    assert info.value.path == str(manifest)


def test_a_blob_path_leaving_the_checkpoint_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "c", [b"abc"])
    ckpt = Checkpoint.open(tmp_path / "c")
    ref = ckpt.manifest.sessions[0].allocations[0].contents
    ref.file = "../elsewhere"
    with pytest.raises(CheckpointError, match="leaves the checkpoint"):
        ckpt.read_blob(ref)


def test_a_writer_failing_mid_way_leaves_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "c", [RANDOM, b"old"])
    before = {p.name: p.read_bytes() for p in (tmp_path / "c").rglob("*") if p.is_file()}
    real = BlobSink.write
    calls = []

    def failing(self: BlobSink, name: str, pieces: object) -> ck.blob_ref:
        calls.append(name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, name, pieces)  # type: ignore[arg-type]

    monkeypatch.setattr(BlobSink, "write", failing)
    with pytest.raises(OSError, match="No space left"):
        write(tmp_path / "c", [ZEROS, b"new", b"newer"])
    after = {p.name: p.read_bytes() for p in (tmp_path / "c").rglob("*") if p.is_file()}
    assert after == before
    assert contents_of(tmp_path / "c") == [RANDOM, b"old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_a_writer_killed_mid_way_leaves_the_previous_checkpoint(tmp_path: Path) -> None:
    """A real SIGKILL while the second checkpoint's blobs are being written."""
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT / "tests" / "unit")!r})
        from pathlib import Path
        from checkpoint.writer import BlobSink
        import test_checkpoint_format as t
        t.write(Path({str(tmp_path / "c")!r}), [b"first", t.RANDOM])
        real = BlobSink.write
        def dying(self, name, pieces):
            ref = real(self, name, pieces)
            os.kill(os.getpid(), signal.SIGKILL)
        BlobSink.write = dying
        t.write(Path({str(tmp_path / "c")!r}), [b"second", t.ZEROS])
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert contents_of(tmp_path / "c") == [b"first", RANDOM]
    Checkpoint.open(tmp_path / "c").verify()


def test_a_new_checkpoint_replaces_the_old_one(tmp_path: Path) -> None:
    write(tmp_path / "c", [b"one"])
    write(tmp_path / "c", [b"two", b"three"])
    assert contents_of(tmp_path / "c") == [b"two", b"three"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_blob_refs_name_every_blob(tmp_path: Path) -> None:
    write(tmp_path / "c", [b"a", b"b"])
    names = [what for what, _ in blob_refs(Checkpoint.open(tmp_path / "c").manifest)]
    assert names == [
        "session 0x1 allocation 0x600000000000 (1 bytes)",
        "session 0x1 allocation 0x600000800000 (1 bytes)",
    ]


def test_blobs_are_read_in_pieces_each_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import checkpoint.format

    monkeypatch.setattr(checkpoint.format, "PIECE_SIZE", 4096)  # as written
    write(tmp_path / "c", [RANDOM, ZEROS])
    ckpt = Checkpoint.open(tmp_path / "c")
    raw, zeros = (a.contents for a in ckpt.manifest.sessions[0].allocations)
    pieces = list(ckpt.pieces(raw))
    assert len(pieces) > 10 and all(len(p) <= 4096 for p in pieces)
    assert b"".join(pieces) == RANDOM
    assert b"".join(ckpt.pieces(zeros)) == ZEROS
    file = tmp_path / "c" / raw.file
    _flip(file, file.stat().st_size - 1)  # the last byte: found in the last piece
    count = len(raw.pieces)
    with pytest.raises(CheckpointError, match=f"piece {count} of {count} .*checksum mismatch") as info:
        for _ in ckpt.pieces(raw):
            pass
    assert info.value.path == str(file)


def test_a_directory_that_is_not_a_checkpoint_is_never_replaced(tmp_path: Path) -> None:
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match="not a checkpoint: refusing to replace it"):
        write(precious, [b"x"])
    assert (precious / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty", [b"x"])  # an empty directory may take a checkpoint
    assert contents_of(tmp_path / "empty") == [b"x"]


def test_checkpoints_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    write(tmp_path / "c", [b"secret"])
    assert (tmp_path / "c").stat().st_mode & 0o077 == 0
    for file in (tmp_path / "c").rglob("*"):
        assert file.stat().st_mode & 0o077 == 0, file


def test_a_blob_of_many_pieces_is_written_through_the_pipeline(tmp_path: Path) -> None:
    raw_pieces = (RANDOM[i : i + 7000] for i in range(0, len(RANDOM), 7000))
    zero_pieces = (ZEROS[i : i + 65536] for i in range(0, len(ZEROS), 65536))
    with CheckpointWriter(tmp_path / "c") as writer:
        raw = writer.sink.write("s1/raw", raw_pieces)
        zeros = writer.sink.write("s1/zeros", zero_pieces)
        unfinished = Checkpoint(writer.tmp, ck.manifest_body("t", 0, "sim", 0, 0, 0, []))
        assert unfinished.read_blob(raw) == RANDOM
        assert unfinished.read_blob(zeros) == ZEROS
    assert raw.codec == ck.blob_codec.BLOB_RAW
    if zstd_available():
        assert zeros.codec == ck.blob_codec.BLOB_ZSTD


def test_a_failing_piece_source_fails_the_blob_and_the_checkpoint(tmp_path: Path) -> None:
    def pieces() -> Iterator[bytes]:
        yield RANDOM
        yield RANDOM
        raise OSError(5, "Input/output error")

    with pytest.raises(OSError, match="Input/output"), CheckpointWriter(tmp_path / "c") as writer:
        writer.sink.write("s1/x", pieces())
    assert list(tmp_path.iterdir()) == []
