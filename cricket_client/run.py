"""`cricket-run`: run an unmodified cuda-python program with its CUDA work on a remote GPU.

    cricket-run [--server HOST:PORT] script.py [args...]
    cricket-run [--server HOST:PORT] -m package.module [args...]
    python -m cricket_client.run ...

It sets the server address (else REMOTE_GPU_ADDRESS must be set), calls
`cricket_client.remote_imports.install()` so that `cuda.bindings.driver`/`runtime` and
`cuda.cuda`/`cudart` are the remote modules while NVRTC and the rest of cuda-python stay local,
and runs the program as `__main__` with its own argv.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Sequence
from typing import Any

from .connection import ADDRESS_ENV
from .remote_imports import install

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cricket-run",
        description="Run a cuda-python program unmodified, its CUDA calls on a remote GPU.",
    )
    parser.add_argument(
        "--server", metavar="ADDR", help=f"host:port or unix:/path (default: ${ADDRESS_ENV})"
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module as a script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="script.py [args...]")
    return parser


def main(argv: Sequence[str] | None = None) -> Any:
    args = _parser().parse_args(argv)
    if args.module is None and not args.args:
        _parser().error("name a script (or -m MODULE) to run")
    if not (args.server or os.environ.get(ADDRESS_ENV)):
        _parser().error(f"no server: pass --server host:port or set {ADDRESS_ENV}")
    install(args.server)
    if args.module is not None:
        sys.argv = [args.module, *args.args]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        return 0
    script, *rest = args.args
    if not os.path.exists(script):
        _parser().error(f"{script}: no such file")
    sys.argv = [script, *rest]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
