"""Repeated launch batches made as CUDA graphs (the C side: `launch_replay.c`).

A loop that launches the same kernels step after step (a decoding step: a few small kernels
between two copies) sends the same CU_LAUNCH_KERNEL_BATCH every step, its parameters at most
changed. The driver's cuLaunchKernel costs the server about 4 us a launch; one cuGraphLaunch
of a graph of the same launches costs about what one launch does. So when a batch of at least
`MIN_LAUNCHES` launches, all on one stream, comes again with the same shape (the record's
bytes but the parameters: functions, dimensions, shared memory, stream, parameter lengths),
it is built into a graph (a chain of kernel nodes: the stream's order), and each later batch
of that shape is made by that graph: the nodes whose parameters changed get them first
(cuGraphExecKernelNodeSetParams), then one cuGraphLaunch on the batch's stream.

What the client sees does not change: the same kernels run in the same order on the same
stream, errors of the GPU surface as they would. A batch is made launch by launch as before
when its stream is capturing (its launches belong to the capture), when the graph's driver
calls fail (the launches then report their own errors), and on streams whose attributes were
set (a kernel node does not take its stream's attributes). The graphs are a cache, not state:
dropped before anything they name changes (a module or library unloaded, a function's or the
context's attributes or limits set, a stream destroyed, the device switched, the session
closed) and never in a checkpoint. CRICKET_LAUNCH_REPLAY=0 turns it off.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from .fast_launch import FastLauncher, driver_functions

__all__ = ["CAPACITY", "DRIVER_FUNCTIONS", "ENV", "MIN_LAUNCHES", "BatchReplays", "driver_table"]

log = logging.getLogger(__name__)

ENV = "CRICKET_LAUNCH_REPLAY"
MIN_LAUNCHES = 4  # fewer launches save less than a graph's upkeep costs
CAPACITY = 4  # graphs kept per session (the most recently used)
REFUSED_KEPT = 8  # shapes that could not be built, not tried again

# cricket_replay_driver's fields and the driver's functions that fill them
DRIVER_FUNCTIONS = (
    ("is_capturing", "cuStreamIsCapturing"),
    ("create", "cuGraphCreate"),
    ("add_kernel", "cuGraphAddKernelNode_v2"),
    ("instantiate", "cuGraphInstantiateWithFlags"),
    ("set_kernel", "cuGraphExecKernelNodeSetParams_v2"),
    ("launch", "cuGraphLaunch"),
    ("destroy_exec", "cuGraphExecDestroy"),
    ("destroy_graph", "cuGraphDestroy"),
)


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


class _Replay:
    """A cricket_replay and the memory it points into (kept alive with it)."""

    def __init__(self, ffi: Any, body: Any, count: int) -> None:
        self.record = ffi.new("unsigned char[]", len(body))
        self.nodes = ffi.new("void *[]", count)
        self.fns = ffi.new("cricket_fn[]", count)
        self.c = ffi.new("cricket_replay *")
        self.c.record, self.c.len, self.c.count = self.record, len(body), count
        self.c.nodes, self.c.fns = self.nodes, self.fns


class BatchReplays:
    """The graphs of one session's repeated batches (see the module doc). `drv` is a
    cricket_replay_driver (`driver_table`, or stand-ins in tests)."""

    def __init__(self, ffi: Any, lib: Any, drv: Any) -> None:
        self._ffi = ffi
        self._lib = lib
        self._drv = drv
        self._replays: list[_Replay] = []  # most recently used first
        self._last: bytes | None = None  # the last batch made launch by launch
        self._refused: list[bytes] = []
        self._plain_streams: set[int] = set()  # CUstreams whose attributes were set
        self.replayed = 0  # batches made by a graph (for tests and benchmarks)

    def launch(self, body: Any) -> bool:
        """Make the batch `body` by a graph of its shape: True when made, False when the
        caller must make it launch by launch."""
        if not self._replays:
            return False
        data = self._ffi.from_buffer(body)
        for i, replay in enumerate(self._replays):
            made = self._lib.cricket_replay_launch(self._drv, replay.c, data, len(data))
            if made == 1:
                if i:
                    self._replays.insert(0, self._replays.pop(i))
                self.replayed += 1
                return True
            if made < 0:
                log.info("launch replay: a graph failed (%d): its batches go one by one", -made)
                self._drop(self._replays.pop(i))
                return False
        return False

    def made(self, body: Any, fast: FastLauncher) -> None:
        """The batch `body` was just made launch by launch by `fast`'s loop, every launch
        accepted: the second batch of one shape in a row is built into a graph."""
        count = int.from_bytes(body[:4], "big") if len(body) >= 4 else 0
        if count < MIN_LAUNCHES:
            return
        last, self._last = self._last, bytes(body)
        if last is None or not self._same_shape(last, body):
            return
        if any(self._same_shape(refused, body) for refused in self._refused):
            return
        replay = _Replay(self._ffi, body, count)
        fns, streams = fast.tables()
        code = self._lib.cricket_replay_build(
            self._drv, replay.c, self._ffi.from_buffer(body), len(body), *fns, *streams
        )
        stream = int(self._ffi.cast("uintptr_t", replay.c.stream))
        if code == 0 and stream not in self._plain_streams:
            self._replays.insert(0, replay)
            self._last = None
            if len(self._replays) > CAPACITY:
                self._drop(self._replays.pop())
            return
        if code == 0:
            self._drop(replay)
        elif code > 0:
            log.info("launch replay: a batch's graph could not be built (%d)", code)
        self._refused = [bytes(body), *self._refused[: REFUSED_KEPT - 1]]

    def stream_attributes_set(self, stream: int) -> None:
        """The attributes of CUstream `stream` were set: its batches go launch by launch."""
        self._plain_streams.add(stream)
        self.clear()

    def stream_destroyed(self, stream: int) -> None:
        """CUstream `stream` is about to be destroyed (its value may come again)."""
        self._plain_streams.discard(stream)
        self.clear()

    def clear(self) -> None:
        """Drop every graph (before what they name changes; their context still alive)."""
        while self._replays:
            self._drop(self._replays.pop())
        self._last = None
        self._refused.clear()

    def _same_shape(self, a: bytes, b: Any) -> bool:
        if len(a) != len(b):
            return False
        return bool(self._lib.cricket_batch_same_shape(a, self._ffi.from_buffer(b), len(a)))

    def _drop(self, replay: _Replay) -> None:
        self._lib.cricket_replay_free(self._drv, replay.c)


def driver_table(ffi: Any) -> Any:
    """A cricket_replay_driver of the driver's functions (`fast_launch.driver_functions`)."""
    return driver_functions(ffi, "cricket_replay_driver", DRIVER_FUNCTIONS)
