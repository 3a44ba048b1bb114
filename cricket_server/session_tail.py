"""Small calls of a session (procedures 720-779): what a module, library, kernel, function,
context or stream is made of, and the pitched memsets of 16 and 32-bit values.

Most answer from the session's records (ids, owners, devices: no backend work); listing a
module's functions or a library's kernels makes a handle for each, as cuModuleGetFunction
and cuLibraryGetKernel would, so that a checkpoint keeps them like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.resources import (
    ContextRecord,
    EventRecord,
    FunctionRecord,
    HandleKind,
    KernelRecord,
    LibraryRecord,
    ModuleRecord,
    StreamRecord,
    kind_of,
)
from cricket_server.session_core import STREAM_LEGACY, STREAM_PER_THREAD
from cricket_server.session_flags import SA_MEM_SYNC_DOMAIN, SA_SYNCHRONIZATION_POLICY
from cricket_server.session_memory import Span
from cricket_server.session_modules import SessionModules
from cricket_server.stream_mem_ops import StreamMemOp, check_op, value_size
from cricket_server.tensor_maps import TENSOR_MAP_BYTES, TensorMapRequest, tensor_extent
from rpc_spec.handles import COUNTER_MASK

__all__ = ["SessionTail", "stream_id"]

# cuStreamGetId: a created stream's id is its handle's counter times 4; a context's default
# streams take the context's counter times 4 plus 1 (legacy) or 2 (per-thread). Counters are
# never reused in a server, so ids are unique, and a restore keeps them (it keeps handles).
_LEGACY_ID, _PER_THREAD_ID = 1, 2
COPIED_STREAM_ATTRIBUTES = (SA_SYNCHRONIZATION_POLICY, SA_MEM_SYNC_DOMAIN)


def stream_id(stream: int, ctx: int) -> int:
    """cuStreamGetId of wire stream `stream` (0 legacy, 2 per-thread) in context `ctx`."""
    if stream == STREAM_LEGACY:
        return (ctx & COUNTER_MASK) << 2 | _LEGACY_ID
    if stream == STREAM_PER_THREAD:
        return (ctx & COUNTER_MASK) << 2 | _PER_THREAD_ID
    return (stream & COUNTER_MASK) << 2


class SessionTail(SessionModules):
    """cuModuleEnumerateFunctions, cuLibraryEnumerateKernels, cuLibraryGetGlobal,
    cuKernelGetLibrary, cuFuncGetModule, cuFuncIsLoaded/Load, cuModuleGetLoadingMode,
    cuCtxGetDevice_v2, cuCtxSynchronize_v2, cuCtxGetApiVersion/GetId/RecordEvent/WaitEvent/GetSharedMemConfig/SetSharedMemConfig,
    cuFuncSetSharedMemConfig, cuStreamGetCtx/GetId/GetDevice/CopyAttributes,
    cuDeviceGetTexture1DLinearMaxWidth, cuMemsetD2D8/16/32(Async), cuStreamBatchMemOp,
    cuTensorMapEncodeTiled/Im2col, cuTensorMapReplaceAddress, cuProfilerStart/Stop,
    cuCtxResetPersistingL2Cache."""

    # from the session's other mixins (SessionRuntime, SessionGraphs, SessionStreams,
    # SessionFlags)
    memset_2d: Callable[[int, int, int, int, int, int], None]
    _capture_of: Callable[[int], Any]
    _event: Callable[[str, int], EventRecord]
    stream_get_attribute: Callable[[int, int], int]
    stream_set_attribute: Callable[[int, int, int], None]
    ctx_synchronize: Callable[[], None]

    # -- modules, libraries, kernels, functions ---------------------------------------------
    def module_enumerate_functions(self, handle: int) -> list[int]:
        call = "cuModuleEnumerateFunctions"
        self.require_init(call)
        record = self.handles.get(call, HandleKind.MODULE, handle, ModuleRecord)
        names = self.bsession.module_function_names(record.obj)
        return [self.module_get_function(handle, name) for name in names]

    def library_enumerate_kernels(self, handle: int) -> list[int]:
        call = "cuLibraryEnumerateKernels"
        self.require_init(call)
        record = self.handles.get(call, HandleKind.LIBRARY, handle, LibraryRecord)
        names = self.bsession.library_kernel_names(record.obj)
        return [self.library_get_kernel(handle, name) for name in names]

    def library_get_global(self, handle: int, name: str) -> tuple[int, int]:
        """The global in the current context; kept, like a module's, so that copies to it
        pass the session's memory checks."""
        call = "cuLibraryGetGlobal"
        ctx = self.current(call)
        record = self.handles.get(call, HandleKind.LIBRARY, handle, LibraryRecord)
        info = self.bsession.library_get_global(record.obj, name)
        self._library_globals.setdefault(handle, {})[name] = (info.address, info.size, ctx.handle)
        return info.address, info.size

    def library_globals_asked(self, handle: int) -> dict[str, tuple[int, int, int]]:
        """The globals of library `handle` the client asked for: name -> (address, size,
        context)."""
        return dict(self._library_globals.get(handle, {}))

    def library_global_restored(self, handle: int, name: str, address: int, size: int, ctx: int) -> None:
        """A global of library `handle` back at `address` after a restore (copies to it pass
        the session's memory checks again)."""
        self._library_globals.setdefault(handle, {})[name] = (address, size, ctx)

    @property
    def _library_globals(self) -> dict[int, dict[str, tuple[int, int, int]]]:
        """Library handle -> global name -> (address, size, context)."""
        found = self.__dict__.get("_tail_library_globals")
        if found is None:
            found = self.__dict__["_tail_library_globals"] = {}
        return found

    def _global_spans(self) -> Iterator[Span]:
        yield from super()._global_spans()
        table = self.__dict__.get("_tail_library_globals")
        if not table:
            return
        for lib, globals_ in list(table.items()):
            if lib not in self.handles:
                del table[lib]  # unloaded
                continue
            for addr, size, ctx_handle in globals_.values():
                if ctx_handle not in self.handles:
                    continue
                ctx = self.handles.get("find", HandleKind.CONTEXT, ctx_handle, ContextRecord)
                yield Span(addr, size, ctx.dev, ctx_handle, 0)

    def kernel_get_library(self, handle: int) -> int:
        call = "cuKernelGetLibrary"
        self.require_init(call)
        return self.handles.get(call, HandleKind.KERNEL, handle, KernelRecord).library

    def func_get_module(self, handle: int) -> int:
        call = "cuFuncGetModule"
        self.require_init(call)
        fn = self.handles.get(call, HandleKind.FUNCTION, handle, FunctionRecord)
        if kind_of(fn.parent) is not HandleKind.MODULE:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: function {handle:#x} comes from library kernel {fn.parent:#x}; a "
                "library's modules are not offered remotely (use cuKernelGetLibrary)",
            )
        return fn.parent

    def func_is_loaded(self, handle: int) -> int:
        return self.bsession.func_is_loaded(self.function("cuFuncIsLoaded", handle).obj)

    def func_load(self, handle: int) -> None:
        self.bsession.func_load(self.function("cuFuncLoad", handle).obj)

    def module_loading_mode(self) -> int:
        self.require_init("cuModuleGetLoadingMode")
        return self.bsession.module_loading_mode()

    # -- contexts and streams ---------------------------------------------------------------
    def _context_or_current(self, call: str, handle: int) -> ContextRecord:
        if handle == 0:
            return self.current(call)
        self.require_init(call)
        return self._ctx(call, handle)

    def ctx_get_api_version(self, handle: int) -> int:
        ctx = self._context_or_current("cuCtxGetApiVersion", handle)
        with self._on_device(ctx.dev):
            return self.bsession.ctx_api_version()

    def ctx_device_of(self, handle: int) -> int:
        """cuCtxGetDevice_v2."""
        return self._context_or_current("cuCtxGetDevice_v2", handle).dev

    def ctx_synchronize_v2(self, handle: int) -> None:
        """The current context as cuCtxSynchronize (capture rules included); another one on
        its device."""
        call = "cuCtxSynchronize_v2"
        ctx = self._context_or_current(call, handle)
        if self._stack and self._stack[-1] == ctx.handle:
            return self.ctx_synchronize()
        with self._on_device(ctx.dev):
            self.bsession.synchronize()
        return None

    def ctx_get_id(self, handle: int) -> int:
        return self._context_or_current("cuCtxGetId", handle).handle & COUNTER_MASK

    def _stream_context(self, call: str, stream: int) -> ContextRecord:
        if stream in (STREAM_LEGACY, STREAM_PER_THREAD):
            return self.current(call)
        self.require_init(call)
        record = self.handles.get(call, HandleKind.STREAM, stream, StreamRecord)
        return self._ctx(call, record.ctx)

    def stream_get_ctx(self, stream: int) -> int:
        return self._stream_context("cuStreamGetCtx", stream).handle

    def stream_get_id(self, stream: int) -> int:
        ctx = self._stream_context("cuStreamGetId", stream)
        return stream_id(stream, ctx.handle)

    def stream_get_device(self, stream: int) -> int:
        return self._stream_context("cuStreamGetDevice", stream).dev

    def stream_copy_attributes(self, dst: int, src: int) -> None:
        """The attributes a stream can be given here (synchronization policy, memory sync
        domain); a priority is the stream's from its creation."""
        call = "cuStreamCopyAttributes"
        if self._stream_context(call, dst).handle != self._stream_context(call, src).handle:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: streams {dst:#x} and {src:#x} are of two contexts"
            )
        for attr in COPIED_STREAM_ATTRIBUTES:
            self.stream_set_attribute(dst, attr, self.stream_get_attribute(src, attr))

    def ctx_record_event(self, handle: int, event: int) -> None:
        call = "cuCtxRecordEvent"
        ctx = self._context_or_current(call, handle)
        record = self._event(call, event)
        with self._on_device(ctx.dev):
            self.bsession.ctx_record_event(record.obj)

    def ctx_wait_event(self, handle: int, event: int) -> None:
        call = "cuCtxWaitEvent"
        ctx = self._context_or_current(call, handle)
        record = self._event(call, event)
        with self._on_device(ctx.dev):
            self.bsession.ctx_wait_event(record.obj)

    def profiler_start(self) -> None:
        self.current("cuProfilerStart")
        self.bsession.profiler_start()

    def profiler_stop(self) -> None:
        self.current("cuProfilerStop")
        self.bsession.profiler_stop()

    def ctx_reset_persisting_l2_cache(self) -> None:
        self.current("cuCtxResetPersistingL2Cache")
        self.bsession.ctx_reset_persisting_l2_cache()

    def ctx_get_shared_mem_config(self) -> int:
        self.current("cuCtxGetSharedMemConfig")
        return self.bsession.ctx_get_shared_mem_config()

    def ctx_set_shared_mem_config(self, config: int) -> None:
        self.current("cuCtxSetSharedMemConfig")
        self.bsession.ctx_set_shared_mem_config(config)

    def func_set_shared_mem_config(self, handle: int, config: int) -> None:
        call = "cuFuncSetSharedMemConfig"
        self.bsession.func_set_shared_mem_config(self.function(call, handle).obj, config)

    def texture_1d_linear_max_width(self, fmt: int, channels: int, dev: int) -> int:
        call = "cuDeviceGetTexture1DLinearMaxWidth"
        self.device(call, dev)
        return self.backend.texture_1d_linear_max_width(fmt, channels, dev)

    # -- memory -----------------------------------------------------------------------------
    def memset_d2d(
        self, dst: int, pitch: int, value: int, size: int, width: int, height: int, stream: int
    ) -> None:
        """`height` rows of `width` elements of `size` bytes, `pitch` bytes apart."""
        call = f"cuMemsetD2D{8 * size}"
        if size not in (1, 2, 4):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: element size must be 1, 2 or 4, got {size}"
            )
        self.current(call)
        if size == 1:
            return self.memset_2d(dst, pitch, value, width, height, stream)
        if self._capture_of(stream) is not None:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}Async: a stream capture takes pitched memsets of bytes only "
                "(use cuGraphAddMemsetNode for wider elements)",
            )
        obj = self._stream(call, stream)
        row = width * size
        if row > pitch and height > 1:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: width {row} bytes is larger than pitch {pitch}"
            )
        if not (width and height):
            return None
        self.memory.span(call, dst, pitch * (height - 1) + row)
        mask = (1 << (8 * size)) - 1
        for r in range(height):
            self.bsession.memset(dst + r * pitch, value & mask, size, width, obj)
        return None

    def stream_mem_ops(self, stream: int, ops: Sequence[StreamMemOp], flags: int) -> None:
        """cuStreamBatchMemOp: every operation checked (its address in the session's
        memory) before any runs."""
        call = "cuStreamBatchMemOp"
        self.current(call)
        if flags:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: flags must be 0, got {flags}")
        if self._capture_of(stream) is not None:
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: stream memory operations in a stream capture (batch memory operation "
                "nodes) are not supported remotely",
            )
        obj = self._stream(call, stream)
        for m in ops:
            check_op(call, m)
            size = value_size(m.op)
            if size:
                self.memory.span(call, m.address, size)
        self.bsession.stream_mem_ops(obj, ops)

    # -- tensor maps ------------------------------------------------------------------------
    def tensor_map_encode(self, request: TensorMapRequest) -> bytes:
        """The whole tensor must lie in the session's memory; the driver checks the rest."""
        call = request.call
        self.current(call)
        self.memory.span(call, request.address, tensor_extent(request))
        return self.bsession.tensor_map_encode(request)

    def tensor_map_replace_address(self, tensor_map: bytes, address: int) -> bytes:
        call = "cuTensorMapReplaceAddress"
        self.current(call)
        if len(tensor_map) != TENSOR_MAP_BYTES:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: a tensor map is {TENSOR_MAP_BYTES} bytes")
        self.memory.span(call, address, 1)
        return self.bsession.tensor_map_replace_address(bytes(tensor_map), address)
