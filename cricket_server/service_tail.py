"""The procedures of small module, context, stream and memory calls (720-779); a mixin of
`CricketService`, delegating to `SessionTail`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cricket_server.stream_mem_ops import StreamMemOp
from cricket_server.tensor_maps import TensorMapRequest
from rpc_spec import cricket_rpc as proto

if TYPE_CHECKING:
    from cricket_server.session import Session


class TailProcedures:
    """Needs `CricketService._status`/`_result`."""

    _status: Any
    _result: Any

    # -- profiling ranges -------------------------------------------------------------------
    def CU_PROFILER_START(self, ctx: Any) -> int:
        return self._status(ctx, "cuProfilerStart", lambda s: s.profiler_start())

    def CU_PROFILER_STOP(self, ctx: Any) -> int:
        return self._status(ctx, "cuProfilerStop", lambda s: s.profiler_stop())

    def CU_CTX_RESET_PERSISTING_L2_CACHE(self, ctx: Any) -> int:
        return self._status(
            ctx, "cuCtxResetPersistingL2Cache", lambda s: s.ctx_reset_persisting_l2_cache()
        )

    # -- modules, libraries, kernels, functions ---------------------------------------------
    def CU_MODULE_ENUMERATE_FUNCTIONS(self, ctx: Any, module: int) -> proto.handle_list_result:
        return self._result(
            proto.handle_list_result,
            ctx,
            "cuModuleEnumerateFunctions",
            lambda s: s.module_enumerate_functions(module),
        )

    def CU_LIBRARY_ENUMERATE_KERNELS(self, ctx: Any, library: int) -> proto.handle_list_result:
        return self._result(
            proto.handle_list_result,
            ctx,
            "cuLibraryEnumerateKernels",
            lambda s: s.library_enumerate_kernels(library),
        )

    def CU_LIBRARY_GET_GLOBAL(self, ctx: Any, library: int, name: str) -> proto.global_result:
        def found(s: Session) -> proto.global_info:
            ptr, size = s.library_get_global(library, name)
            return proto.global_info(ptr=ptr, size=size)

        return self._result(proto.global_result, ctx, "cuLibraryGetGlobal", found)

    def CU_KERNEL_GET_LIBRARY(self, ctx: Any, kernel: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuKernelGetLibrary", lambda s: s.kernel_get_library(kernel)
        )

    def CU_FUNC_GET_MODULE(self, ctx: Any, func: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuFuncGetModule", lambda s: s.func_get_module(func)
        )

    def CU_FUNC_IS_LOADED(self, ctx: Any, func: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuFuncIsLoaded", lambda s: s.func_is_loaded(func)
        )

    def CU_FUNC_LOAD(self, ctx: Any, func: int) -> int:
        return self._status(ctx, "cuFuncLoad", lambda s: s.func_load(func))

    def CU_MODULE_GET_LOADING_MODE(self, ctx: Any) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuModuleGetLoadingMode", lambda s: s.module_loading_mode()
        )

    # -- contexts, streams, devices ---------------------------------------------------------
    def CU_CTX_GET_API_VERSION(self, ctx: Any, context: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuCtxGetApiVersion", lambda s: s.ctx_get_api_version(context)
        )

    def CU_CTX_GET_DEVICE_V2(self, ctx: Any, context: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuCtxGetDevice_v2", lambda s: s.ctx_device_of(context)
        )

    def CU_CTX_SYNCHRONIZE_V2(self, ctx: Any, context: int) -> int:
        return self._status(ctx, "cuCtxSynchronize_v2", lambda s: s.ctx_synchronize_v2(context))

    def CU_CTX_GET_ID(self, ctx: Any, context: int) -> proto.u64_result:
        return self._result(proto.u64_result, ctx, "cuCtxGetId", lambda s: s.ctx_get_id(context))

    def CU_STREAM_GET_CTX(self, ctx: Any, stream: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuStreamGetCtx", lambda s: s.stream_get_ctx(stream)
        )

    def CU_STREAM_GET_ID(self, ctx: Any, stream: int) -> proto.u64_result:
        return self._result(
            proto.u64_result, ctx, "cuStreamGetId", lambda s: s.stream_get_id(stream)
        )

    def CU_STREAM_GET_DEVICE(self, ctx: Any, stream: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuStreamGetDevice", lambda s: s.stream_get_device(stream)
        )

    def CU_STREAM_COPY_ATTRIBUTES(self, ctx: Any, dst: int, src: int) -> int:
        return self._status(ctx, "cuStreamCopyAttributes", lambda s: s.stream_copy_attributes(dst, src))

    def CU_CTX_RECORD_EVENT(self, ctx: Any, context: int, event: int) -> int:
        return self._status(ctx, "cuCtxRecordEvent", lambda s: s.ctx_record_event(context, event))

    def CU_CTX_WAIT_EVENT(self, ctx: Any, context: int, event: int) -> int:
        return self._status(ctx, "cuCtxWaitEvent", lambda s: s.ctx_wait_event(context, event))

    def CU_CTX_GET_SHARED_MEM_CONFIG(self, ctx: Any) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuCtxGetSharedMemConfig", lambda s: s.ctx_get_shared_mem_config()
        )

    def CU_CTX_SET_SHARED_MEM_CONFIG(self, ctx: Any, config: int) -> int:
        return self._status(
            ctx, "cuCtxSetSharedMemConfig", lambda s: s.ctx_set_shared_mem_config(config)
        )

    def CU_FUNC_SET_SHARED_MEM_CONFIG(self, ctx: Any, func: int, config: int) -> int:
        return self._status(
            ctx, "cuFuncSetSharedMemConfig", lambda s: s.func_set_shared_mem_config(func, config)
        )

    def CU_DEVICE_GET_TEXTURE_1D_LINEAR_MAX_WIDTH(
        self, ctx: Any, fmt: int, channels: int, dev: int
    ) -> proto.u64_result:
        return self._result(
            proto.u64_result,
            ctx,
            "cuDeviceGetTexture1DLinearMaxWidth",
            lambda s: s.texture_1d_linear_max_width(fmt, channels, dev),
        )

    # -- memory -----------------------------------------------------------------------------
    def CU_MEMSET_D2D(
        self,
        ctx: Any,
        dst: int,
        pitch: int,
        value: int,
        size: int,
        width: int,
        height: int,
        stream: int,
    ) -> int:
        return self._status(
            ctx,
            f"cuMemsetD2D{8 * size}",
            lambda s: s.memset_d2d(dst, pitch, value, size, width, height, stream),
        )

    def CU_STREAM_BATCH_MEM_OP(self, ctx: Any, stream: int, ops: list[Any], flags: int) -> int:
        checked = [StreamMemOp(int(m.op), int(m.flags), int(m.address), int(m.value)) for m in ops]
        return self._status(
            ctx, "cuStreamBatchMemOp", lambda s: s.stream_mem_ops(stream, checked, flags)
        )

    def CU_TENSOR_MAP_ENCODE(self, ctx: Any, a: Any) -> proto.tensor_map_result:
        request = TensorMapRequest(
            kind=int(a.kind), data_type=int(a.data_type), rank=int(a.rank), address=int(a.address),
            global_dim=tuple(a.global_dim), global_strides=tuple(a.global_strides),
            box_dim=tuple(a.box_dim), lower_corner=tuple(a.lower_corner),
            upper_corner=tuple(a.upper_corner), channels_per_pixel=int(a.channels_per_pixel),
            pixels_per_column=int(a.pixels_per_column), element_strides=tuple(a.element_strides),
            interleave=int(a.interleave), swizzle=int(a.swizzle),
            l2_promotion=int(a.l2_promotion), oob_fill=int(a.oob_fill),
        )  # fmt: skip
        return self._result(
            proto.tensor_map_result, ctx, request.call, lambda s: s.tensor_map_encode(request)
        )

    def CU_TENSOR_MAP_REPLACE_ADDRESS(
        self, ctx: Any, tensor_map: bytes, address: int
    ) -> proto.tensor_map_result:
        return self._result(
            proto.tensor_map_result,
            ctx,
            "cuTensorMapReplaceAddress",
            lambda s: s.tensor_map_replace_address(tensor_map, address),
        )
