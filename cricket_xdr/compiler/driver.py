"""Runs the stages: parse -> check -> emit."""

from __future__ import annotations

from pathlib import Path

from cricket_xdr.compiler.checks import check
from cricket_xdr.compiler.emit_python import emit
from cricket_xdr.compiler.parser import parse

__all__ = ["compile_file", "compile_source"]


def compile_source(source: str, path: str) -> str:
    """Compile the text of a .x file; raises XdrgenError with every error found."""
    return emit(check(parse(source, path)), path)


def compile_file(path: str) -> str:
    """Compile the .x file at ``path`` (named as given in the output's first line)."""
    return compile_source(Path(path).read_text(encoding="utf-8"), path)
