"""`make demo`: start a cricket-server, run a cuda-python driver program through it, check it.

    python examples/demo.py [--backend auto|sim|cuda] [--n 1000000]

Starts `python -m cricket_server` on a free loopback port (the backend given; `auto` picks
`cuda` where a GPU is usable, else `sim`), runs examples/vector_add_driver.py's work against it
through cricket_client, checks the result element by element, prints a short summary, stops
the server. Exit status 0 only when every element is right and the server stopped cleanly.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

import vector_add_driver  # noqa: E402

import cricket_client  # noqa: E402


def start_server(backend: str, folder: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """A cricket-server subprocess and its "host:port", once it listens."""
    ready, log = folder / "ready", folder / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cricket_server", "--listen", "127.0.0.1:0",
             "--backend", backend, "--ready-file", str(ready)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            raise RuntimeError(f"cricket-server did not start:\n{log.read_text()}")
        time.sleep(0.05)
    return proc, ready.read_text().strip(), log


def stop_server(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="auto", choices=["auto", "sim", "cuda"])
    parser.add_argument("--n", type=int, default=1_000_000, help="vector length")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="cricket-demo-") as tmp:
        proc, address, log = start_server(args.backend, Path(tmp))
        try:
            conn = cricket_client.connect(address)
            info = conn.info
            print(f"cricket-server {info.server_version} at {address}, backend {info.backend}, "
                  f"session {info.session_id:#x}")
            started = time.perf_counter()
            result = vector_add_driver.vector_add(args.n)
            seconds = time.perf_counter() - started
            conn.close()
        finally:
            status = stop_server(proc)
        wrong = result["wrong"]
        print(f"vector_add of {args.n:,} floats on {result['device']!r} "
              f"(grid {result['grid']} x block {result['block']}): "
              + ("all elements correct" if not wrong else f"{len(wrong)} WRONG, first at {wrong[0]}")
              + f", {seconds:.2f} s end to end")
        if status != 0:
            print(f"cricket-server exited with status {status}:\n{log.read_text()}")
        ok = not wrong and status == 0
        print("demo: OK" if ok else "demo: FAILED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
