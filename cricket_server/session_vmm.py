"""The virtual memory management calls of a session (cuMemAddressReserve, cuMemCreate,
cuMemMap, cuMemSetAccess, ...), on the server's address arena (D4).

    reservation  [ base ............................................ base + size )
    mappings       [ handle A, offset 0 ][ handle B, offset 0 ]    (granularity multiples)
    access         device 0: read/write  device 0: read/write      (none until cuMemSetAccess)

A reservation is a range taken from the process-wide `AddressArena`, so a restore claims it
again at the same address; a physical allocation (cuMemCreate) is a `memhandle` handle of the
session; a mapping puts bytes of one at an address of one of the session's reservations.
Only mapped ranges with access set are the session's to touch: copies, memsets and
cuPointerGetAttributes see each run of adjacent accessible mappings as one range. Another
session's reservation, address or handle is an unknown one. Physical memory counts towards
--max-session-memory until it is both released and unmapped.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.resources import HandleKind, Record
from cricket_server.session_core import SessionCore
from cricket_server.session_memory import Span

ALLOCATION_TYPE_PINNED = 1  # CUmemAllocationType
LOCATION_TYPE_DEVICE = 1  # CUmemLocationType
ACCESS_NONE, ACCESS_READ, ACCESS_READWRITE = 0, 1, 3  # CUmemAccess_flags
GRANULARITY_OPTIONS = (0, 1)  # CU_MEM_ALLOC_GRANULARITY_MINIMUM, _RECOMMENDED


@dataclass(frozen=True)
class AllocProp:
    """CUmemAllocationProp as the wire carries it (cricket.x mem_alloc_prop)."""

    type: int
    location_type: int
    location_id: int
    requested_handle_types: int = 0
    compression_type: int = 0
    gpu_direct_rdma_capable: int = 0
    usage: int = 0


@dataclass
class MemHandleRecord(Record):
    """A physical allocation (cuMemCreate); `refs` counts cuMemCreate/Retain minus Release."""

    obj: object
    dev: int
    size: int
    prop: AllocProp
    refs: int = 1


@dataclass
class Reservation:
    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass
class Mapping:
    addr: int
    size: int
    offset: int
    phys: MemHandleRecord
    access: dict[int, int] = field(default_factory=dict)  # device -> CUmemAccess_flags

    @property
    def end(self) -> int:
        return self.addr + self.size


class SessionVmm(SessionCore):
    """cuMemGetAllocationGranularity, cuMemAddressReserve/Free, cuMemCreate/Release,
    cuMemMap/Unmap, cuMemSetAccess/GetAccess, cuMemGetAllocationPropertiesFromHandle,
    cuMemRetainAllocationHandle."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._vmm_reservations: dict[int, Reservation] = {}
        self._vmm_mappings: list[Mapping] = []  # sorted by address
        self._vmm_held: dict[int, MemHandleRecord] = {}  # held by a handle or a mapping

    def _vmm_state(self) -> tuple[dict[int, Reservation], list[Mapping]]:
        return self._vmm_reservations, self._vmm_mappings

    # -- what the checkpoint and the memory checks read -----------------------------------
    def vmm_reservations(self) -> list[Reservation]:
        return sorted(self._vmm_state()[0].values(), key=lambda r: r.base)

    def vmm_mappings(self) -> list[Mapping]:
        return list(self._vmm_state()[1])

    def vmm_physicals(self) -> list[MemHandleRecord]:
        """Every physical allocation still held: by a handle, a mapping, or both."""
        return sorted(self._vmm_held.values(), key=lambda p: p.handle)

    def _global_spans(self) -> Iterator[Span]:
        yield from super()._global_spans()
        run: Span | None = None
        for m in self._vmm_state()[1]:
            if not m.access:
                continue
            if run is not None and run.base + run.size == m.addr and run.dev == m.phys.dev:
                run = Span(run.base, run.size + m.size, run.dev, 0, 0)
                continue
            if run is not None:
                yield run
            run = Span(m.addr, m.size, m.phys.dev, 0, 0)
        if run is not None:
            yield run

    # -- checks -----------------------------------------------------------------------------
    def _granularity(self) -> int:
        return self.manager.arena.granularity

    def _aligned(self, call: str, what: str, value: int) -> None:
        g = self._granularity()
        if value % g:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {what} {value:#x} is not a multiple of the granularity {g:#x}",
            )

    def _prop(self, call: str, prop: AllocProp) -> int:
        """Check a CUmemAllocationProp; the device it names."""
        if prop.type != ALLOCATION_TYPE_PINNED:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: allocation type {prop.type} (only CU_MEM_ALLOCATION_TYPE_PINNED, 1)",
            )
        if prop.location_type != LOCATION_TYPE_DEVICE:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: location type {prop.location_type} (only CU_MEM_LOCATION_TYPE_DEVICE, "
                "1: host memory of the server cannot be the client's)",
            )
        return self.device(call, prop.location_id)

    def _handle_record(self, call: str, handle: int) -> MemHandleRecord:
        return self.handles.get(call, HandleKind.MEMHANDLE, handle, MemHandleRecord)

    def _reservation_of(self, call: str, addr: int, size: int) -> Reservation:
        for r in self._vmm_state()[0].values():
            if r.base <= addr < r.end:
                if addr + size > r.end:
                    raise CudaError(
                        CUDA_ERROR_INVALID_VALUE,
                        f"{call}: [{addr:#x}, {addr + size:#x}) runs past the end of the "
                        f"reserved range [{r.base:#x}, {r.end:#x})",
                    )
                return r
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: {addr:#x} is not inside an address range this session reserved",
        )

    def _covering(self, call: str, addr: int, size: int) -> list[Mapping]:
        """The mappings that make up exactly [addr, addr+size), in order, with no gap."""
        if size <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: size 0 (a range must hold a byte)")
        mappings = self._vmm_state()[1]
        i = bisect.bisect_right([m.addr for m in mappings], addr) - 1
        found: list[Mapping] = []
        pos, end = addr, addr + size
        while pos < end:
            if i < 0 or i >= len(mappings) or not mappings[i].addr <= pos < mappings[i].end:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: nothing of this session is mapped at {pos:#x} "
                    f"(range [{addr:#x}, {end:#x}))",
                )
            found.append(mappings[i])
            pos = mappings[i].end
            i += 1
        return found

    # -- granularity and reservations -------------------------------------------------------
    def mem_get_allocation_granularity(self, prop: AllocProp, option: int) -> int:
        call = "cuMemGetAllocationGranularity"
        self._prop(call, prop)
        if option not in GRANULARITY_OPTIONS:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: option {option} is not 0 or 1")
        return self._granularity()

    def mem_address_reserve(self, size: int, alignment: int, addr: int, flags: int) -> int:
        call = "cuMemAddressReserve"
        self.require_init(call)
        if size <= 0 or flags:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: size {size} must be > 0 and flags 0"
            )
        self._aligned(call, "size", size)
        if alignment and alignment & (alignment - 1):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: alignment {alignment:#x} is not a power of two"
            )
        arena = self.manager.arena
        base = None
        if addr and not (alignment and addr % alignment) and addr % arena.granularity == 0:
            try:  # the address wanted is a hint, as for the driver
                arena.claim(addr, size)
                base = addr
            except CudaError:
                base = None
        if base is None:
            base = arena.take(size, alignment)
        self._vmm_state()[0][base] = Reservation(base, size)
        return base

    def mem_address_free(self, ptr: int, size: int) -> None:
        call = "cuMemAddressFree"
        self.require_init(call)
        reservations, mappings = self._vmm_state()
        r = reservations.get(ptr)
        if r is None or r.size != size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: [{ptr:#x}, {ptr + size:#x}) is not an address range this session "
                "reserved",
            )
        inside = [m for m in mappings if r.base <= m.addr < r.end]
        if inside:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {len(inside)} mapping(s) left in [{ptr:#x}, {ptr + size:#x}), the "
                f"first at {inside[0].addr:#x}: cuMemUnmap them first",
            )
        del reservations[ptr]
        self.manager.arena.give(r.base, r.size)

    # -- physical allocations ---------------------------------------------------------------
    def mem_create(self, size: int, prop: AllocProp, flags: int) -> int:
        call = "cuMemCreate"
        dev = self._prop(call, prop)
        if flags:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: flags must be 0, got {flags}")
        if prop.requested_handle_types:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: shareable handle types ({prop.requested_handle_types:#x}) cannot "
                "leave the server; ask for CU_MEM_HANDLE_TYPE_NONE",
            )
        if size <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: size must be > 0")
        self._aligned(call, "size", size)
        self.memory.check_quota(call, size)
        with self._on_device(dev):
            obj = self.bsession.vmm_create(dev, size)
        record = self.handles.add(
            HandleKind.MEMHANDLE, MemHandleRecord, ctx=0, obj=obj, dev=dev, size=size, prop=prop
        )
        self._vmm_held[record.handle] = record
        self.memory.outside_heaps += size
        return record.handle

    def mem_release(self, handle: int) -> None:
        record = self._handle_record("cuMemRelease", handle)
        record.refs -= 1
        if record.refs > 0:
            return
        self.handles.remove(handle)
        self._drop_if_unused(record)

    def _drop_if_unused(self, record: MemHandleRecord) -> None:
        """Free a physical allocation once it is neither held by a handle nor mapped."""
        if record.refs > 0 or any(m.phys is record for m in self._vmm_state()[1]):
            return
        self._vmm_held.pop(record.handle, None)
        self.memory.outside_heaps -= record.size
        with self._on_device(record.dev):
            self.bsession.vmm_release(record.obj)

    def mem_retain_allocation_handle(self, ptr: int) -> int:
        call = "cuMemRetainAllocationHandle"
        self.require_init(call)
        m = self._covering(call, ptr, 1)[0]
        record = m.phys
        if record.refs == 0:  # released while mapped: the same handle comes back
            self.handles.add_with_handle(
                record.handle,
                MemHandleRecord,
                ctx=0,
                obj=record.obj,
                dev=record.dev,
                size=record.size,
                prop=record.prop,
                refs=0,
            )
            fresh = self._handle_record(call, record.handle)
            for mapping in self._vmm_state()[1]:
                if mapping.phys is record:
                    mapping.phys = fresh
            self._vmm_held[record.handle] = fresh
            record = fresh
        record.refs += 1
        return record.handle

    def mem_get_allocation_properties(self, handle: int) -> AllocProp:
        return self._handle_record("cuMemGetAllocationPropertiesFromHandle", handle).prop

    # -- mappings ---------------------------------------------------------------------------
    def mem_map(self, ptr: int, size: int, offset: int, handle: int, flags: int) -> None:
        call = "cuMemMap"
        self.require_init(call)
        record = self._handle_record(call, handle)
        if flags:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: flags must be 0, got {flags}")
        if size <= 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: size must be > 0")
        for what, value in (("address", ptr), ("size", size), ("offset", offset)):
            self._aligned(call, what, value)
        if offset + size > record.size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: bytes [{offset:#x}, {offset + size:#x}) of handle {handle:#x}, which "
                f"has {record.size:#x}",
            )
        self._reservation_of(call, ptr, size)
        mappings = self._vmm_state()[1]
        for m in mappings:
            if m.addr < ptr + size and ptr < m.end:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: [{ptr:#x}, {ptr + size:#x}) overlaps the mapping at {m.addr:#x}",
                )
        with self._on_device(record.dev):
            self.bsession.vmm_map(ptr, size, offset, record.obj)
        bisect.insort(mappings, Mapping(ptr, size, offset, record), key=lambda m: m.addr)

    def mem_unmap(self, ptr: int, size: int) -> None:
        call = "cuMemUnmap"
        self.require_init(call)
        found = self._covering(call, ptr, size)
        if found[0].addr != ptr or found[-1].end != ptr + size:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: [{ptr:#x}, {ptr + size:#x}) cuts a mapping (mappings go whole: "
                f"[{found[0].addr:#x}, {found[-1].end:#x}))",
            )
        mappings = self._vmm_state()[1]
        for m in found:
            with self._on_device(m.phys.dev):
                self.bsession.synchronize()  # work that may use it finishes first
                self.bsession.vmm_unmap(m.addr, m.size)
            mappings.remove(m)
            self._drop_if_unused(m.phys)

    def mem_set_access(self, ptr: int, size: int, descs: Sequence[tuple[int, int, int]]) -> None:
        """`descs`: (location type, device, flags) each."""
        call = "cuMemSetAccess"
        self.require_init(call)
        if not descs:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: no access descriptor given")
        for loc_type, dev, flags in descs:
            if loc_type != LOCATION_TYPE_DEVICE:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: location type {loc_type} (only CU_MEM_LOCATION_TYPE_DEVICE, 1)",
                )
            self.device(call, dev)
            if flags not in (ACCESS_READ, ACCESS_READWRITE):
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: access flags {flags} (CU_MEM_ACCESS_FLAGS_PROT_READ, 1, or "
                    "_READWRITE, 3)",
                )
        found = self._covering(call, ptr, size)
        for _loc_type, dev, flags in descs:
            with self._on_device(dev):
                self.bsession.vmm_set_access(ptr, size, dev, flags)
            for m in found:
                m.access[dev] = flags

    def mem_get_access(self, loc_type: int, dev: int, ptr: int) -> int:
        call = "cuMemGetAccess"
        self.require_init(call)
        if loc_type != LOCATION_TYPE_DEVICE:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: location type {loc_type} (only CU_MEM_LOCATION_TYPE_DEVICE, 1)",
            )
        self.device(call, dev)
        return self._covering(call, ptr, 1)[0].access.get(dev, ACCESS_NONE)

    # -- checkpoint and restore -------------------------------------------------------------
    @contextmanager
    def physical_view(self, record: MemHandleRecord) -> Iterator[int]:
        """The bytes of a physical allocation, mapped read/write at a scratch address of the
        arena for the body (a checkpoint reads them, a restore writes them)."""
        arena = self.manager.arena
        addr = arena.take(record.size)
        try:
            with self._on_device(record.dev):
                self.bsession.vmm_map(addr, record.size, 0, record.obj)
                try:
                    self.bsession.vmm_set_access(addr, record.size, record.dev, ACCESS_READWRITE)
                    yield addr
                finally:
                    self.bsession.vmm_unmap(addr, record.size)
        finally:
            arena.give(addr, record.size)

    def adopt_reservation(self, base: int, size: int) -> None:
        """Reserve [base, base+size) again (restore): INVALID_VALUE when it is not free."""
        self.manager.arena.claim(base, size)
        self._vmm_reservations[base] = Reservation(base, size)

    def adopt_physical(
        self, handle: int, dev: int, size: int, refs: int, prop: AllocProp
    ) -> MemHandleRecord:
        """Create a physical allocation again under its handle (restore); with `refs` 0 it
        was released and lives on for its mappings only."""
        with self._on_device(dev):
            obj = self.bsession.vmm_create(dev, size)
        fields = {"ctx": 0, "obj": obj, "dev": dev, "size": size, "prop": prop, "refs": refs}
        try:
            if refs > 0:
                record = self.handles.add_with_handle(handle, MemHandleRecord, **fields)
            else:
                record = MemHandleRecord(handle=handle, **fields)  # type: ignore[arg-type]
        except BaseException:
            with self._on_device(dev):
                self.bsession.vmm_release(obj)
            raise
        self._vmm_held[handle] = record
        self.memory.outside_heaps += size
        return record

    def adopt_mapping(
        self, addr: int, size: int, offset: int, record: MemHandleRecord, access: dict[int, int]
    ) -> None:
        """Map a restored physical allocation at its old address with its old access."""
        self._reservation_of("restore", addr, size)
        with self._on_device(record.dev):
            self.bsession.vmm_map(addr, size, offset, record.obj)
        mapping = Mapping(addr, size, offset, record)
        bisect.insort(self._vmm_mappings, mapping, key=lambda m: m.addr)
        for dev, flags in access.items():
            with self._on_device(dev):
                self.bsession.vmm_set_access(addr, size, dev, flags)
            mapping.access[dev] = flags

    # -- freeing ----------------------------------------------------------------------------
    def free_vmm(self) -> tuple[int, int, int]:
        """Unmap, release and give back everything (session end): (objects, bytes, errors)."""
        reservations, mappings = self._vmm_state()
        count = len(mappings) + len(self._vmm_held) + len(reservations)
        size = sum(p.size for p in self._vmm_held.values())
        errors = 0
        for dev in sorted({m.phys.dev for m in mappings}):
            try:  # queued work that may use the mappings finishes first
                with self._on_device(dev):
                    self.bsession.synchronize()
            except Exception:
                errors += 1
        for m in list(mappings):
            try:
                with self._on_device(m.phys.dev):
                    self.bsession.vmm_unmap(m.addr, m.size)
            except Exception:
                errors += 1
        mappings.clear()
        for record in list(self._vmm_held.values()):
            try:
                with self._on_device(record.dev):
                    self.bsession.vmm_release(record.obj)
            except Exception:
                errors += 1
            self.handles.remove(record.handle)
        self._vmm_held.clear()
        self.memory.outside_heaps = 0
        for r in reservations.values():
            self.manager.arena.give(r.base, r.size)
        reservations.clear()
        return count, size, errors
