"""Recapture into an existing graph (cuStreamBeginRecaptureToGraph): the work a stream
captures takes the places of the graph's nodes, in the order they were made.

Capture is the session's on both backends (`session_graphs`), so recapture is too: the k-th
node the capture makes is matched with the graph's k-th node. A node of another type, other
dependencies (the topology), a memory alloc or free node with other parameters, or more or
fewer nodes than the graph has invalidate the capture (cuStreamEndCapture then says why), as
CUDA's recapture fails on them; any other parameters replace the node's (CUDA calls the
caller's callback on such a mismatch; a callback is a client function, which the client
refuses, so every mismatch is taken, as a callback answering CUDA_SUCCESS would). The graph
stays the caller's, also when the recapture fails; execs made from it are unchanged
(cuGraphExecUpdate brings them the new parameters).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cricket_server.graphs import NODE_MEM_ALLOC, NODE_MEM_FREE
from cricket_server.session_graphs import (
    CaptureSequence,
    SessionGraphs,
    StreamCapture,
    _capture_ids,
    capture_checked,
)

__all__ = ["SessionRecapture"]


@dataclass
class Recapture:
    nodes: list[int]  # the graph's nodes in the order they were made
    done: int = 0  # how many the capture has matched


class SessionRecapture(SessionGraphs):
    """cuStreamBeginRecaptureToGraph, and captures matched against a graph's nodes."""

    def _recaptures(self) -> dict[int, Recapture]:
        return self.__dict__.setdefault("_recapture_table", {})  # type: ignore[no-any-return]

    def stream_begin_recapture_to_graph(self, stream: int, mode: int, graph: int) -> None:
        call = "cuStreamBeginRecaptureToGraph"
        self._check_capture_start(call, stream, mode)
        record = self._graph(call, graph)
        seq = CaptureSequence(record.handle, next(_capture_ids), mode, stream, owned=False)
        self.__dict__.setdefault("_captures", {})[stream] = StreamCapture(seq)
        self._recaptures()[seq.id] = Recapture(list(record.nodes))

    def _captured(
        self, call: str, capture: StreamCapture, params: Any, check: Callable[[], None]
    ) -> None:
        seq = capture.seq
        plan = self._recaptures().get(seq.id)
        if plan is None:
            super()._captured(call, capture, params, check)
            return
        if not capture_checked(seq, check):
            return
        why = self._mismatch(plan, capture, params)
        if why:
            seq.invalid = f"recapture into graph {seq.graph:#x}: {why}"
            return
        node = self._node(call, plan.nodes[plan.done])
        node.params = params
        capture.tail = [node.handle]
        plan.done += 1

    def _mismatch(self, plan: Recapture, capture: StreamCapture, params: Any) -> str:
        """Why the capture's next node cannot take the graph's next node's place, or ''."""
        if plan.done >= len(plan.nodes):
            return f"the capture makes more than the graph's {len(plan.nodes)} nodes"
        node = self._node("cuStreamBeginRecaptureToGraph", plan.nodes[plan.done])
        if int(params.type) != node.type:
            return f"node {plan.done} is of type {node.type}, the captured work of type {int(params.type)}"
        if sorted(node.deps) != sorted(capture.tail):
            return f"node {plan.done} depends on other nodes than the captured work does"
        if node.type in (NODE_MEM_ALLOC, NODE_MEM_FREE) and node.params != params:
            return f"memory node {plan.done} has other parameters"
        return ""

    def stream_end_capture(self, stream: int) -> int:
        capture = self._capture_of(stream)
        plan = None if capture is None else self._recaptures().get(capture.seq.id)
        if capture is not None and plan is not None and capture.seq.origin == stream:
            if not capture.seq.invalid and plan.done != len(plan.nodes):
                capture.seq.invalid = (
                    f"recapture into graph {capture.seq.graph:#x}: the capture made {plan.done} "
                    f"of the graph's {len(plan.nodes)} nodes"
                )
            del self._recaptures()[capture.seq.id]
        return super().stream_end_capture(stream)
