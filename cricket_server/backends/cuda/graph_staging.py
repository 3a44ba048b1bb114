"""Pinned host memory of an exec's memcpy nodes that read or write client host memory.

The client sends a launch's host-to-device bytes with the launch, so they must sit in
page-locked memory the exec's memcpy nodes read when the stream reaches them; a launch's
device-to-host bytes land in page-locked memory the server reads once the launch is done.
Everything is planned once, when the exec is made (`HostStaging.plan`):

| stage (one cuMemHostAlloc) | inputs, in launch order   | outputs, in launch order   |
| -------------------------- | ------------------------- | -------------------------- |
| offset                     | 0 .. in_total             | in_total .. in_total + out |

The exec's host nodes point into stage 0. A launch uses the current stage while the launch
before it is done with it (its event); otherwise the next idle stage of a small ring (made on
demand, at most `MAX_STAGES`), and the host nodes are pointed there with
cuGraphExecMemcpyNodeSetParams (prebuilt parameters; the driver applies them to later
launches only). So queued launches never wait for the GPU; only a launch that finds every
stage busy waits for the oldest. Host nodes inside conditional bodies or of zero bytes keep
one stage (the driver cannot repoint them): their launches wait for the previous one.

The ring is off unless CRICKET_GRAPH_STAGES (in the server's environment) allows more than one
stage: on the H200 (driver 580), repointing the host nodes at every launch cost more than
waiting for the previous launch (200 queued launches of the decoding step: 0.012 s against
0.008 s in two of three alternating runs), so an exec keeps one stage by default.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base import CUDA_ERROR_NOT_READY, CUDA_SUCCESS, CudaError
from ._driver import call, driver, error_text

__all__ = ["HostSide", "HostStaging", "MAX_STAGES", "STAGES_ENV", "host_sides", "stage_limit"]

MAX_STAGES = 4  # the most CRICKET_GRAPH_STAGES may allow
STAGES_ENV = "CRICKET_GRAPH_STAGES"


def stage_limit() -> int:
    """Stages one exec may use: CRICKET_GRAPH_STAGES (1-4), default 1 (no ring)."""
    text = os.environ.get(STAGES_ENV, "1")
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{STAGES_ENV}={text!r}: expected 1 to {MAX_STAGES}") from None
    if not 1 <= value <= MAX_STAGES:
        raise ValueError(f"{STAGES_ENV}={text!r}: expected 1 to {MAX_STAGES}")
    return value
_MEMCPY, _CONDITIONAL = 1, 13


@dataclass(frozen=True)
class HostSide:
    """One host side of a memcpy node: `index` among the launch's inputs (to the device) or
    outputs, `device` the address of the node's device side."""

    key: object
    to_device: bool
    index: int
    size: int
    device: int
    nested: bool  # inside a conditional body


def host_sides(nodes: Sequence[Any], nested: bool = False) -> list[HostSide]:
    """The host sides of the memcpy nodes among `nodes` (conditional bodies included)."""
    sides: list[HostSide] = []
    for node in nodes:
        if node.type == _MEMCPY and node.copy is not None:
            dst_host, dst, src_host, src, size = node.copy
            if src_host:
                sides.append(HostSide(node.key, True, src, size, dst, nested))
            if dst_host:
                sides.append(HostSide(node.key, False, dst, size, src, nested))
        elif node.type == _CONDITIONAL and node.conditional is not None:
            for body in node.conditional[4]:
                sides += host_sides(body, True)
    return sides


def _view(address: int, size: int) -> memoryview:
    return memoryview((ctypes.c_ubyte * size).from_address(address)).cast("B")


@dataclass
class _Stage:
    address: int
    event: Any = None
    launched: bool = False  # its event was recorded after a launch that uses it
    params: dict[object, Any] = field(default_factory=dict)  # node key -> CUDA_MEMCPY3D
    in_view: memoryview | None = None  # its inputs' bytes
    out_view: memoryview | None = None  # its outputs' bytes


