"""JIT options for cuModuleLoadDataEx and cuLibraryLoadData, from the wire's {option: int}.

Scalar options pass through (enum-valued ones as their cuda-python enum). Options that are
host pointers or outputs cannot come from a client: the log buffer sizes and the wall time
are outputs and are dropped (the server supplies its own error log and puts it in the
error message); pointer-valued options are CUDA_ERROR_NOT_SUPPORTED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base import CUDA_ERROR_INVALID_VALUE, CudaError, not_supported
from ._driver import driver

__all__ = ["JitOptions"]

_O = driver.CUjit_option
_ENUM_VALUED: dict[str, Any] = {
    "CU_JIT_TARGET": driver.CUjit_target,
    "CU_JIT_FALLBACK_STRATEGY": driver.CUjit_fallback,
    "CU_JIT_CACHE_MODE": driver.CUjit_cacheMode,
}
_INT_VALUED = {
    "CU_JIT_MAX_REGISTERS",
    "CU_JIT_THREADS_PER_BLOCK",
    "CU_JIT_OPTIMIZATION_LEVEL",
    "CU_JIT_TARGET_FROM_CUCONTEXT",
    "CU_JIT_GENERATE_DEBUG_INFO",
    "CU_JIT_LOG_VERBOSE",
    "CU_JIT_GENERATE_LINE_INFO",
    "CU_JIT_LTO",
    "CU_JIT_FTZ",
    "CU_JIT_PREC_DIV",
    "CU_JIT_PREC_SQRT",
    "CU_JIT_FMA",
    "CU_JIT_OPTIMIZE_UNUSED_DEVICE_VARIABLES",
    "CU_JIT_POSITION_INDEPENDENT_CODE",
    "CU_JIT_MIN_CTA_PER_SM",
    "CU_JIT_MAX_THREADS_PER_BLOCK",
    "CU_JIT_OVERRIDE_DIRECTIVE_VALUES",
    "CU_JIT_SPLIT_COMPILE",
    "CU_JIT_BINARY_LOADER_THREAD_COUNT",
}
_OUTPUTS = {"CU_JIT_WALL_TIME", "CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES"}
_ERROR_LOG_SIZE = "CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES"
DEFAULT_ERROR_LOG = 8192


@dataclass
class JitOptions:
    """Option keys and values as cuda-python takes them, plus the server's error log."""

    keys: list[Any] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    error_log: bytearray | None = None

    @classmethod
    def from_wire(cls, options: dict[int, int], call_name: str) -> JitOptions:
        out = cls()
        log_size = DEFAULT_ERROR_LOG
        for key, value in options.items():
            try:
                option = _O(int(key))
            except ValueError:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"{call_name}: {key} is not a CUjit_option"
                ) from None
            name = option.name
            if name in _INT_VALUED:
                out.keys.append(option)
                out.values.append(int(value))
            elif name in _ENUM_VALUED:
                enum_type = _ENUM_VALUED[name]
                try:
                    out.keys.append(option)
                    out.values.append(enum_type(int(value)))
                except ValueError:
                    raise CudaError(
                        CUDA_ERROR_INVALID_VALUE,
                        f"{call_name}: {value} is not a {enum_type.__name__} value for {name}",
                    ) from None
            elif name == _ERROR_LOG_SIZE:
                log_size = max(1, int(value))
            elif name in _OUTPUTS:
                continue
            else:
                raise not_supported(
                    call_name, f"JIT option {name} ({int(key)}) needs a host pointer"
                )
        out.error_log = bytearray(log_size)
        return out

    def with_error_log(self) -> tuple[list[Any], list[Any]]:
        """Keys and values including the server's error log buffer."""
        assert self.error_log is not None
        keys = [*self.keys, _O.CU_JIT_ERROR_LOG_BUFFER, _O.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
        values = [*self.values, self.error_log, len(self.error_log)]
        return keys, values

    def error_log_text(self) -> str:
        if not self.error_log:
            return ""
        return bytes(self.error_log).split(b"\0", 1)[0].decode(errors="replace").strip()
