"""Client host inputs of an exec copied ahead of its launches, so that queued launches never
wait for the GPU.

With page-locked stages (`graph_staging`), a launch may refill the stage its memcpy nodes read
only once the launch before it has read it, which on one stream means once that launch ran:
the server waits for the GPU at every launch and the GPU waits for the server in between.
When every host side of an exec is the source of a memcpy node that no node precedes (a root:
the shape stream capture gives a step's input copy) and outside conditional bodies, those
nodes are empty nodes of the real graph instead, and each launch copies its bytes itself, in
stream order just before cuGraphLaunch: into a slot of a small ring of page-locked memory,
then one cuMemcpyHtoDAsync per node, then an event that frees the slot. A launch waits only
when all `SLOTS` slots are still being copied from. Running the copy before the whole graph
is one of the orders the graph allows (nothing precedes those nodes; their dependents still
follow them). CUDA orders the launches of one exec across streams; the copies of a launch on
another stream than the previous one's first wait for what that stream was given so far.

The ring's state (next slot, which slots were used, the last stream) lives in the exec's C
struct (`LaunchState`) that the C loop of launch batches (`fast_launch.c`) reads and updates
too; an exec without host memory has one as well (no slots), so both paths launch it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base import CudaError
from ._driver import call, driver
from .graph_staging import _done, host_sides

__all__ = ["AheadInputs", "LaunchState", "SLOTS"]

SLOTS = 8  # launches whose input copies may be queued at once


class _Copy(ctypes.Structure):
    _fields_ = [("device", ctypes.c_uint64), ("size", ctypes.c_uint64), ("offset", ctypes.c_uint64)]


class _Slot(ctypes.Structure):
    _fields_ = [("host", ctypes.c_void_p), ("event", ctypes.c_void_p), ("used", ctypes.c_uint64)]


class LaunchState(ctypes.Structure):
    """fast_launch.c's `cricket_ahead`: an exec and the ring of its input slots."""

    _fields_ = [
        ("exec", ctypes.c_void_p),
        ("in_total", ctypes.c_uint64),
        ("ncopies", ctypes.c_uint32),
        ("nslots", ctypes.c_uint32),
        ("next", ctypes.c_uint32),
        ("started", ctypes.c_uint32),  # a launch was made (`last_stream` is its stream)
        ("last_stream", ctypes.c_void_p),
        ("copies", ctypes.POINTER(_Copy)),
        ("slots", ctypes.POINTER(_Slot)),
    ]


@dataclass
class AheadInputs:
    """The root host-to-device copies of one exec, made by each launch before the graph."""

    copies: list[tuple[object, Any, int, int]]  # (node key, CUdeviceptr, size, offset)
    total: int  # input bytes of a launch
    state: LaunchState  # the exec's, its ring here
    events: list[Any] = field(default_factory=list)  # each slot's CUevent
    views: list[memoryview] = field(default_factory=list)  # each slot's bytes
    disabled: set[object] = field(default_factory=set)  # keys of copies turned off
    switch_event: Any = None  # made on the first change of stream
    base: int | None = None  # the slots' page-locked memory
    _keep: list[Any] = field(default_factory=list)  # the ctypes arrays `state` points into

    @classmethod
    def plan(cls, nodes: Sequence[Any], state: LaunchState) -> AheadInputs | None:
        """The copies of an exec of `nodes` when every host side qualifies (see the module
        docstring), its slots made and put in the exec's `state`; else None (page-locked
        stages serve it)."""
        sides = host_sides(nodes)
        roots = {node.key for node in nodes if not node.deps}
        if not sides or any(
            not s.to_device or s.nested or s.size <= 0 or s.key not in roots for s in sides
        ):
            return None
        copies, offset = [], 0
        for side in sorted(sides, key=lambda s: s.index):
            copies.append((side.key, driver.CUdeviceptr(side.device), side.size, offset))
            offset += side.size
        made = cls(copies, offset, state)
        try:
            made._make_slots()
        except BaseException:
            made.free()
            raise
        return made

    @property
    def keys(self) -> frozenset[object]:
        return frozenset(key for key, *_ in self.copies)

    def set_enabled(self, key: object, enabled: bool) -> None:
        """cuGraphNodeSetEnabled of an input copy's node: later launches make it or not."""
        if enabled:
            self.disabled.discard(key)
        else:
            self.disabled.add(key)

    def _make_slots(self) -> None:
        base = int(call(driver.cuMemHostAlloc, self.total * SLOTS, driver.CU_MEMHOSTALLOC_PORTABLE))
        self.base = base
        whole = memoryview((ctypes.c_ubyte * (self.total * SLOTS)).from_address(base)).cast("B")
        flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
        slots = (_Slot * SLOTS)()
        for i in range(SLOTS):
            self.views.append(whole[i * self.total : (i + 1) * self.total])
            self.events.append(call(driver.cuEventCreate, flags))
            slots[i].host = base + i * self.total
            slots[i].event = int(self.events[-1])
        copies = (_Copy * len(self.copies))()
        for i, (_key, device, size, offset) in enumerate(self.copies):
            copies[i].device, copies[i].size, copies[i].offset = int(device), size, offset
        state = self.state
        state.in_total, state.ncopies, state.nslots = self.total, len(self.copies), SLOTS
        state.copies = ctypes.cast(copies, ctypes.POINTER(_Copy))
        state.slots = ctypes.cast(slots, ctypes.POINTER(_Slot))
        self._keep += [copies, slots]

    def copy_in(self, host_in: Sequence[memoryview], stream: Any) -> None:
        """This launch's input bytes into the next slot and, on `stream`, to the device."""
        state = self.state
        i = state.next
        slot = state.slots[i]
        event = self.events[i]
        state.next = (i + 1) % SLOTS
        if slot.used and not _done(event):
            call(driver.cuEventSynchronize, event)  # the oldest queued copy
        view = self.views[i]
        if len(host_in) == 1:
            view[:] = host_in[0]
        else:
            offset = 0
            for data in host_in:
                view[offset : offset + len(data)] = data
                offset += len(data)
        handle = int(stream)
        if state.started and (state.last_stream or 0) != handle:
            if self.switch_event is None:
                flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
                self.switch_event = call(driver.cuEventCreate, flags)
            call(driver.cuEventRecord, self.switch_event, driver.CUstream(state.last_stream or 0))
            call(driver.cuStreamWaitEvent, stream, self.switch_event, 0)
        state.started, state.last_stream = 1, handle
        address = slot.host
        copy = driver.cuMemcpyHtoDAsync
        disabled = self.disabled
        for key, device, size, offset in self.copies:
            if key not in disabled:
                call(copy, device, address + offset, size, stream)
        call(driver.cuEventRecord, event, stream)
        slot.used = 1

    def free(self) -> list[CudaError]:
        """Wait for the copies in flight and release the slots; the failures."""
        errors: list[CudaError] = []
        steps: list[tuple[Any, Any]] = []
        for event in self.events:
            steps += [(driver.cuEventSynchronize, event), (driver.cuEventDestroy, event)]
        if self.switch_event is not None:
            steps.append((driver.cuEventDestroy, self.switch_event))
        if self.base is not None:
            steps.append((driver.cuMemFreeHost, self.base))
        for fn, arg in steps:
            try:
                call(fn, arg)
            except CudaError as e:
                errors.append(e)
        self.events.clear()
        self.views.clear()
        self.state.nslots = 0
        self.switch_event = None
        self.base = None
        return errors
