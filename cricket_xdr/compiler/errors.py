"""Compiler diagnostics: ``file:line:column: error: message``, the source line and a caret."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Diagnostic", "XdrgenError"]


@dataclass(frozen=True)
class Diagnostic:
    """One error at a 1-based line and column of a source file."""

    path: str
    line: int
    column: int
    message: str
    source_line: str = ""

    def __str__(self) -> str:
        head = f"{self.path}:{self.line}:{self.column}: error: {self.message}"
        if not self.source_line:
            return head
        caret = "".join(c if c == "\t" else " " for c in self.source_line[: self.column - 1])
        return f"{head}\n{self.source_line}\n{caret}^"


class XdrgenError(Exception):
    """Compilation failed; ``diagnostics`` holds every error found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("\n".join(str(d) for d in diagnostics))
        self.diagnostics = diagnostics
