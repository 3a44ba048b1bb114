"""CU_GRAPH_LAUNCH_BATCH: a run of cuGraphLaunch calls the client gathered into one call.

Each launch is made as if it had come alone (the checks and errors of `graph_launch`), in
order; every one is attempted and the first failure is raised afterwards, naming its place in
the batch, as for kernel launch batches (`SessionModules.launch_batch`). Where the backend has
a C loop for them (`BackendSession.fast_graph_launcher`), each exec and stream handle of the
batch is checked here once and handed to the loop, which makes the launches from the record;
a launch it hands back is made or reported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.launch_batch import GraphLaunch
from cricket_server.session_graphs import SessionGraphs
from cricket_server.session_modules import raise_first_failure, run_c_loop

__all__ = ["SessionGraphBatches"]

_CALL = "cuGraphLaunch"


class SessionGraphBatches(SessionGraphs):
    """`graph_launch_batch` of `Session`."""

    def graph_launch_batch(self, launches: Sequence[GraphLaunch]) -> None:
        """cuGraphLaunch for each launch, in order, each attempted as if it came alone; the
        first failure is raised afterwards, naming its place in the batch."""
        count = len(launches)
        self.current_for_batch(_CALL, count)
        body = getattr(launches, "body", None)
        fast = self.bsession.fast_graph_launcher() if body is not None else None
        if fast is not None and body is not None:
            raise_first_failure(self._graph_launch_batch_fast(fast, launches, body), count)
            return
        first: tuple[int, CudaError] | None = None
        for index, (handle, stream, host_in) in enumerate(launches):
            try:
                self._graph_launch_alone(handle, stream, host_in)
            except CudaError as e:
                first = first or (index, e)
        raise_first_failure(first, count)

    def _graph_launch_batch_fast(
        self, fast: Any, launches: Sequence[GraphLaunch], body: memoryview
    ) -> tuple[int, CudaError] | None:
        """`graph_launch_batch` by the backend's C loop: each exec and stream is checked here
        once and put in the loop's tables; a launch the loop hands back (an exec it cannot
        launch, another input length, a change of stream) is made here."""
        tabled: set[int] = set()  # exec handles in the loop's table
        streams: set[int] = set()
        untabled: set[int] = set()  # exec handles the loop cannot launch

        def take(index: int) -> bool:
            handle, stream, host_in = launches[index]
            if (
                handle not in untabled
                and (handle not in tabled or stream not in streams)
                and self._table(fast, handle, stream, tabled, streams, untabled)
            ):
                return True  # the loop launches it now
            self._graph_launch_alone(handle, stream, host_in)
            return False

        return run_c_loop(fast, body, len(launches), take)

    def _graph_launch_alone(self, handle: int, stream: int, host_in: memoryview) -> None:
        record = self._exec(_CALL, handle)
        if len(record.in_sizes) != len(record.host_copies):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{_CALL}: exec {handle:#x} copies into client host memory: its launches "
                "return those bytes and cannot share a batch",
            )
        self.graph_launch(handle, stream, host_in)

    def _table(
        self, fast: Any, handle: int, stream: int, tabled: set[int], streams: set[int],
        untabled: set[int],
    ) -> bool:  # fmt: skip
        """Check an exec and stream as `graph_launch` would and put them in the loop's tables;
        whether the loop can launch the exec."""
        record = self._exec(_CALL, handle)
        if self._capture_of(stream) is not None:
            raise self._unsupported_in_capture(_CALL, stream)
        obj = self._stream(_CALL, stream)
        if handle not in tabled:
            if len(record.in_sizes) != len(record.host_copies) or not fast.add_exec(
                handle, record.obj
            ):
                untabled.add(handle)
                return False
            tabled.add(handle)
        if stream not in streams:
            fast.add_stream(stream, obj)
            streams.add(stream)
        return True
