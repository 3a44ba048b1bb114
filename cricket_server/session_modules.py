"""The module calls of a session: modules, libraries, kernels, functions, launches, occupancy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError, ParamInfo
from cricket_server.limits import object_limit_error
from cricket_server.resources import (
    FunctionRecord,
    HandleKind,
    KernelRecord,
    LibraryRecord,
    ModuleRecord,
    kind_of,
)
from cricket_server.session_core import NO_CONTEXT, SessionCore

if TYPE_CHECKING:
    from cricket_server.launch_batch import Launch


class SessionModules(SessionCore):
    """cuModule*, cuLibrary*, cuKernelGetFunction, cuFunc*, cuLaunch*, cuOccupancy*."""

    def module_load(
        self, image: bytes, jit_options: dict[int, int], call: str = "cuModuleLoadData"
    ) -> int:
        ctx = self.current(call)
        self._room_for_module(call)
        obj = self.bsession.module_load(image, jit_options)
        record = self.handles.add(
            HandleKind.MODULE,
            ModuleRecord,
            ctx=ctx.handle,
            obj=obj,
            image=bytes(image),
            jit_options=dict(jit_options),
        )
        return record.handle

    def _room_for_module(self, call: str) -> None:
        """--max-modules: modules and libraries together."""
        limit = self.manager.limits.max_modules
        held = self.handles.count(HandleKind.MODULE) + self.handles.count(HandleKind.LIBRARY)
        if limit is not None and held >= limit:
            raise object_limit_error(call, "modules and libraries", limit, "--max-modules")

    def _module(self, call: str, handle: int) -> ModuleRecord:
        return self.handles.get(call, HandleKind.MODULE, handle, ModuleRecord)

    def module_unload(self, handle: int) -> None:
        call = "cuModuleUnload"
        self.require_init(call)
        record = self._module(call, handle)
        self.bsession.module_unload(record.obj)
        self._forget_module(record)

    def _forget_module(self, record: ModuleRecord) -> None:
        for fh in record.functions.values():
            self.handles.remove(fh)
        self.handles.remove(record.handle)

    def module_get_function(self, handle: int, name: str) -> int:
        call = "cuModuleGetFunction"
        self.require_init(call)
        record = self._module(call, handle)
        if name not in record.functions:
            obj = self.bsession.module_get_function(record.obj, name)
            fn = self.handles.add(
                HandleKind.FUNCTION,
                FunctionRecord,
                ctx=record.ctx,
                obj=obj,
                name=name,
                parent=record.handle,
            )
            record.functions[name] = fn.handle
        return record.functions[name]

    def module_get_global(self, handle: int, name: str) -> tuple[int, int]:
        call = "cuModuleGetGlobal"
        self.require_init(call)
        record = self._module(call, handle)
        info = self.bsession.module_get_global(record.obj, name)
        record.globals[name] = (info.address, info.size)
        return info.address, info.size

    def library_load(
        self, image: bytes, jit_options: dict[int, int], library_options: dict[int, int]
    ) -> int:
        call = "cuLibraryLoadData"
        self.require_init(call)
        ctx = self._stack[-1] if self._stack else NO_CONTEXT  # libraries are context-free
        self._room_for_module(call)
        obj = self.bsession.library_load(image, jit_options)
        record = self.handles.add(
            HandleKind.LIBRARY,
            LibraryRecord,
            ctx=ctx,
            obj=obj,
            image=bytes(image),
            jit_options=dict(jit_options),
            library_options=dict(library_options),
        )
        return record.handle

    def _library(self, call: str, handle: int) -> LibraryRecord:
        return self.handles.get(call, HandleKind.LIBRARY, handle, LibraryRecord)

    def library_unload(self, handle: int) -> None:
        call = "cuLibraryUnload"
        self.require_init(call)
        record = self._library(call, handle)
        self.bsession.library_unload(record.obj)
        self._forget_library(record)

    def _forget_library(self, record: LibraryRecord) -> None:
        for kh in record.kernels.values():
            kernel = self.handles.get("unload", HandleKind.KERNEL, kh, KernelRecord)
            if kernel.function is not None:
                self.handles.remove(kernel.function)
            self.handles.remove(kh)
        self.handles.remove(record.handle)

    def library_get_kernel(self, handle: int, name: str) -> int:
        call = "cuLibraryGetKernel"
        self.require_init(call)
        record = self._library(call, handle)
        if name not in record.kernels:
            obj = self.bsession.library_get_kernel(record.obj, name)
            kernel = self.handles.add(
                HandleKind.KERNEL, KernelRecord, ctx=record.ctx, obj=obj, library=handle, name=name
            )
            record.kernels[name] = kernel.handle
        return record.kernels[name]

    def kernel_get_function(self, handle: int) -> int:
        call = "cuKernelGetFunction"
        self.current(call)
        kernel = self.handles.get(call, HandleKind.KERNEL, handle, KernelRecord)
        if kernel.function is None:
            obj = self.bsession.kernel_get_function(kernel.obj)
            fn = self.handles.add(
                HandleKind.FUNCTION,
                FunctionRecord,
                ctx=kernel.ctx,
                obj=obj,
                name=kernel.name,
                parent=handle,
            )
            kernel.function = fn.handle
        return kernel.function

    def function(self, call: str, handle: int) -> FunctionRecord:
        """A function handle, or a library kernel handle (CUDA accepts a CUkernel as CUfunction)."""
        self.require_init(call)
        if handle in self.handles and kind_of(handle) is HandleKind.KERNEL:
            handle = self.kernel_get_function(handle)
        return self.handles.get(call, HandleKind.FUNCTION, handle, FunctionRecord)

    def func_get_attribute(self, attrib: int, handle: int) -> int:
        call = "cuFuncGetAttribute"
        return self.bsession.func_get_attribute(attrib, self.function(call, handle).obj)

    def func_set_attribute(self, handle: int, attrib: int, value: int) -> None:
        call = "cuFuncSetAttribute"
        self.bsession.func_set_attribute(self.function(call, handle).obj, attrib, value)

    def func_set_cache_config(self, handle: int, config: int) -> None:
        call = "cuFuncSetCacheConfig"
        self.bsession.func_set_cache_config(self.function(call, handle).obj, config)

    def func_param_info(self, handle: int) -> tuple[ParamInfo, ...]:
        fn = self.function("cuFuncGetParamInfo", handle)
        if fn.params is None:
            fn.params = tuple(self.bsession.func_param_info(fn.obj))
        return fn.params

    def launch(
        self,
        handle: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: int,
        params: memoryview,
        cooperative: bool = False,
    ) -> None:
        call = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
        self.current(call)
        fn_obj, need, name = self._launch_target(call, handle)
        if len(params) < need:
            raise _too_few_params(call, handle, need, len(params), name)
        obj = self._stream(call, stream)
        self.bsession.launch(fn_obj, grid, block, shared_mem, obj, params, cooperative)

    def _launch_target(self, call: str, handle: int) -> tuple[object, int, str]:
        """(backend function, bytes of parameters it takes, kernel name) of `handle`."""
        fn = self.function(call, handle)
        need = self._param_bytes.get(fn.handle)
        if need is None:
            if fn.params is None:
                fn.params = tuple(self.bsession.func_param_info(fn.obj))
            need = self._param_bytes[fn.handle] = fn.params_size()
        return fn.obj, need, fn.name

    def launch_batch(self, launches: Sequence[Launch]) -> None:
        """cuLaunchKernel for each launch, in order, each attempted as if it came alone; the
        first failure is raised afterwards, naming its place in the batch."""
        call = "cuLaunchKernel"
        count = len(launches)
        self.current_for_batch(call, count)
        body = getattr(launches, "body", None)
        if body is not None and self.bsession.replay_batch(body):
            return  # a repeat of a batch made before: every launch checked then, and made now
        fast = self.bsession.fast_launcher(self.handles.removals) if body is not None else None
        if fast is not None and body is not None:
            first = self._launch_batch_fast(fast, launches, body)
            if first is None:
                self.bsession.batch_made(body, fast)
            raise_first_failure(first, count)
            return
        targets: dict[int, tuple[object, int, str]] = {}  # handles cannot change in a batch
        streams: dict[int, object | None] = {}
        launch = self.bsession.launcher()
        first = None
        for index, (handle, gx, gy, gz, bx, by, bz, shared, stream, params) in enumerate(
            launches
        ):
            try:
                target = targets.get(handle)
                if target is None:
                    target = targets[handle] = self._launch_target(call, handle)
                fn_obj, need, name = target
                if len(params) < need:
                    raise _too_few_params(call, handle, need, len(params), name)
                if stream in streams:
                    obj = streams[stream]
                else:
                    obj = streams[stream] = self._stream(call, stream)
                launch(fn_obj, gx, gy, gz, bx, by, bz, shared, obj, params)
            except CudaError as e:
                if first is None:
                    first = (index, e)
        raise_first_failure(first, count)

    def current_for_batch(self, call: str, count: int) -> None:
        """`current(call)` for a batch of `count` launches: a failure names them all."""
        try:
            self.current(call)
        except CudaError as e:
            raise CudaError(e.code, f"{e.message} (all {count} launches of a batch)") from None

    def _launch_batch_fast(
        self, fast: Any, launches: Sequence[Launch], body: memoryview
    ) -> tuple[int, CudaError] | None:
        """`launch_batch` by the backend's C loop: each function and stream is checked here
        once (as the Python path checks every launch) and put in the loop's tables; a launch
        the loop hands back is checked, or made, here. The first failure, with its index."""
        call = "cuLaunchKernel"
        functions: set[int] = fast.function_handles
        streams: set[int] = fast.stream_handles

        def take(index: int) -> bool:
            handle, gx, gy, gz, bx, by, bz, shared, stream, params = launches[index]
            fn_obj, need, name = self._launch_target(call, handle)
            if len(params) < need:
                raise _too_few_params(call, handle, need, len(params), name)
            obj = self._stream(call, stream)
            if handle in functions and stream in streams:  # the loop would not: here
                self.bsession.launcher()(fn_obj, gx, gy, gz, bx, by, bz, shared, obj, params)
                return False
            if handle not in functions:
                fast.add_function(handle, fn_obj)
            if stream not in streams:
                fast.add_stream(stream, obj)
            return True

        return run_c_loop(fast, body, len(launches), take)

    # -- occupancy --------------------------------------------------------------------------
    def occupancy_max_active_blocks(
        self, handle: int, block_size: int, smem: int, flags: int
    ) -> int:
        call = "cuOccupancyMaxActiveBlocksPerMultiprocessor"
        self.current(call)
        fn = self.function(call, handle)
        return self.bsession.occupancy_max_active_blocks(fn.obj, block_size, smem, flags)

    def occupancy_max_potential_block_size(
        self, handle: int, smem: int, block_size_limit: int, flags: int
    ) -> tuple[int, int]:
        call = "cuOccupancyMaxPotentialBlockSize"
        self.current(call)
        fn = self.function(call, handle)
        return self.bsession.occupancy_max_potential_block_size(
            fn.obj, smem, block_size_limit, flags
        )


def run_c_loop(
    fast: Any, body: memoryview, count: int, take: Callable[[int], bool]
) -> tuple[int, CudaError] | None:
    """Make a batch's `count` launches with a backend's C loop (`fast.run(body, start)`),
    every one attempted; the first failure, with its index. `take(index)` gets each launch
    the loop hands back: True when it put what the loop lacked in its tables (the loop tries
    that launch again), False when it made the launch itself; a CudaError it raises is that
    launch's failure."""
    first: tuple[int, CudaError] | None = None
    index = 0
    while index < count:
        index, code = fast.run(body, index)
        if index >= count:
            break
        if code:  # the driver refused this launch: the next ones go on
            first = first or (index, fast.error(code))
        else:
            try:
                if take(index):
                    continue
            except CudaError as e:
                first = first or (index, e)
        index += 1
    return first


def raise_first_failure(first: tuple[int, CudaError] | None, count: int) -> None:
    """Raise a batch's first failure (its index and error), naming its place in the batch."""
    if first is not None:
        index, error = first
        raise CudaError(error.code, f"launch {index + 1} of {count} in a batch: {error.message}")


def _too_few_params(call: str, handle: int, need: int, got: int, name: str) -> CudaError:
    return CudaError(
        CUDA_ERROR_INVALID_VALUE,
        f"{call}: function {handle:#x} takes {need} bytes of parameters, got {got} "
        f"(kernel {name})",
    )
