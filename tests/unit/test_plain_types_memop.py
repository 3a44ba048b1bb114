"""CUstreamBatchMemOpParams is a union, as in cuda.h and cuda-bindings: its arms share bytes."""

from __future__ import annotations

from cricket_client import driver as cuda

WRITE_32 = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_32
BARRIER = cuda.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_BARRIER


def test_an_arms_operation_is_the_unions_operation() -> None:
    p = cuda.CUstreamBatchMemOpParams()
    p.writeValue.operation = WRITE_32  # what cuda-python programs set
    p.writeValue.address = 0x1000
    p.writeValue.value = 7
    assert p.operation == WRITE_32
    assert int(p.waitValue.address) == 0x1000 and int(p.waitValue.value) == 7
    p.memoryBarrier.operation = BARRIER
    assert p.operation == BARRIER and p.writeValue.operation == BARRIER


def test_value_is_the_low_half_of_value64_and_arms_copy_on_assignment() -> None:
    p, q = cuda.CUstreamBatchMemOpParams(), cuda.CUstreamBatchMemOpParams()
    p.waitValue.value64 = 0x1_0000_0002
    assert int(p.waitValue.value) == 2
    q.writeValue = p.waitValue
    p.waitValue.value64 = 5
    assert int(q.writeValue.value64) == 0x1_0000_0002  # a copy, not a view of p
