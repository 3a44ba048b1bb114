"""Generate cricket_client/_runtime_enums.py from the installed cuda-bindings.

The client must not import cuda-python (D3), yet `cricket_client.runtime` mirrors
`cuda.bindings.runtime`: the same enum classes with the same member names and values, the
module-level integer constants, the text cudaGetErrorString gives for every cudaError_t (asked
of the bindings themselves, which answer it without a driver) and the list of every public name
of the module, so that the client can say "not supported remotely" for a real runtime function
it does not forward.

Usage: python tools/gen_runtime_enums.py [-o cricket_client/_runtime_enums.py] [--check]
The output is deterministic: the same cuda-bindings version gives the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import enum_mirror

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "cricket_client" / "_runtime_enums.py"


def generate() -> str:
    """Return the text of _runtime_enums.py for the installed cuda-bindings."""
    from cuda.bindings import runtime

    return enum_mirror.render(
        runtime,
        tool="tools/gen_runtime_enums.py",
        doc="The enums and constants of cuda.bindings.runtime, with the same names and values.",
        base="_RuntimeEnum",
        error_strings={
            int(value): bytes(runtime.cudaGetErrorString(value)[1]).decode()
            for value in runtime.cudaError_t.__members__.values()
        },
        error_comment="cudaGetErrorString's text for each cudaError_t value.",
        names_constant="RUNTIME_NAMES",
    )


def main(argv: list[str] | None = None) -> int:
    return enum_mirror.main(
        argv,
        description=(__doc__ or "").splitlines()[0],
        generate=generate,
        default=DEFAULT_OUTPUT,
        tool="tools/gen_runtime_enums.py",
    )


if __name__ == "__main__":
    sys.exit(main())
