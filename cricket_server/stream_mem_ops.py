"""Stream memory operations (cuStreamBatchMemOp and the cuStreamWaitValue/WriteValue calls):
what an operation is, the checks CUDA makes of it, and when a wait is satisfied.

A wait blocks its stream until the 32 or 64-bit value at `address` meets the condition its
flags name; a write stores `value` there when the stream reaches it; a barrier or a flush of
remote writes orders memory (nothing to do where memory is coherent, as on sim).
"""

from __future__ import annotations

from typing import NamedTuple

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)

__all__ = [
    "BARRIER",
    "FLUSH_REMOTE_WRITES",
    "StreamMemOp",
    "WAIT_32",
    "WAIT_64",
    "WRITE_32",
    "WRITE_64",
    "check_op",
    "value_size",
    "wait_satisfied",
]

# CUstreamBatchMemOpType
WAIT_32, WRITE_32, FLUSH_REMOTE_WRITES, WAIT_64, WRITE_64, BARRIER = 1, 2, 3, 4, 5, 6
ATOMIC_REDUCTION = 8
# CUstreamWaitValue_flags: a condition in the low bits, FLUSH above
WAIT_GEQ, WAIT_EQ, WAIT_AND, WAIT_NOR = 0, 1, 2, 3
WAIT_FLUSH = 1 << 30
_WRITE_FLAGS = 0x1  # CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER
_BARRIER_FLAGS = (0, 1)  # CU_STREAM_MEMORY_BARRIER_TYPE_SYS, _GPU
_NAMES = {
    WAIT_32: "cuStreamWaitValue32",
    WRITE_32: "cuStreamWriteValue32",
    WAIT_64: "cuStreamWaitValue64",
    WRITE_64: "cuStreamWriteValue64",
    FLUSH_REMOTE_WRITES: "CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES",
    BARRIER: "CU_STREAM_MEM_OP_BARRIER",
}


class StreamMemOp(NamedTuple):
    op: int
    flags: int
    address: int
    value: int


def value_size(op: int) -> int:
    """Bytes at the address of a wait or write (0 for the other operations)."""
    return 4 if op in (WAIT_32, WRITE_32) else 8 if op in (WAIT_64, WRITE_64) else 0


def check_op(call: str, m: StreamMemOp) -> None:
    """CUDA_ERROR_INVALID_VALUE for an unknown operation, flags CUDA does not take, a
    misaligned address or a value wider than the operation; CUDA_ERROR_NOT_SUPPORTED for
    atomic reductions."""
    if m.op == ATOMIC_REDUCTION:
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED, f"{call}: CU_STREAM_MEM_OP_ATOMIC_REDUCTION is not supported remotely"
        )
    name = _NAMES.get(m.op)
    if name is None:
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {m.op} is not a CUstreamBatchMemOpType")
    size = value_size(m.op)
    if m.op in (WAIT_32, WAIT_64):
        good = (m.flags & ~WAIT_FLUSH) in (WAIT_GEQ, WAIT_EQ, WAIT_AND, WAIT_NOR)
    elif m.op in (WRITE_32, WRITE_64):
        good = not m.flags & ~_WRITE_FLAGS
    elif m.op == BARRIER:
        good = m.flags in _BARRIER_FLAGS
    else:
        good = m.flags == 0
    if not good:
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: flags {m.flags:#x} of {name}")
    if size and m.address % size:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE, f"{call}: {name} address {m.address:#x} is not {size}-byte aligned"
        )
    if size and m.value >> (8 * size):
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {name} value {m.value:#x} is wider than {size} bytes")


def wait_satisfied(flags: int, size: int, current: int, value: int) -> bool:
    """Whether a wait of `flags` for `value` is over with `current` at its address."""
    bits = 8 * size
    mask = (1 << bits) - 1
    condition = flags & ~WAIT_FLUSH
    if condition == WAIT_GEQ:  # (int32_t)(*addr - value) >= 0: cyclic, ignoring wraparound
        return ((current - value) & mask) < (1 << (bits - 1))
    if condition == WAIT_EQ:
        return current == value
    if condition == WAIT_AND:
        return (current & value) != 0
    return (~(current | value) & mask) != 0  # WAIT_NOR
