"""The CUatomicOperation values and their check, for the atomic capability queries of the
session layer and of backends that answer them themselves."""

from __future__ import annotations

from collections.abc import Sequence

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError

__all__ = ["ATOMIC_OPERATIONS", "check_operations"]

ATOMIC_OPERATIONS = range(13)  # CUatomicOperation: INTEGER_ADD (0) .. FLOAT_MAX (12)


def check_operations(call: str, operations: Sequence[int]) -> None:
    """CUDA_ERROR_INVALID_VALUE for no operations or one that is no CUatomicOperation."""
    if not operations:
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: count is 0")
    for op in operations:
        if op not in ATOMIC_OPERATIONS:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {op} is no CUatomicOperation")
