"""Recapture into an existing graph (cuStreamBeginRecaptureToGraph and the cuda form): the
work the stream captures takes the places of the graph's nodes, in the order they were made
(`cricket_server.session_recapture`). A callback on parameter mismatches would be a function
of this process that the server's capture calls for each mismatch: it is refused naming the
call (pass None; every mismatch is then taken, as a callback answering success would).
Re-exported by `cricket_client.driver` and `cricket_client.runtime`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from . import capture_modes
from . import driver_graphs as dg
from ._types import as_int
from .connection import get_connection
from .plain_types import ValueStruct

__all__ = [
    "cuStreamBeginRecaptureToGraph",
    "cudaStreamBeginRecaptureToGraph",
    "cudaGraphRecaptureCallbackData",
]


class cudaGraphRecaptureCallbackData(ValueStruct):
    """The runtime's callback and user data of a recapture (only a NULL callback is taken)."""

    FIELDS: ClassVar[dict[str, Any]] = {"callbackFunc": 0, "userData": 0}


_CALLBACK_WHY = (
    "a callback on parameter mismatches would be a function of the client that the server "
    "calls during capture; pass None (every mismatch is taken)"
)


def _given(value: Any) -> bool:
    if value is None:
        return False
    try:
        return as_int(value) != 0
    except (TypeError, ValueError):
        return True  # a Python callable


def _begin(call: str, hStream: Any, mode: Any, hGraph: Any, callback: Any) -> tuple[Any]:
    conn = get_connection()
    if _given(callback):
        return dg._fail(conn, dg._NOT_SUPPORTED, f"{call}: {_CALLBACK_WHY}", 0)  # type: ignore[return-value]
    stream = dg._stream(hStream)
    err, _ = conn.sync(
        "CU_STREAM_BEGIN_RECAPTURE_TO_GRAPH", stream, int(mode), dg._u64(hGraph, "hGraph")
    )
    if not err:
        dg._state(conn).capturing.add(stream)
        capture_modes.began(conn, stream, int(mode))
    return dg._out(err)  # type: ignore[no-any-return]


def cuStreamBeginRecaptureToGraph(
    hStream: Any, mode: Any, hGraph: Any, callbackFunc: Any, userData: Any
) -> tuple[Any]:
    return _begin("cuStreamBeginRecaptureToGraph", hStream, mode, hGraph, callbackFunc)


def cudaStreamBeginRecaptureToGraph(
    stream: Any, mode: Any, graph: Any, callbackData: Any
) -> tuple[Any]:
    from .runtime_graphs import _run

    callback = getattr(callbackData, "callbackFunc", None) if callbackData is not None else None
    return _run(  # type: ignore[return-value]
        lambda: _begin("cudaStreamBeginRecaptureToGraph", stream, mode, graph, callback), 0
    )