@dataclass
class HostStaging:
    """The stages of one exec; see the module docstring."""

    sides: list[HostSide]
    offsets: dict[tuple[bool, int], int]  # (to_device, index) -> byte offset in a stage
    in_total: int
    out_total: int
    stages: list[_Stage] = field(default_factory=list)
    current: int = 0
    ring: bool = True  # whether launches may move to another stage
    limit: int = MAX_STAGES  # stages it may make
    nodes: dict[object, Any] = field(default_factory=dict)  # node key -> real CUgraphNode
    in_view: memoryview | None = None  # of the current stage
    out_view: memoryview | None = None

    @classmethod
    def plan(cls, nodes: Sequence[Any]) -> HostStaging | None:
        """The staging of an exec of `nodes`, stage 0 allocated; None without host sides."""
        sides = host_sides(nodes)
        if not sides:
            return None
        offsets: dict[tuple[bool, int], int] = {}
        totals = {True: 0, False: 0}
        for to_device in (True, False):
            for side in sorted((s for s in sides if s.to_device == to_device), key=_index):
                offsets[(to_device, side.index)] = totals[to_device]
                totals[to_device] += side.size
        made = cls(sides, offsets, totals[True], totals[False], limit=stage_limit())
        made.ring = made.limit > 1 and all(not s.nested and s.size > 0 for s in sides)
        made._add_stage()
        made._select(0)
        return made

    # -- building -----------------------------------------------------------------------------
    def address(self, side: HostSide, stage: int = 0) -> int:
        """Where `side`'s bytes live in `stage`."""
        base = self.stages[stage].address
        offset = self.offsets[(side.to_device, side.index)]
        return base + offset + (0 if side.to_device else self.in_total)

    def side_of(self, key: object, to_device: bool) -> HostSide:
        return next(s for s in self.sides if s.key == key and s.to_device == to_device)

    def memcpy_params(self, key: object, stage: int = 0) -> Any:
        """The CUDA_MEMCPY3D of node `key` with its host side(s) in `stage`."""
        sides = [s for s in self.sides if s.key == key]
        p = driver.CUDA_MEMCPY3D()
        for side in sides:
            if side.to_device:
                p.srcMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_HOST
                p.srcHost = self.address(side, stage)
                p.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
                p.dstDevice = driver.CUdeviceptr(side.device)
            else:
                p.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_HOST
                p.dstHost = self.address(side, stage)
                p.srcMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
                p.srcDevice = driver.CUdeviceptr(side.device)
        p.WidthInBytes = sides[0].size
        p.Height = 1
        p.Depth = 1
        return p

    def _add_stage(self) -> int:
        size = max(self.in_total + self.out_total, 1)
        address = int(call(driver.cuMemHostAlloc, size, driver.CU_MEMHOSTALLOC_PORTABLE))
        stage = _Stage(address)
        self.stages.append(stage)
        try:
            stage.event = call(driver.cuEventCreate, driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        except CudaError:
            self.stages.pop()
            call(driver.cuMemFreeHost, address)
            raise
        n = len(self.stages) - 1
        stage.params = {s.key: self.memcpy_params(s.key, n) for s in self.sides}
        stage.in_view = _view(address, self.in_total) if self.in_total else None
        if self.out_total:
            stage.out_view = _view(address + self.in_total, self.out_total)
        return n

    def _select(self, n: int) -> None:
        self.current = n
        self.in_view, self.out_view = self.stages[n].in_view, self.stages[n].out_view

    # -- launching ----------------------------------------------------------------------------
    def prepare(self, exec_: Any, ctx: Any) -> _Stage:
        """The stage this launch uses (its host nodes pointed there); waits only when every
        stage is still read or written by an earlier launch."""
        stage = self.stages[self.current]
        if not stage.launched or _done(stage.event):
            return stage
        if not self.ring:
            call(driver.cuEventSynchronize, stage.event)
            return stage
        count = len(self.stages)
        nxt = (self.current + 1) % count
        if count < self.limit and self.stages[nxt].launched and not _done(self.stages[nxt].event):
            nxt = self._add_stage()
        target = self.stages[nxt]
        if target.launched:
            call(driver.cuEventSynchronize, target.event)  # the oldest launch in flight
        for i, (key, params) in enumerate(target.params.items()):
            try:
                call(driver.cuGraphExecMemcpyNodeSetParams, exec_, self.nodes[key], params, ctx)
            except CudaError:
                if i:
                    raise
                self.ring = False  # the driver would not repoint them: wait instead
                call(driver.cuEventSynchronize, stage.event)
                return stage
        self._select(nxt)
        return target

    def fill(self, host_in: Sequence[memoryview]) -> None:
        """The launch's host-to-device bytes into the current stage (one copy each)."""
        view = self.in_view
        if view is None:
            return
        if len(host_in) == 1:
            view[:] = host_in[0]
            return
        offset = 0
        for data in host_in:
            n = len(data)
            view[offset : offset + n] = data
            offset += n

    def launched(self, stage: _Stage, stream: Any) -> None:
        call(driver.cuEventRecord, stage.event, stream)
        stage.launched = True

    def results(self, stage: _Stage) -> bytes:
        """The launch's device-to-host bytes, once it is done."""
        call(driver.cuEventSynchronize, stage.event)
        return bytes(self.out_view) if self.out_view is not None else b""

    def free(self) -> list[CudaError]:
        """Wait for the stages' launches and release them; the failures."""
        errors: list[CudaError] = []
        steps: list[tuple[Any, Any]] = []
        for stage in self.stages:
            if stage.event is not None:
                steps += [(driver.cuEventSynchronize, stage.event), (driver.cuEventDestroy, stage.event)]
            steps.append((driver.cuMemFreeHost, stage.address))
        for fn, arg in steps:
            try:
                call(fn, arg)
            except CudaError as e:
                errors.append(e)
        self.stages.clear()
        self.in_view = self.out_view = None
        return errors


def _index(side: HostSide) -> int:
    return side.index


def _done(event: Any) -> bool:
    """Whether the work before `event`'s last record is done (cuEventQuery)."""
    code = int(driver.cuEventQuery(event)[0])
    if code == CUDA_SUCCESS:
        return True
    if code == CUDA_ERROR_NOT_READY:
        return False
    raise CudaError(code, f"cuEventQuery: {error_text(code)}")
