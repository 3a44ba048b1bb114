"""What a restore refuses in the VMM and pool parts of a manifest (checkpoint.validate): a
mapping outside every reservation or of a physical allocation the session lacks, a physical
blob of another size, reservations overlapping allocations, a pool naming an allocation the
session lacks, handles of the wrong kind."""

from __future__ import annotations

from checkpoint.validate import manifest_problems
from rpc_spec import checkpoint_rpc as ck
from rpc_spec.handles import KIND_SHIFT, HandleKind
from tests.unit.checkpoint_refs import raw_ref

BASE = 0x600000000000
MB2 = 2 << 20
CTX = int(HandleKind.CONTEXT) << KIND_SHIFT | 1
PHYS = int(HandleKind.MEMHANDLE) << KIND_SHIFT | 2
POOL = int(HandleKind.MEMPOOL) << KIND_SHIFT | 3


def _blob(size: int, name: str) -> ck.blob_ref:
    return raw_ref(name, size)


def _body(vmm: ck.vmm_image, pools: list[ck.mempool_image]) -> ck.manifest_body:
    alloc = ck.allocation_image(ptr=BASE, size=256, dev=0, ctx=CTX, buffer_id=1,
                                contents=_blob(256, "s1/alloc"))  # fmt: skip
    session = ck.session_image(
        session_id=1, token_salt=bytes(16), token_digest=bytes(32), resume_hint=bytes(32),
        peer="p", client_name="c", initialized=True, calls=1, context_stack=[CTX],
        contexts=[ck.context_image(handle=CTX, dev=0, flags=0, primary=True, retain_count=1)],
        devices=[], modules=[], libraries=[], streams=[], events=[], allocations=[alloc],
        vmm=vmm, pools=pools, mipmaps=[], arrays=[], tex_objects=[], settings=[], graphs=[], graph_execs=[],
    )  # fmt: skip
    return ck.manifest_body(created_by="t", created_unix_ns=1, backend="sim", driver_version=1,
                            va_base=BASE, va_size=1 << 40, sessions=[session])  # fmt: skip


def _physical(handle: int = PHYS, blob_size: int = MB2) -> ck.vmm_physical_image:
    return ck.vmm_physical_image(
        handle=handle, dev=0, size=MB2, refs=1, type=1, location_type=1, location_id=0,
        requested_handle_types=0, compression_type=0, gpu_direct_rdma_capable=0, usage=0,
        contents=_blob(blob_size, "s1/physical"),
    )  # fmt: skip


def _pool(allocations: list[int]) -> ck.mempool_image:
    return ck.mempool_image(
        handle=POOL, dev=0, is_default=True, current=False, destroyed=False, alloc_type=1,
        handle_types=0, location_type=1, max_size=0, usage=0, attributes=[], used_high=0,
        reserved_high=0, allocations=allocations,
    )  # fmt: skip


def test_a_sound_vmm_image_has_no_problems() -> None:
    vmm = ck.vmm_image(
        reservations=[ck.vmm_reservation_image(base=BASE + 2 * MB2, size=2 * MB2)],
        physicals=[_physical()],
        mappings=[ck.vmm_mapping_image(address=BASE + 2 * MB2, size=MB2, offset=0,
                                       physical=PHYS, access=[])],
    )  # fmt: skip
    assert manifest_problems(_body(vmm, [_pool([BASE])])) == []


def test_vmm_and_pool_problems_are_named() -> None:
    vmm = ck.vmm_image(
        reservations=[ck.vmm_reservation_image(base=BASE, size=2 * MB2)],  # over the allocation
        physicals=[_physical(blob_size=5), _physical(handle=POOL)],
        mappings=[
            ck.vmm_mapping_image(address=BASE + 8 * MB2, size=MB2, offset=0, physical=PHYS,
                                 access=[]),
            ck.vmm_mapping_image(address=BASE, size=MB2, offset=0, physical=0x77, access=[]),
        ],
    )  # fmt: skip
    problems = "\n".join(manifest_problems(_body(vmm, [_pool([BASE + 64])])))
    assert "reservation [0x600000000000, 0x600000400000) overlaps allocation" in problems
    assert f"physical allocation {PHYS:#x} is {MB2} bytes, its blob s1/physical holds 5" in problems
    assert "lies outside every reservation of the session" in problems
    assert "names physical allocation 0x77, which is not in it" in problems
    assert f"memory pool {POOL:#x} names allocation {BASE + 64:#x}" in problems
    assert f"physical allocation handle {POOL:#x} is not a memhandle handle" in problems
