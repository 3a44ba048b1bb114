"""The one place that calls the CUDA driver: results become values, failures `CudaError`s.

Every cuda-python driver call returns `(CUresult, *values)`; `call(fn, *args)` checks the
CUresult and returns the values (None, one value, or a tuple), or raises
`CudaError(code, "<cuCall>: <cuGetErrorString text>")`.
"""

from __future__ import annotations

from typing import Any

from cuda.bindings import driver  # type: ignore[import-untyped]

from ..base import CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS, CudaError

__all__ = ["CudaUnavailable", "call", "driver", "enum_value", "error_text"]


class CudaUnavailable(RuntimeError):
    """No CUDA driver or no GPU answers on this machine."""


def error_text(code: int) -> str:
    """cuGetErrorName and cuGetErrorString of `code`, or a fallback that names the number."""
    try:
        err, name = driver.cuGetErrorName(driver.CUresult(code))
        err2, text = driver.cuGetErrorString(driver.CUresult(code))
    except Exception:  # an unknown code, or no driver library
        return f"CUresult {code}"
    if err != CUDA_SUCCESS or err2 != CUDA_SUCCESS:
        return f"CUresult {code}"
    return f"{name.decode()}: {text.decode()}"


def call(fn: Any, *args: Any, what: str = "") -> Any:
    """Call a driver function; raise CudaError naming it (and `what`) unless it succeeds."""
    result = fn(*args)
    err = result[0]
    if err != CUDA_SUCCESS:
        code = int(err)
        detail = f" ({what})" if what else ""
        raise CudaError(code, f"{fn.__name__}{detail}: {error_text(code)}")
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]


def enum_value(enum_type: Any, value: int, call_name: str) -> Any:
    """Convert an integer to a cuda-python enum; an unknown value is CUDA_ERROR_INVALID_VALUE."""
    try:
        return enum_type(int(value))
    except ValueError:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call_name}: {value} is not a {enum_type.__name__} value",
        ) from None
