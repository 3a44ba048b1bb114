"""The procedures of virtual memory management and memory pools (cricket.x 450-499), served
through `CricketService._run` like every counted call (`session_vmm`, `session_mempools`)."""

from __future__ import annotations

from typing import Any

from cricket_server.session import Session
from cricket_server.session_mempools import PoolProps
from cricket_server.session_vmm import AllocProp
from rpc_spec import cricket_rpc as proto


def alloc_prop(p: Any) -> AllocProp:
    return AllocProp(
        type=p.type,
        location_type=p.location.type,
        location_id=p.location.id,
        requested_handle_types=p.requested_handle_types,
        compression_type=p.compression_type,
        gpu_direct_rdma_capable=p.gpu_direct_rdma_capable,
        usage=p.usage,
    )


def wire_prop(p: AllocProp) -> Any:
    return proto.mem_alloc_prop(
        type=p.type,
        location=proto.mem_location(type=p.location_type, id=p.location_id),
        requested_handle_types=p.requested_handle_types,
        compression_type=p.compression_type,
        gpu_direct_rdma_capable=p.gpu_direct_rdma_capable,
        usage=p.usage,
    )


class VmmPoolProcedures:
    """CU_MEM_* of VMM and CU_*MEM_POOL*; needs `CricketService._status`/`_result`."""

    _status: Any
    _result: Any

    # -- virtual memory management ----------------------------------------------------------
    def CU_MEM_GET_ALLOCATION_GRANULARITY(self, ctx: Any, prop: Any, option: int) -> Any:
        return self._result(
            proto.u64_result,
            ctx,
            "cuMemGetAllocationGranularity",
            lambda s: s.mem_get_allocation_granularity(alloc_prop(prop), option),
        )

    def CU_MEM_ADDRESS_RESERVE(
        self, ctx: Any, size: int, alignment: int, addr: int, flags: int
    ) -> Any:
        return self._result(
            proto.ptr_result,
            ctx,
            "cuMemAddressReserve",
            lambda s: s.mem_address_reserve(size, alignment, addr, flags),
        )

    def CU_MEM_ADDRESS_FREE(self, ctx: Any, ptr: int, size: int) -> int:
        return self._status(ctx, "cuMemAddressFree", lambda s: s.mem_address_free(ptr, size))

    def CU_MEM_CREATE(self, ctx: Any, size: int, prop: Any, flags: int) -> Any:
        return self._result(
            proto.handle_result,
            ctx,
            "cuMemCreate",
            lambda s: s.mem_create(size, alloc_prop(prop), flags),
        )

    def CU_MEM_RELEASE(self, ctx: Any, handle: int) -> int:
        return self._status(ctx, "cuMemRelease", lambda s: s.mem_release(handle))

    def CU_MEM_MAP(
        self, ctx: Any, ptr: int, size: int, offset: int, handle: int, flags: int
    ) -> int:
        return self._status(
            ctx, "cuMemMap", lambda s: s.mem_map(ptr, size, offset, handle, flags)
        )

    def CU_MEM_UNMAP(self, ctx: Any, ptr: int, size: int) -> int:
        return self._status(ctx, "cuMemUnmap", lambda s: s.mem_unmap(ptr, size))

    def CU_MEM_SET_ACCESS(self, ctx: Any, ptr: int, size: int, descs: Any) -> int:
        wanted = [(d.location.type, d.location.id, d.flags) for d in descs]
        return self._status(ctx, "cuMemSetAccess", lambda s: s.mem_set_access(ptr, size, wanted))

    def CU_MEM_GET_ACCESS(self, ctx: Any, location: Any, ptr: int) -> Any:
        return self._result(
            proto.int_result,
            ctx,
            "cuMemGetAccess",
            lambda s: s.mem_get_access(location.type, location.id, ptr),
        )

    def CU_MEM_GET_ALLOCATION_PROPERTIES_FROM_HANDLE(self, ctx: Any, handle: int) -> Any:
        return self._result(
            proto.mem_alloc_prop_result,
            ctx,
            "cuMemGetAllocationPropertiesFromHandle",
            lambda s: wire_prop(s.mem_get_allocation_properties(handle)),
        )

    def CU_MEM_RETAIN_ALLOCATION_HANDLE(self, ctx: Any, ptr: int) -> Any:
        return self._result(
            proto.handle_result,
            ctx,
            "cuMemRetainAllocationHandle",
            lambda s: s.mem_retain_allocation_handle(ptr),
        )

    # -- memory pools -----------------------------------------------------------------------
    def CU_DEVICE_GET_DEFAULT_MEM_POOL(self, ctx: Any, dev: int) -> Any:
        return self._result(
            proto.handle_result,
            ctx,
            "cuDeviceGetDefaultMemPool",
            lambda s: s.device_get_default_mem_pool(dev),
        )

    def CU_DEVICE_GET_MEM_POOL(self, ctx: Any, dev: int) -> Any:
        return self._result(
            proto.handle_result, ctx, "cuDeviceGetMemPool", lambda s: s.device_get_mem_pool(dev)
        )

    def CU_DEVICE_SET_MEM_POOL(self, ctx: Any, dev: int, pool: int) -> int:
        return self._status(ctx, "cuDeviceSetMemPool", lambda s: s.device_set_mem_pool(dev, pool))

    def CU_MEM_POOL_CREATE(self, ctx: Any, props: Any) -> Any:
        wanted = PoolProps(
            alloc_type=props.alloc_type,
            handle_types=props.handle_types,
            location_type=props.location.type,
            location_id=props.location.id,
            max_size=props.max_size,
            usage=props.usage,
        )
        return self._result(
            proto.handle_result, ctx, "cuMemPoolCreate", lambda s: s.mem_pool_create(wanted)
        )

    def CU_MEM_POOL_DESTROY(self, ctx: Any, pool: int) -> int:
        return self._status(ctx, "cuMemPoolDestroy", lambda s: s.mem_pool_destroy(pool))

    def CU_MEM_POOL_SET_ATTRIBUTE(self, ctx: Any, pool: int, attr: int, value: int) -> int:
        return self._status(
            ctx,
            "cuMemPoolSetAttribute",
            lambda s: s.mem_pool_set_attribute(pool, attr, value),
        )

    def CU_MEM_POOL_GET_ATTRIBUTE(self, ctx: Any, pool: int, attr: int) -> Any:
        return self._result(
            proto.u64_result,
            ctx,
            "cuMemPoolGetAttribute",
            lambda s: s.mem_pool_get_attribute(pool, attr),
        )

    def CU_MEM_POOL_TRIM_TO(self, ctx: Any, pool: int, keep: int) -> int:
        return self._status(ctx, "cuMemPoolTrimTo", lambda s: s.mem_pool_trim_to(pool, keep))

    def CU_MEM_ALLOC_FROM_POOL_ASYNC(self, ctx: Any, size: int, pool: int, stream: int) -> Any:
        def alloc(s: Session) -> int:
            return s.mem_alloc_from_pool_async(size, pool, stream)

        return self._result(proto.ptr_result, ctx, "cuMemAllocFromPoolAsync", alloc)
