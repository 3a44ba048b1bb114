"""Copy bandwidth against size for each data path (D8), side by side in one run.

Local cuda-python from pageable numpy memory (where a GPU answers), and cricket_client through
a cricket-server subprocess on loopback with the path forced: inline RPC, parallel TCP data
channels, shared memory. `run()` gives table rows (P3 ratios at 64 MiB and 1 GiB) and the
series `bench.plot.copy_bandwidth` draws.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np

from bench.common import Row
from bench.raw_socket import echo_peer, stream_gbps
from bench.server_proc import cricket_server

SIZES = [64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
PATHS = ("rpc", "tcp", "shm")
LOCAL = "local cuda-python (pageable)"
Series = dict[str, dict[str, list[tuple[int, float]]]]  # label -> direction -> [(size, GB/s)]


def _ok(result):
    if int(result[0]) != 0:
        raise RuntimeError(f"CUDA call failed: {result[0]!r}")
    return result[1] if len(result) == 2 else None


def _label(size: int) -> str:
    return (
        f"{size >> 30} GiB"
        if size >= 1 << 30
        else f"{size >> 20} MiB"
        if size >= 1 << 20
        else f"{size >> 10} KiB"
    )


def _measure(cu: ModuleType, sizes: list[int]) -> dict[str, list[tuple[int, float]]]:
    """Best-of-n HtoD and DtoH GB/s per size on the current context of `cu`."""
    out: dict[str, list[tuple[int, float]]] = {"HtoD": [], "DtoH": []}
    for size in sizes:
        host = np.random.default_rng(size).integers(0, 255, size, dtype=np.uint8)
        back = np.empty_like(host)
        dptr = _ok(cu.cuMemAlloc(size))
        repeats = 3 if size >= (256 << 20) else 8
        h2d, d2h = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _ok(cu.cuMemcpyHtoD(dptr, host, size))
            t1 = time.perf_counter()
            _ok(cu.cuMemcpyDtoH(back, dptr, size))
            t2 = time.perf_counter()
            h2d.append(t1 - t0)
            d2h.append(t2 - t1)
        if not np.array_equal(host, back):
            raise RuntimeError(f"copy benchmark: {_label(size)} came back different")
        _ok(cu.cuMemFree(dptr))
        out["HtoD"].append((size, size / min(h2d) / 1e9))
        out["DtoH"].append((size, size / min(d2h) / 1e9))
    return out


def _context(cu: ModuleType) -> None:
    _ok(cu.cuInit(0))
    dev = _ok(cu.cuDeviceGet(0))
    _ok(cu.cuCtxSetCurrent(_ok(cu.cuDevicePrimaryCtxRetain(dev))))


def _local_driver() -> ModuleType | None:
    try:
        from cricket_server.backends.cuda import gpu_available

        if not gpu_available():
            return None
        from cuda.bindings import driver  # type: ignore[import-untyped]

        return driver
    except ImportError:
        return None


@contextmanager
def remote_session(address: str, path: str) -> Iterator[Any]:
    """A connection to `address` whose copies take data path `path` (auto, rpc, shm, tcp),
    with the primary context of device 0 current; closed at the end."""
    import cricket_client
    from cricket_client import driver as remote
    from cricket_client.datapath import DataPaths, Mode

    conn = cricket_client.connect(address)
    try:
        conn.datapaths = DataPaths(conn, mode=Mode(path))
        _context(remote)
        yield conn
    finally:
        conn.close()


def measure(quick: bool = False) -> tuple[str, Series, float]:
    """(backend, series, raw one-stream socket GB/s)."""
    from cricket_client import driver as remote

    sizes = [s for s in SIZES if not quick or s <= (64 << 20)]
    local = _local_driver()
    series: Series = {}
    if local is not None:
        _context(local)
        series[LOCAL] = _measure(local, sizes)
    backend = "cuda" if local is not None else "sim"
    with echo_peer() as sock:
        raw = stream_gbps(sock, 1 << 30)
    with cricket_server(backend) as address:
        for path in PATHS:
            with remote_session(address, path) as conn:
                series[f"remote {path}"] = _measure(remote, sizes)
                taken = conn.datapaths.last_path
                if taken is None or taken.value != path:
                    raise RuntimeError(f"copy benchmark: the {path} path was not taken")
    return backend, series, raw


def rows(backend: str, series: Series, raw: float) -> list[Row]:
    """P3 rows at 64 MiB and 1 GiB: shared memory against local pageable copies (against
    the inline RPC where no GPU answers), parallel TCP and inline RPC against one raw stream."""
    tag = f"[{backend}]"
    out: list[Row] = []

    def row(
        name: str, value: float | None, base_name: str, base: float | None, target: str
    ) -> None:
        if value is not None:
            ratio = value / base if base else None
            out.append(Row(name, value, "GB/s", base_name, base, ratio, target))

    for direction in ("HtoD", "DtoH"):
        for size in (64 << 20, 1 << 30):
            at = {label: dict(by.get(direction, [])).get(size) for label, by in series.items()}
            name = f"copies {tag}: {direction} {_label(size)}"
            if LOCAL in at:
                row(
                    f"{name} shm",
                    at.get("remote shm"),
                    "local cuda-python, pageable numpy",
                    at[LOCAL],
                    "P3 shm >= 0.8 x local",
                )
            else:
                row(
                    f"{name} shm",
                    at.get("remote shm"),
                    "remote inline RPC (no GPU: sim)",
                    at.get("remote rpc"),
                    "",
                )
            row(
                f"{name} tcp",
                at.get("remote tcp"),
                "raw Python socket, one stream",
                raw,
                "P3 tcp >= 0.8 x raw",
            )
            row(f"{name} rpc", at.get("remote rpc"), "raw Python socket, one stream", raw, "")
    return out


def run(quick: bool = False, plot_path=None) -> list[Row]:
    backend, series, raw = measure(quick)
    if plot_path is not None:
        from bench.plot import copy_bandwidth

        copy_bandwidth(
            series, raw, plot_path, title=f"Copy bandwidth by data path ({backend} backend)"
        )
        print(f"wrote {plot_path}")
    return rows(backend, series, raw)
