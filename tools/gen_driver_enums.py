"""Generate cricket_client/_enums.py from the installed cuda-bindings.

The client must not import cuda-python (D3), yet it mirrors `cuda.bindings.driver`: the same
enum classes with the same member names and values, the module-level integer constants, the
text cuGetErrorString gives for every CUresult (the driver's short texts, which are the
runtime's for the same code: "no error", "invalid device ordinal"; taken from the runtime's
cudaGetErrorString, which needs no GPU, and from the bindings' documentation of a value the
runtime lacks) and the list of every public name of the module, so that the
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


def _runtime_texts() -> dict[int, str]:
    """cudaGetErrorString's text for every cudaError_t code."""
    from cuda.bindings import runtime

    return {
        int(value): bytes(runtime.cudaGetErrorString(value)[1]).decode()
        for value in runtime.cudaError_t.__members__.values()
    }


# Where the driver's text is not the runtime's for the same code: measured with the driver's own
# cuGetErrorString (driver 580.159.04, H200; tests/gpu/test_driver_error_texts.py compares).
DRIVER_ONLY_TEXTS = {
    202: "context already current",  # CUDA_ERROR_CONTEXT_ALREADY_CURRENT
    916: "an error happened during the key rotation sequence",  # CUDA_ERROR_KEY_ROTATION
}


def generate() -> str:
    """Return the text of _enums.py for the installed cuda-bindings."""
    from cuda.bindings import driver

    runtime_texts = _runtime_texts()

    return enum_mirror.render(
        driver,
        tool="tools/gen_driver_enums.py",
        doc="The enums and constants of cuda.bindings.driver, with the same names and values.",
        base="_DriverEnum",
        error_strings={
            int(value): DRIVER_ONLY_TEXTS.get(int(value))
            or runtime_texts.get(int(value))
            or _error_text(value.__doc__, member)
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
