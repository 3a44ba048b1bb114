"""Another session's objects: refused as not this session's, without telling anything about
that session; its pointers look exactly like pointers nobody allocated."""

from __future__ import annotations

import re

from behaviour_helpers import check, foreign_handle_message

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
UNALLOCATED = 0x6FFF00000000  # inside no allocation of any session
RANGE_SIZE = cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE
CONTEXT = cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT


def _shape(message: str, address: int) -> str:
    """The message with the address in question replaced: what must be equal."""
    return re.sub(f"(0x)?0*{address:x}", "ADDR", message, flags=re.IGNORECASE)


def test_another_sessions_handle_is_not_owned_and_its_owner_not_named(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    with other_session.active():
        stream = check(cuda.cuStreamCreate(0))
        event = check(cuda.cuEventCreate(0))
    for call in (lambda: cuda.cuStreamSynchronize(stream), lambda: cuda.cuEventQuery(event)):
        assert call()[0] == E.CUDA_ERROR_INVALID_HANDLE
        message = cricket_client.last_error_message()
        # one server process knows it is another session's; under process isolation only
        # the other session's worker holds it, so here it is unknown
        assert foreign_handle_message() in message
        other_id = other_session.info.session_id
        assert f"{other_id:x}" not in message.lower() and str(other_id) not in message
        assert other_session.client_name not in message


def test_another_sessions_pointer_attributes_are_those_of_an_unknown_pointer(
    session: cricket_client.Connection, other_session: cricket_client.Connection
) -> None:
    with other_session.active():
        foreign = check(cuda.cuMemAlloc(4096))
        assert check(cuda.cuPointerGetAttribute(RANGE_SIZE, foreign)) == 4096
    for attribute in (RANGE_SIZE, CONTEXT):
        got = cuda.cuPointerGetAttribute(attribute, foreign)
        got_message = cricket_client.last_error_message()
        unknown = cuda.cuPointerGetAttribute(attribute, UNALLOCATED)
        unknown_message = cricket_client.last_error_message()
        assert got == unknown == (E.CUDA_ERROR_INVALID_VALUE, None)
        assert _shape(got_message, int(foreign)) == _shape(unknown_message, UNALLOCATED)
    foreign_attrs = cuda.cuPointerGetAttributes(2, [RANGE_SIZE, CONTEXT], foreign)
    assert foreign_attrs == cuda.cuPointerGetAttributes(2, [RANGE_SIZE, CONTEXT], UNALLOCATED)


def test_own_pointer_attributes_still_answer(session: cricket_client.Connection) -> None:
    ptr = check(cuda.cuMemAlloc(4096))
    try:
        assert check(cuda.cuPointerGetAttribute(RANGE_SIZE, ptr)) == 4096
        assert int(check(cuda.cuPointerGetAttribute(CONTEXT, ptr))) != 0
        memory_type = cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        assert check(cuda.cuPointerGetAttribute(memory_type, ptr)) == (
            cuda.CUmemorytype.CU_MEMORYTYPE_DEVICE
        )
    finally:
        check(cuda.cuMemFree(ptr))
