"""Virtual memory management and memory pools in a checkpoint: what `snapshot_session` adds
to a session_image (`vmm`, `pools`) and how a restore brings it back.

Reservations come back at their addresses (claimed from the arena, D4), physical allocations
under their handles with their bytes (read and written through a scratch mapping, so an
allocation mapped nowhere keeps its bytes too), mappings at their addresses with their access.
Pools are bookkeeping: their allocations are the session's allocations, restored with the
others; a pool comes back with its attributes, high-water marks and the allocations it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from checkpoint.writer import BlobSink
from cricket_server.session import Session
from cricket_server.session_mempools import SETTABLE, MemPoolRecord, PoolProps
from cricket_server.session_vmm import AllocProp
from rpc_spec import checkpoint_rpc as ck

PIECE = 64 << 20
Progress = Callable[[int], None]


def _physical_pieces(session: Session, record: Any, progress: Progress) -> Iterator[Any]:
    with session.physical_view(record) as addr, session.on_device(record.dev):
        for off in range(0, record.size, PIECE):
            n = min(PIECE, record.size - off)
            # a copy: the writer may still hold the piece after the scratch mapping is gone
            yield bytes(session.bsession.memcpy_dtoh(addr + off, n, None))
            progress(n)


def snapshot_vmm(session: Session, sink: BlobSink, prefix: str, progress: Progress) -> ck.vmm_image:
    physicals = []
    for p in session.vmm_physicals():
        blob = sink.write(f"{prefix}/physical-{p.handle:x}", _physical_pieces(session, p, progress))
        physicals.append(
            ck.vmm_physical_image(
                handle=p.handle,
                dev=p.dev,
                size=p.size,
                refs=p.refs,
                type=p.prop.type,
                location_type=p.prop.location_type,
                location_id=p.prop.location_id,
                requested_handle_types=p.prop.requested_handle_types,
                compression_type=p.prop.compression_type,
                gpu_direct_rdma_capable=p.prop.gpu_direct_rdma_capable,
                usage=p.prop.usage,
                contents=blob,
            )
        )
    return ck.vmm_image(
        reservations=[
            ck.vmm_reservation_image(base=r.base, size=r.size) for r in session.vmm_reservations()
        ],
        physicals=physicals,
        mappings=[
            ck.vmm_mapping_image(
                address=m.addr,
                size=m.size,
                offset=m.offset,
                physical=m.phys.handle,
                access=[ck.vmm_access_image(dev=d, flags=f) for d, f in sorted(m.access.items())],
            )
            for m in session.vmm_mappings()
        ],
    )


def snapshot_pools(session: Session) -> list[ck.mempool_image]:
    return [
        ck.mempool_image(
            handle=p.handle,
            dev=p.dev,
            is_default=p.default,
            current=session.pool_is_current(p),
            destroyed=p.handle not in session.handles,
            alloc_type=p.props.alloc_type,
            handle_types=p.props.handle_types,
            location_type=p.props.location_type,
            max_size=p.props.max_size,
            usage=p.props.usage,
            attributes=[ck.ckpt_attr(attribute=a, value=v) for a, v in sorted(p.attributes.items())],
            used_high=p.used_high,
            reserved_high=p.reserved_high,
            allocations=session.pool_allocations(p),
        )
        for p in session.mem_pools()
    ]


def restore_vmm(
    session: Session, image: ck.vmm_image, write: Callable[[int, int, ck.blob_ref], None]
) -> None:
    """`write(dev, addr, blob)` copies a blob to the device (the restorer's)."""
    for r in image.reservations:
        session.adopt_reservation(r.base, r.size)
    records = {}
    for ph in image.physicals:
        prop = AllocProp(
            type=ph.type,
            location_type=ph.location_type,
            location_id=ph.location_id,
            requested_handle_types=ph.requested_handle_types,
            compression_type=ph.compression_type,
            gpu_direct_rdma_capable=ph.gpu_direct_rdma_capable,
            usage=ph.usage,
        )
        record = session.adopt_physical(ph.handle, ph.dev, ph.size, ph.refs, prop)
        with session.physical_view(record) as addr:
            write(ph.dev, addr, ph.contents)
        records[ph.handle] = record
    for m in image.mappings:
        access = {a.dev: a.flags for a in m.access}
        session.adopt_mapping(m.address, m.size, m.offset, records[m.physical], access)


def restore_pools(session: Session, images: list[ck.mempool_image]) -> None:
    for p in images:
        fields: dict[str, Any] = {
            "ctx": 0,
            "dev": p.dev,
            "props": PoolProps(
                alloc_type=p.alloc_type,
                handle_types=p.handle_types,
                location_type=p.location_type,
                location_id=p.dev,
                max_size=p.max_size,
                usage=p.usage,
            ),
            "default": p.is_default,
            "attributes": {a.attribute: a.value for a in p.attributes if a.attribute in SETTABLE},
            "live": set(p.allocations),
            "used_high": p.used_high,
            "reserved_high": p.reserved_high,
        }
        if p.destroyed:
            record = MemPoolRecord(handle=p.handle, **fields)
        else:
            record = session.handles.add_with_handle(p.handle, MemPoolRecord, **fields)
        session.adopt_pool(record, p.current)
