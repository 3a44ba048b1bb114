"""The ``cricket-xdrgen FILE.x -o OUT.py`` command (also ``python -m cricket_xdr``).

Exit status 0 on success, 2 on any error (the output file is then left untouched).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from cricket_xdr.compiler.driver import compile_file
from cricket_xdr.compiler.errors import XdrgenError

__all__ = ["main"]


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    """Compile one .x file into one Python module."""
    ap = argparse.ArgumentParser(
        prog="cricket-xdrgen", description="Compile an XDR/RPC language file into Python."
    )
    ap.add_argument("source", help="the .x file")
    ap.add_argument("-o", "--output", required=True, help="the Python module to write")
    args = ap.parse_args(argv)
    try:
        text = compile_file(args.source)
    except XdrgenError as e:
        print(e, file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as e:
        print(f"{args.source}: error: {e}", file=sys.stderr)
        return 2
    try:
        _write_atomically(Path(args.output), text)
    except OSError as e:
        print(f"{args.output}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
