"""The sim backend's linker: it cannot compile or link device code, so it links only what
needs no linking: one cubin (or a fatbin holding one for its architecture) passes through."""

from __future__ import annotations

from ..base import not_supported

__all__ = ["SimLinker"]

CUBIN, PTX, FATBINARY, OBJECT, LIBRARY, NVVM = 0, 1, 2, 3, 4, 5
_NAMES = {CUBIN: "cubin", PTX: "PTX", FATBINARY: "fatbin", OBJECT: "object", LIBRARY: "library", NVVM: "NVVM IR"}


class SimLinker:
    def link(self, inputs: list[tuple[int, str, bytes]], jit_options: dict[int, int]) -> tuple[bytes, str]:
        call = "cuLinkComplete"
        if len(inputs) != 1 or inputs[0][0] != CUBIN:
            kinds = ", ".join(f"{_NAMES.get(t, t)} {name!r}" for t, name, _ in inputs) or "no inputs"
            raise not_supported(
                call,
                f"the sim backend links a single cubin only (it cannot compile or link device "
                f"code); given: {kinds}",
            )
        return bytes(inputs[0][2]), ""
