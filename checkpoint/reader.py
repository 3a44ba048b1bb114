"""Reading a checkpoint directory: the manifest, its blobs, and checking all of it.

`Checkpoint.open(path)` reads and checks the manifest (CheckpointError naming the file when
it is missing, of another version, truncated or damaged). Every file is opened by `open_in`:
no symbolic link below the checkpoint directory is followed, and only regular files are read. `read_blob(ref)` returns a blob's
decoded bytes after checking its size and sha256. `check_manifest()` raises the first thing
in the manifest a restore refuses (checkpoint.validate). `verify()` checks the manifest and
every blob it names and raises the first problem; `problems()` lists them all.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import queue
import stat
import threading
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from rpc_spec import checkpoint_rpc as ck

from .format import MANIFEST, CheckpointError, decode_manifest, zstd_pieces
from .validate import blob_path_problem, manifest_problems

PIECE = 64 << 20  # bytes a blob is read and handed on in
VERIFY_THREADS = 8
PREFETCH_THREADS = 4  # blobs a restore reads (and hashes) at once, ahead of their use
PREFETCH_DEPTH = 2  # checked pieces a prefetched blob holds ready for its taker; with the
# pieces its read-ahead thread holds, at most THREADS x (DEPTH + 4) x PIECE bytes (1.5 GiB)


def open_in(root: Path, rel: Path) -> BinaryIO:
    """`root / rel` opened for reading, following no symbolic link below `root` (each part
    is opened with O_NOFOLLOW from its parent's descriptor); only a regular file is opened.
    CheckpointError naming the file otherwise (FileNotFoundError when it does not exist)."""
    file = root / rel
    if not rel.parts:
        raise CheckpointError(file, "names no file")
    nofollow = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise CheckpointError(root, f"cannot be opened: {e.strerror}") from None
    here = root
    try:
        for part in rel.parts[:-1]:
            here = here / part
            inner = os.open(part, nofollow | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        here = file
        blob = os.open(rel.parts[-1], nofollow, dir_fd=fd)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(here):
            raise CheckpointError(
                here, "is a symbolic link: refused (checkpoint files are read without following "
                "links)",
            ) from None
        raise CheckpointError(here, f"cannot be opened: {e.strerror}") from None
    finally:
        os.close(fd)
    mode = os.fstat(blob).st_mode
    if not stat.S_ISREG(mode):
        os.close(blob)
        raise CheckpointError(file, "is not a regular file: refused")
    os.set_blocking(blob, True)
    return os.fdopen(blob, "rb")


def blob_refs(body: ck.manifest_body) -> Iterator[tuple[str, ck.blob_ref]]:
    """(what it is, blob_ref) for every blob the manifest names."""
    for s in body.sessions:
        sid = f"session {s.session_id:#x}"
        for m in s.modules:
            yield f"{sid} module {m.handle:#x} image", m.image
            for g in m.globals:
                yield f"{sid} module {m.handle:#x} global {g.name}", g.contents
        for lib in s.libraries:
            yield f"{sid} library {lib.handle:#x} image", lib.image
        for a in s.allocations:
            yield f"{sid} allocation {a.ptr:#x} ({a.size} bytes)", a.contents
        for arr in s.arrays:
            yield f"{sid} array {arr.handle:#x}", arr.contents
        for mm in s.mipmaps:
            for arr in mm.levels:
                yield f"{sid} mipmapped array {mm.handle:#x} level {arr.handle:#x}", arr.contents
        for ph in s.vmm.physicals:
            yield f"{sid} physical allocation {ph.handle:#x} ({ph.size} bytes)", ph.contents


class _HashingReader:
    """A file's read() that also feeds the sha256 of everything read."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.digest = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.digest.update(data)
        return data


def _read_ahead(
    f: BinaryIO, digest: Any, size: int, file: Path
) -> Generator[memoryview, None, None]:
    """Pieces of `f`, read by a thread of its own one piece ahead while the caller hashes
    (here, into `digest`) and uses the current one."""
    ready: queue.Queue[memoryview | BaseException | None] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                buf = bytearray(size)
                n = f.readinto(buf)  # type: ignore[attr-defined]
                if not n:
                    break
                ready.put(memoryview(buf)[:n])
        except OSError as e:
            ready.put(CheckpointError(file, f"cannot be read: {e}"))
        ready.put(None)

    thread = threading.Thread(target=read, name="checkpoint-read", daemon=True)
    thread.start()
    try:
        while (item := ready.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            digest.update(item)
            yield item
    finally:
        stop.set()
        thread.join(timeout=0.01)
        while thread.is_alive():  # a reader blocked on a full queue: make room, let it end
            with contextlib.suppress(queue.Empty):
                ready.get_nowait()
            thread.join(timeout=0.01)


class _Prefetch:
    """Blobs read ahead by a few threads for `Checkpoint.prefetching`."""

    def __init__(self, ckpt: Checkpoint, refs: list[ck.blob_ref]) -> None:
        self.ckpt = ckpt
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.state: dict[str, str] = {}  # file -> "waiting", "running" or "taken"
        self.ready: dict[str, queue.Queue[Any]] = {}
        todo = [r for r in refs if self.state.setdefault(r.file, "waiting") == "waiting"]
        todo = list({r.file: r for r in todo}.values())  # a file once
        for ref in todo:
            self.ready[ref.file] = queue.Queue(maxsize=PREFETCH_DEPTH)
        self.pool = ThreadPoolExecutor(
            max(1, min(len(todo), PREFETCH_THREADS)), thread_name_prefix="checkpoint-prefetch"
        )
        for ref in todo:
            self.pool.submit(self._read, ref)

    def _put(self, q: queue.Queue[Any], item: Any) -> bool:
        while not self.stop.is_set():
            with contextlib.suppress(queue.Full):
                q.put(item, timeout=0.05)
                return True
        return False

    def _read(self, ref: ck.blob_ref) -> None:
        with self.lock:
            if self.stop.is_set() or self.state[ref.file] != "waiting":
                return
            self.state[ref.file] = "running"
        q = self.ready[ref.file]
        pieces = self.ckpt._read_pieces(ref)
        try:
            for piece in pieces:
                if not self._put(q, piece):
                    return
        except BaseException as e:  # handed to the taker, raised there
            self._put(q, e)
            return
        finally:
            pieces.close()
        self._put(q, None)

    def take(self, file: str) -> Iterator[bytes | memoryview] | None:
        """The pieces of `file` as its thread reads them; None when no thread has started on
        it (the caller reads it itself)."""
        with self.lock:
            state = self.state.get(file)
            if state is None or state == "taken":
                return None
            self.state[file] = "taken"
            if state == "waiting":
                return None
        return self._drain(self.ready[file])

    @staticmethod
    def _drain(q: queue.Queue[Any]) -> Iterator[bytes | memoryview]:
        while (item := q.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.ready.clear()


@dataclass
class VerifyReport:
    blobs: int
    bytes: int
    stored_bytes: int


class Checkpoint:
    """An opened checkpoint directory; see the module docstring."""

    def __init__(self, path: Path, manifest: ck.manifest_body) -> None:
        self.path = path
        self.manifest = manifest
        self._prefetch: _Prefetch | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Checkpoint:
        root = Path(path)
        if not root.is_dir():
            raise CheckpointError(root, "no such checkpoint directory")
        file = root / MANIFEST
        try:
            with open_in(root, Path(MANIFEST)) as f:
                data = f.read()
        except FileNotFoundError:
            raise CheckpointError(
                file, "missing: not a checkpoint, or one never completed"
            ) from None
        except OSError as e:
            raise CheckpointError(file, f"cannot be read: {e}") from None
        return cls(root, decode_manifest(data, file))

    def _file(self, ref: ck.blob_ref) -> Path:
        why = blob_path_problem(ref.file)
        if why is not None:
            raise CheckpointError(self.path / MANIFEST, f"blob path {ref.file!r} {why}")
        return self.path / ref.file

    def manifest_problems(self) -> list[CheckpointError]:
        """Everything in the manifest a restore refuses (checkpoint.validate), each naming
        the manifest file."""
        return [CheckpointError(self.path / MANIFEST, p) for p in manifest_problems(self.manifest)]

    def check_manifest(self) -> None:
        """Raise the first thing in the manifest a restore refuses; reads no blob."""
        found = self.manifest_problems()
        if found:
            raise found[0]

    def pieces(self, ref: ck.blob_ref) -> Iterator[bytes | memoryview]:
        """The decoded contents of a blob in pieces of at most PIECE bytes, read as they are
        taken. The checks (stored size first; sha256 and decoded size once the last piece is
        taken) raise CheckpointError naming the file, possibly after some pieces."""
        ahead = self._prefetch.take(ref.file) if self._prefetch is not None else None
        if ahead is not None:
            yield from ahead
            return
        yield from self._read_pieces(ref)

    @contextlib.contextmanager
    def prefetching(self, refs: list[ck.blob_ref]) -> Iterator[None]:
        """While inside, `pieces` of these blobs come from a few threads that read and hash
        them ahead of their use, in this order, each holding at most PREFETCH_DEPTH pieces
        (host memory stays bounded whatever the checkpoint's size). Each blob is still read
        once and checked as its last piece is taken; a blob asked for before its turn is read
        by the caller. Leaving stops the threads and drops what was read ahead."""
        prefetch = _Prefetch(self, refs)
        self._prefetch = prefetch
        try:
            yield
        finally:
            self._prefetch = None
            prefetch.close()

    def _read_pieces(self, ref: ck.blob_ref) -> Generator[bytes | memoryview, None, None]:
        file = self._file(ref)
        try:
            f = open_in(self.path, file.relative_to(self.path))
        except FileNotFoundError:
            raise CheckpointError(file, "missing blob") from None
        except OSError as e:
            raise CheckpointError(file, f"cannot be read: {e}") from None
        with f:
            stored = os.fstat(f.fileno()).st_size
            if stored != ref.stored_size:
                raise CheckpointError(
                    file,
                    f"blob is {stored} bytes, the manifest says {ref.stored_size} (truncated?)",
                )
            reader = _HashingReader(f)
            source: Generator[bytes | memoryview, None, None]
            if ref.codec == ck.blob_codec.BLOB_ZSTD:
                source = (piece for piece in zstd_pieces(reader, PIECE, file))
            else:
                source = _read_ahead(f, reader.digest, PIECE, file)
            produced = 0
            with contextlib.closing(source):  # its reading thread ends before `f` closes
                for piece in source:
                    produced += len(piece)
                    if produced > ref.size:
                        raise CheckpointError(file, f"blob decodes to more than {ref.size} bytes")
                    yield piece
            if reader.read(1):
                raise CheckpointError(file, "bytes after the end of the compressed blob")
            if reader.digest.digest() != bytes(ref.sha256):
                raise CheckpointError(file, "blob checksum mismatch (sha256): the file is damaged")
            if produced != ref.size:
                raise CheckpointError(
                    file, f"blob decodes to {produced} bytes, expected {ref.size}"
                )

    def read_blob(self, ref: ck.blob_ref) -> bytes:
        """The decoded contents of a blob, checked."""
        return b"".join(bytes(p) for p in self.pieces(ref))

    def check_blob(self, ref: ck.blob_ref) -> None:
        """Read a blob through, checking it, keeping nothing."""
        for _ in self.pieces(ref):
            pass

    def problems(self, progress: Callable[[int], None] | None = None) -> list[CheckpointError]:
        """Every problem of the manifest (`manifest_problems`), then of every blob (empty: the
        checkpoint is whole and a restore would take it), in manifest order. Blobs are checked
        by several threads at once (hashing releases the GIL); `progress(n)` is called (one
        call at a time) with each checked blob's size."""
        found = self.manifest_problems()
        refs = [r for _what, r in blob_refs(self.manifest) if blob_path_problem(r.file) is None]
        lock = threading.Lock()

        def check(ref: ck.blob_ref) -> CheckpointError | None:
            try:
                self.check_blob(ref)
            except CheckpointError as e:
                return e
            if progress is not None:
                with lock:
                    progress(ref.size)
            return None

        workers = min(len(refs), os.cpu_count() or 1, VERIFY_THREADS) or 1
        with ThreadPoolExecutor(workers, thread_name_prefix="checkpoint-verify") as pool:
            return found + [e for e in pool.map(check, refs) if e is not None]

    def verify(self, progress: Callable[[int], None] | None = None) -> VerifyReport:
        """Check the manifest, then every blob; raise the first problem (CheckpointError
        naming the file)."""
        self.check_manifest()  # before any blob is read
        found = self.problems(progress)
        if found:
            raise found[0]
        refs = [ref for _what, ref in blob_refs(self.manifest)]
        return VerifyReport(len(refs), sum(r.size for r in refs), sum(r.stored_size for r in refs))
