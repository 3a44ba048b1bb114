"""CRICKET_V1 procedures 620-639: calls cuda-python's binding tests reach that the other
families leave out (cuGraphDestroyNode is the graphs family's: `graph_procedures`).

Mixed into `CricketService`; every procedure runs through its `_result` (errors as CUresults,
kept for GET_ERROR_MESSAGE). Names come from the session's records of the lookups
(cuModuleGetFunction, cuLibraryGetKernel): no backend work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cricket_server.resources import HandleKind, KernelRecord
from rpc_spec import cricket_rpc as proto

__all__ = ["BindingProcedures"]


class BindingProcedures:
    """Procedures 621-622 of `CricketService` (which supplies `_result`)."""

    _result: Callable[..., Any]

    def CU_FUNC_GET_NAME(self, ctx: Any, func: int) -> proto.str_result:
        call = "cuFuncGetName"
        return self._result(proto.str_result, ctx, call, lambda s: s.function(call, func).name)

    def CU_KERNEL_GET_NAME(self, ctx: Any, kernel: int) -> proto.str_result:
        call = "cuKernelGetName"

        def name(s: Any) -> str:
            s.require_init(call)
            return str(s.handles.get(call, HandleKind.KERNEL, kernel, KernelRecord).name)

        return self._result(proto.str_result, ctx, call, name)
