"""A handle of the wrong kind (an event where a stream goes) is refused from the facts of
rpc_spec/cricket.x before the call runs: CUDA_ERROR_INVALID_HANDLE, and the message names the
procedure and the argument; the refused call still counts, as every call the server answers."""

from __future__ import annotations

from typing import Any

from behaviour_helpers import KERNELS, check

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult


def _refused(result: tuple[Any, ...], *needles: str) -> str:
    assert result[0] == E.CUDA_ERROR_INVALID_HANDLE, result
    message = cricket_client.last_error_message()
    for needle in needles:
        assert needle in message, message
    return message


def test_an_event_where_a_stream_goes_names_the_call_and_the_argument(
    session: cricket_client.Connection,
) -> None:
    event = check(cuda.cuEventCreate(0))
    _refused(
        cuda.cuStreamSynchronize(event),
        "CU_STREAM_SYNCHRONIZE: argument 1 (stream)",
        "is an event handle, not a stream handle",
    )
    _refused(
        cuda.cuStreamQuery(event),
        "CU_STREAM_QUERY: argument 1 (stream)",
        "is an event handle, not a stream handle",
    )


def test_the_second_argument_is_named_when_it_is_the_wrong_one(
    session: cricket_client.Connection,
) -> None:
    stream = check(cuda.cuStreamCreate(0))
    event = check(cuda.cuEventCreate(0))
    _refused(
        cuda.cuEventElapsedTime(event, stream),
        "CU_EVENT_ELAPSED_TIME: argument 2 (end)",
        "is a stream handle, not a event handle",
    )
    check(cuda.cuEventRecord(event, stream))  # the right kinds still work
    check(cuda.cuEventSynchronize(event))


def test_a_module_where_a_function_goes_names_both_allowed_kinds(
    session: cricket_client.Connection,
) -> None:
    module = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
    attrib = cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    _refused(
        cuda.cuFuncGetAttribute(attrib, module),
        "CU_FUNC_GET_ATTRIBUTE: argument 2 (func)",
        "is a module handle, not a function handle or a kernel handle",
    )
    function = check(cuda.cuModuleGetFunction(module, b"vector_add"))
    assert check(cuda.cuFuncGetAttribute(attrib, function)) > 0


def test_a_refused_call_is_counted_as_the_client_counts_it(
    session: cricket_client.Connection,
) -> None:
    """Replay numbering stays in step: the server counts the refused call, as the client did."""
    event = check(cuda.cuEventCreate(0))
    _refused(cuda.cuStreamSynchronize(event))
    _refused(cuda.cuStreamQuery(event))
    reply = session._stub.SESSION_CALLS()
    assert reply.err == 0
    assert reply.value == session.replay_log.seq
