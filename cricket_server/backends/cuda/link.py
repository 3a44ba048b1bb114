"""The cuda backend's linker: cuLinkCreate, cuLinkAddData per input, cuLinkComplete, the image
copied out, cuLinkDestroy (in the current context, as a local cuLink* sequence)."""

from __future__ import annotations

import ctypes
from typing import Any

from ..base import CUDA_SUCCESS, CudaError
from ._driver import driver, error_text
from .jit import JitOptions

__all__ = ["CudaLinker"]


def _check(result: Any, call: str, options: JitOptions) -> Any:
    err = result[0] if isinstance(result, tuple) else result
    if err != CUDA_SUCCESS:
        code = int(err)
        log = options.error_log_text()
        raise CudaError(code, f"{call}: {error_text(code)}" + (f"\n{log}" if log else ""))
    return result


class CudaLinker:
    _state: Any  # CudaSession: makes the session's device current

    def link(self, inputs: list[tuple[int, str, bytes]], jit_options: dict[int, int]) -> tuple[bytes, str]:
        self._state()
        options = JitOptions.from_wire(jit_options, "cuLinkCreate")
        keys, values = options.with_error_log()
        try:
            made = driver.cuLinkCreate(len(keys), keys, values)
        except TypeError:  # a cuda-python that will not take a bytearray log buffer
            options.error_log = None
            made = driver.cuLinkCreate(len(options.keys), options.keys, options.values)
        state = _check(made, "cuLinkCreate", options)[1]
        try:
            for kind, name, data in inputs:
                _check(
                    driver.cuLinkAddData(
                        state, driver.CUjitInputType(kind), bytes(data), len(data),
                        name.encode(), 0, None, None,
                    ),
                    f"cuLinkAddData({name!r})", options,
                )  # fmt: skip
            _, image, size = _check(driver.cuLinkComplete(state), "cuLinkComplete", options)
            return ctypes.string_at(int(image), int(size)), ""
        finally:
            driver.cuLinkDestroy(state)
