"""Generate cricket_client/_enums.py from the installed cuda-bindings.

The client must not import cuda-python (D3), yet it mirrors `cuda.bindings.driver`: the same
enum classes with the same member names and values, the module-level integer constants, the
text cuGetErrorString gives for every CUresult (from the bindings' documentation of each
value, the comments of cuda.h) and the list of every public name of the module, so that the
client can say "not supported remotely" for a real driver function it does not forward.

Usage: python tools/gen_driver_enums.py [-o cricket_client/_enums.py] [--check]
The output is deterministic: the same cuda-bindings version gives the same bytes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import enum_mirror

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "cricket_client" / "_enums.py"

_SPHINX_REF = re.compile(r":py:\w+:`~?\.?([^`]+)`")


def _error_text(doc: str | None, name: str) -> str:
    """First sentence of a CUresult member's documentation, without Sphinx markup."""
    if not doc:
        return name
    text = " ".join(_SPHINX_REF.sub(r"\1", doc).split())
    match = re.match(r"(.+?\.)(\s|$)", text)
    return match.group(1) if match else text


def generate() -> str:
    """Return the text of _enums.py for the installed cuda-bindings."""
    from cuda.bindings import driver

    return enum_mirror.render(
        driver,
        tool="tools/gen_driver_enums.py",
        doc="The enums and constants of cuda.bindings.driver, with the same names and values.",
        base="_DriverEnum",
        error_strings={
            int(value): _error_text(value.__doc__, member)
            for member, value in driver.CUresult.__members__.items()
        },
        error_comment="cuGetErrorString's text for each CUresult value.",
        names_constant="DRIVER_NAMES",
    )


def main(argv: list[str] | None = None) -> int:
    return enum_mirror.main(
        argv,
        description=(__doc__ or "").splitlines()[0],
        generate=generate,
        default=DEFAULT_OUTPUT,
        tool="tools/gen_driver_enums.py",
    )


if __name__ == "__main__":
    sys.exit(main())
