"""Checkpoint and restore throughput next to raw sequential disk write and read, same run.

    python -m bench.checkpoint_io [--sizes 1G,8G] [--dir PATH] [--backend auto|cuda|sim]
                                  [--out results.json]

For each size: raw sequential write (fsync) and cold read of that many bytes (page cache
dropped with posix_fadvise), then a session holding that much device memory (1 GiB
allocations of incompressible data) is checkpointed (`write_checkpoint`, fsync included)
and restored into a fresh session from a cold cache (`restore_checkpoint`: every piece of
every blob read once, by one thread a core ahead of its use, checked against its own sha256
as it is read and copied to the device as it arrives; a damaged piece fails the restore and
releases everything). The goal is at least 0.7 of raw for both. Needs free disk for one
size at a time.

Run time: about 8 passes over each size's bytes (raw write and read, fill, checkpoint,
restore) at disk speed; 1 GiB + 8 GiB take well under a minute on an NVMe disk of 2 GB/s or
more; `--sizes 1G,8G,32G` adds the 32 GiB row and about two to three minutes more.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from bench.common import Row, print_table, write_report

PIECE = 64 << 20
ALLOC = 1 << 30


def _parse_size(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale != 1 else text) * scale


def _drop_cache(path: Path) -> None:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for file in files:
        fd = os.open(file, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def raw_disk(folder: Path, size: int, data: bytes) -> tuple[float, float]:
    """(write GB/s, cold read GB/s) of one sequential file of `size` bytes."""
    file = folder / "raw.bin"
    start = time.monotonic()
    with open(file, "wb") as f:
        for off in range(0, size, PIECE):
            f.write(data[: min(PIECE, size - off)])
        f.flush()
        os.fsync(f.fileno())
    write = size / (time.monotonic() - start) / 1e9
    _drop_cache(file)
    start = time.monotonic()
    with open(file, "rb") as f:
        while f.read(PIECE):
            pass
    read = size / (time.monotonic() - start) / 1e9
    file.unlink()
    return write, read


def run(sizes: list[int], folder: Path, backend_name: str = "auto") -> list[Row]:
    from cricket_server.backends import make_backend
    from cricket_server.checkpoints.sessions import restore_checkpoint, write_checkpoint
    from cricket_server.memory import AddressArena
    from cricket_server.session import SessionManager

    data = os.urandom(PIECE)  # incompressible: zstd stays off, as for real weights
    backend = make_backend(backend_name, sim_memory=max(sizes) + (1 << 30))
    rows: list[Row] = []
    try:
        for size in sizes:
            label = f"{size / (1 << 30):g} GiB"
            raw_write, raw_read = raw_disk(folder, size, data)
            manager = SessionManager(backend, AddressArena(*backend.address_space()))
            session = manager.open("bench", "checkpoint_io")
            session.init(0)
            session.ctx_set_current(session.primary_ctx_retain(0))
            for base in range(0, size, ALLOC):
                n = min(ALLOC, size - base)
                ptr = session.mem_alloc(n)
                for off in range(0, n, PIECE):
                    session.memcpy_htod(ptr + off, memoryview(data)[: min(PIECE, n - off)])
            target = folder / "ckpt"
            start = time.monotonic()
            write_checkpoint(manager, [session], target)
            ckpt_s = time.monotonic() - start
            ckpt = size / ckpt_s / 1e9
            session.close("bench")
            _drop_cache(target)
            fresh = SessionManager(backend, AddressArena(*backend.address_space()))
            start = time.monotonic()
            report = restore_checkpoint(fresh, target)
            restore_s = time.monotonic() - start
            restore = size / restore_s / 1e9
            for s in report.sessions:
                s.close("bench")
            shutil.rmtree(target)
            rows.append(
                Row(
                    f"checkpoint {label}",
                    ckpt,
                    "GB/s",
                    "raw sequential write",
                    raw_write,
                    ckpt / raw_write,
                    ">= 0.7",
                    {"bytes": size, "seconds": ckpt_s},
                )
            )
            rows.append(
                Row(
                    f"restore {label}",
                    restore,
                    "GB/s",
                    "raw sequential read (cold)",
                    raw_read,
                    restore / raw_read,
                    ">= 0.7",
                    {"bytes": size, "seconds": restore_s},
                )
            )
    finally:
        backend.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint_io")
    parser.add_argument(
        "--sizes", default="1G,8G", help="comma-separated; add 32G for the 32 GiB row"
    )
    parser.add_argument("--dir", type=Path, default=Path("bench/results/checkpoint_io"))
    parser.add_argument("--backend", default="auto", choices=["auto", "cuda", "sim"])
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    try:
        rows = run([_parse_size(s) for s in args.sizes.split(",")], args.dir, args.backend)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)
    print_table(rows)
    print(f"checkpoint_io: {time.monotonic() - start:.0f} s")
    if args.out is not None:
        write_report(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
