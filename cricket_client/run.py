"""`cricket-run`: run an unmodified cuda-python program with its CUDA work on a remote GPU.

    cricket-run [--server HOST:PORT] script.py [args...]
    cricket-run [--server HOST:PORT] -m package.module [args...]
    cricket-run [--server HOST:PORT] -- COMMAND [args...]
    python -m cricket_client.run ...

It sets the server address (else REMOTE_GPU_ADDRESS must be set), calls
`cricket_client.remote_imports.install()` so that `cuda.bindings.driver`/`runtime` and
`cuda.cuda`/`cudart` are the remote modules for every importer (cuda-python's own pure-Python
helpers too) while NVRTC and the rest of cuda-python stay local and cuda-python's native driver
bindings refuse to run, and runs the program as `__main__` with its own argv.

With `--`, COMMAND (any program: a compiled binary, `python3 script.py`, ...) runs with the
native `libcuda.so.1` (cricket_client.native) first on the library path: every driver call it
makes, from any language, goes to the server. The real driver is never loaded.
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
        usage="cricket-run [--server ADDR] (script.py | -m MODULE | -- COMMAND) [args...]",
        description="Run a cuda-python program unmodified, its CUDA calls on a remote GPU.",
    )
    parser.add_argument(
        "--server", metavar="ADDR", help=f"host:port or unix:/path (default: ${ADDRESS_ENV})"
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module as a script")
    return parser


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(cricket-run's own options, the program and its arguments): options end at the script
    or at `-m MODULE`; everything after belongs to the program, `--help` included."""
    ours: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--server", "-m") and i + 1 < len(argv):
            ours += argv[i : i + 2]
            i += 2
            if arg == "-m":
                break
        elif arg.startswith("--server=") or (arg.startswith("-") and arg not in ("-", "--")):
            ours.append(arg)
            i += 1
        else:
            i += arg == "--"
            break
    return ours, list(argv[i:])


def run_native(server: str | None, command: Sequence[str]) -> None:
    """Replace this process by `command`, with the native libcuda.so.1 in front."""
    from .native import NativeLibraryMissing, native_environment

    try:
        env = native_environment()
    except (NativeLibraryMissing, ValueError) as exc:
        raise SystemExit(f"cricket-run: {exc}") from None
    if server:
        env[ADDRESS_ENV] = server
    try:
        os.execvpe(command[0], list(command), env)
    except OSError as exc:
        raise SystemExit(f"cricket-run: {command[0]}: {exc.strerror}") from None


def main(argv: Sequence[str] | None = None) -> Any:
    parser = _parser()
    given = list(sys.argv[1:] if argv is None else argv)
    ours, program = split_argv(given)
    args = parser.parse_args(ours)
    if args.module is None and not program:
        parser.error("name a script (or -m MODULE, or -- COMMAND) to run")
    if not (args.server or os.environ.get(ADDRESS_ENV)):
        parser.error(f"no server: pass --server host:port or set {ADDRESS_ENV}")
    if args.module is None and given[len(ours) : len(ours) + 1] == ["--"]:
        run_native(args.server, program)
        return 0
    if args.module is None and not os.path.exists(program[0]):
        parser.error(f"{program[0]}: no such file")
    install(args.server)
    if args.module is not None:
        sys.argv = [args.module, *program]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        return 0
    script, *rest = program
    sys.argv = [script, *rest]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
