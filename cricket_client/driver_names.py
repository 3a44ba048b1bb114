"""cuFuncGetName and cuKernelGetName of `cricket_client.driver` (procedures 621, 622): the
name a function or library kernel was looked up by, as the server's session recorded it.
A NULL handle answers CUDA_ERROR_INVALID_VALUE and None without a call, as the driver does.
Re-exported by `cricket_client.driver`.
"""

from __future__ import annotations

from typing import Any

from ._driver_base import _out
from ._enums import CUresult
from ._types import as_int
from .connection import get_connection

__all__ = ["cuFuncGetName", "cuKernelGetName"]


def _name_of(call: str, procedure: str, handle: Any) -> tuple[Any, bytes | None]:
    conn = get_connection()
    value = as_int(handle)
    if value == 0:
        conn.set_local_error(f"{call}: the handle is NULL")
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    err, r = conn.sync(procedure, value)
    return _out(err, None if err else r.value.encode())  # type: ignore[return-value]


def cuFuncGetName(hfunc: Any) -> tuple[Any, bytes | None]:
    return _name_of("cuFuncGetName", "CU_FUNC_GET_NAME", hfunc)


def cuKernelGetName(hfunc: Any) -> tuple[Any, bytes | None]:
    return _name_of("cuKernelGetName", "CU_KERNEL_GET_NAME", hfunc)
