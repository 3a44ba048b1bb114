"""NULL-call round trip over TCP and a Unix socket, next to a raw socket 100-byte round trip.

Our server runs in another process (`python -m bench.rpc_null serve ADDRESS_FILE [UNIX]
[SPIN_US]`), as does the raw echo peer, so both sides pay the same process switches. Both
RPC ends spin as a deployment's would: CRICKET_SPIN_US, else the default (100 us on 4 or
more cores, else 0). The target is set against the blocking raw round trip; the raw round
trip with both ends spinning is shown beside it as the floor.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from bench.common import Row, median_latency_us
from bench.raw_socket import echo_peer, round_trip_fn
from cricket_client.security import spin_us_from_env

BENCH_PROG = 0x20C0FFFF
BENCH_VERS = 1


class _NullOnly:
    """A program that serves only NULL (answered by the runtime for every program)."""

    PROGRAM = BENCH_PROG
    VERSION = BENCH_VERS
    PROCEDURES: dict = {}


def serve(address_file: str, unix_path: str | None, spin_us: float = 0.0) -> None:
    from cricket_xdr.rpc.server import RpcServer

    server = RpcServer([_NullOnly()], spin_us=spin_us)
    if unix_path:
        server.listen_unix(unix_path)
        where = f"unix:{unix_path}"
    else:
        host, port = server.listen_tcp("127.0.0.1", 0)
        where = f"{host}:{port}"
    Path(address_file + ".tmp").write_text(where + "\n")
    os.replace(address_file + ".tmp", address_file)
    server.serve_forever()


@contextmanager
def rpc_peer(unix: bool, spin_us: float = 0.0):
    from cricket_xdr.rpc.client import RpcClient

    with tempfile.TemporaryDirectory() as tmp:
        address_file = os.path.join(tmp, "addr")
        args = [sys.executable, "-m", "bench.rpc_null", "serve", address_file]
        args += [os.path.join(tmp, "rpc.sock") if unix else "", str(spin_us)]
        proc = subprocess.Popen(args)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(address_file):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("rpc peer did not start")
                time.sleep(0.01)
            where = Path(address_file).read_text().strip()
            if where.startswith("unix:"):
                client = RpcClient(where, spin_us=spin_us)
            else:
                host, port = where.rsplit(":", 1)
                client = RpcClient((host, int(port)), spin_us=spin_us)
            try:
                yield client
            finally:
                client.close()
        finally:
            proc.kill()
            proc.wait()


def run(iterations: int = 5000) -> list[Row]:
    rows = []
    spin_us = spin_us_from_env()
    for unix in (False, True):
        transport = "unix socket" if unix else "TCP"
        with echo_peer(unix=unix) as sock:
            raw = median_latency_us(round_trip_fn(sock), iterations)
        with rpc_peer(unix, spin_us) as client:

            def null_call(c=client) -> None:
                c.call(BENCH_PROG, BENCH_VERS, 0, b"")

            ours = median_latency_us(null_call, iterations)
        with echo_peer(unix=unix) as sock:  # again, to see the drift between the two
            raw2 = median_latency_us(round_trip_fn(sock), iterations)
        with echo_peer(unix=unix, spin=True) as sock:
            floor = median_latency_us(round_trip_fn(sock, spin=True), iterations)
        base = min(raw["median_us"], raw2["median_us"])
        base_name = f"raw Python socket 100-byte round trip, {transport} (min of before/after)"
        rows.append(
            Row(
                name=f"rpc: NULL call round trip, {transport}",
                value=ours["median_us"],
                unit="us",
                baseline_name=base_name,
                baseline=base,
                ratio=ours["median_us"] / base,
                target="<= 1.3",
                extra={"ours": ours, "raw_before": raw, "raw_after": raw2, "spin_us": spin_us},
            )
        )
        rows.append(
            Row(
                name=f"rpc: floor, raw both spinning, {transport}",
                value=floor["median_us"],
                unit="us",
                baseline_name=base_name,
                baseline=base,
                ratio=floor["median_us"] / base,
                target="informational: raw round trip, both ends spinning: the floor",
                extra={"raw_spinning": floor},
            )
        )
    return rows


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        unix_path = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
        serve(sys.argv[2], unix_path, float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    else:
        sys.exit("usage: python -m bench.rpc_null serve ADDRESS_FILE [UNIX_PATH|''] [SPIN_US]")
