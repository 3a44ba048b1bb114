"""`CudaSession`: the device work of one client, on real contexts of its own.

The session owns one context per device it touches (created on first use) and makes the one
for its current device current on the calling thread before every driver call. Streams,
events and modules belong to the context they were made in; libraries are context-free.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ..base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_READY,
    CUDA_SUCCESS,
    PER_THREAD_STREAM,
    BackendSession,
    ChunkBacking,
    CudaError,
    GlobalInfo,
    Launcher,
    ParamInfo,
)
from . import fast_launch, launch_replay
from ._driver import call, driver, enum_value, error_text
from .arrays import CudaArrays
from .context import DeviceContext
from .dev_resources import CudaDevResources
from .device_facts import CudaSessionFacts
from .fast_graph_launch import FastGraphLauncher, driver_table
from .fast_launch import FastLauncher
from .graph_mem_ops import CudaGraphMemOps
from .graphs import CudaGraphs
from .host_memory import HostRegistrations
from .jit import JitOptions
from .launch import ParamBuffer, ParamLayouts
from .launch_ex import CudaLaunchVariants
from .launch_replay import BatchReplays
from .link import CudaLinker
from .mipmaps import CudaMipmaps
from .queries import CudaQueries
from .sm_groups import CudaSmGroups
from .staging import PinnedStager
from .tensor_maps_wide import CudaTensorMapsWide
from .vmm import VmmBacking
from .vmm_calls import CudaVmm

if TYPE_CHECKING:
    from .backend import CudaBackend

__all__ = ["CudaSession"]

_ELF_MAGIC = b"\x7fELF"
_FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50, little-endian
log = logging.getLogger(__name__)

_LEGACY = driver.CUstream(driver.CU_STREAM_LEGACY)
_PER_THREAD = driver.CUstream(driver.CU_STREAM_PER_THREAD)
_SMALL_DTOH = 4096  # bytes a device-to-host copy lands in pageable memory directly
_launch_kernel = driver.cuLaunchKernel  # the launch hot path calls it without `call`
_MEMSET_CALLS = {1: "cuMemsetD8", 2: "cuMemsetD16", 4: "cuMemsetD32"}  # and ...Async


def _handle_key(obj: object) -> int:
    return int(obj)  # type: ignore[call-overload]


class _DeviceState:
    """A session's context on one device and what was made in it."""

    def __init__(self, dev: int, staging_limit: int) -> None:
        self.context = DeviceContext(dev)
        self.stager = PinnedStager(staging_limit)
        self.streams: dict[int, Any] = {}
        self.events: dict[int, Any] = {}
        self.modules: dict[int, Any] = {}
        self.backing: VmmBacking | None = None

    def close(self) -> list[CudaError]:
        """Destroy everything of this context and the context itself; collect failures."""
        errors: list[CudaError] = []
        self.context.make_current()
        steps: list[Callable[[], None]] = [self.stager.close]
        steps += [partial(call, driver.cuStreamDestroy, s) for s in self.streams.values()]
        steps += [partial(call, driver.cuEventDestroy, e) for e in self.events.values()]
        steps += [partial(call, driver.cuModuleUnload, m) for m in self.modules.values()]
        steps.append(self.context.destroy)
        for step in steps:
            try:
                step()
            except CudaError as exc:
                errors.append(exc)
        self.streams.clear()
        self.events.clear()
        self.modules.clear()
        return errors


class CudaSession(
    CudaArrays, CudaMipmaps, CudaDevResources, CudaSmGroups, CudaTensorMapsWide, CudaLaunchVariants,
    CudaGraphMemOps, CudaGraphs, CudaVmm, CudaLinker, CudaQueries, CudaSessionFacts, BackendSession,
):  # fmt: skip
    def __init__(self, backend: CudaBackend, staging_limit: int) -> None:
        self._backend = backend
        self._staging_limit = staging_limit
        self._dev = 0
        self._devices: dict[int, _DeviceState] = {}
        self._libraries: dict[int, Any] = {}
        self._layouts = ParamLayouts()
        self._host = HostRegistrations(self._activate)
        self._closed = False

    # -- devices and contexts -------------------------------------------------------------
    def set_device(self, dev: int) -> None:
        self._backend.device_handle(dev)  # CUDA_ERROR_INVALID_DEVICE for a bad ordinal
        if dev != self._dev:
            self.forget_repeated_batches()
        self._dev = dev

    def _state(self, dev: int | None = None) -> _DeviceState:
        """The state of `dev` (default: the current device), its context current."""
        if self._closed:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, "cuda session: used after close")
        dev = self._dev if dev is None else dev
        state = self._devices.get(dev)
        if state is None:
            state = self._devices[dev] = _DeviceState(dev, self._staging_limit)
        state.context.make_current()
        return state

    def _activate(self, dev: int) -> None:
        self._state(dev)

    def _owner(self, table: str, handle: object) -> dict[int, Any]:
        """The table (streams, events or modules) of the device state that made `handle`."""
        key = _handle_key(handle)
        for state in self._devices.values():
            objects: dict[int, Any] = getattr(state, table)
            if key in objects:
                return objects
        return {}

    def synchronize(self) -> None:
        self._state()
        call(driver.cuCtxSynchronize)

    def get_limit(self, limit: int) -> int:
        self._state()
        return int(call(driver.cuCtxGetLimit, enum_value(driver.CUlimit, limit, "cuCtxGetLimit")))

    def set_limit(self, limit: int, value: int) -> None:
        self._state()
        self.forget_repeated_batches()
        call(driver.cuCtxSetLimit, enum_value(driver.CUlimit, limit, "cuCtxSetLimit"), value)

    def stream_priority_range(self) -> tuple[int, int]:
        self._state()
        least, greatest = call(driver.cuCtxGetStreamPriorityRange)
        return int(least), int(greatest)

    # -- memory ---------------------------------------------------------------------------
    def chunk_backing(self, dev: int) -> ChunkBacking:
        self._backend.device_handle(dev)
        state = self._state(dev)
        if state.backing is None:
            state.backing = VmmBacking(
                dev,
                self._backend.reservation,
                self._backend.granularity(dev),
                activate=lambda: self._activate(dev),
            )
        self._state()  # back to the current device's context
        return state.backing

    def memcpy_htod(self, dst: int, data: memoryview, stream: object | None) -> None:
        state = self._state()
        src = memoryview(data).cast("B")
        size = len(src)
        if size == 0:
            return
        ptr = driver.CUdeviceptr(dst)
        buf = state.stager.acquire(size) if state.stager.fits(size) else None
        if buf is None:  # too large to stage (or the pool is lent out): from pageable, and wait
            if stream is None:
                call(driver.cuMemcpyHtoD, ptr, src, size)
            else:
                hstream = self._stream(stream)
                call(driver.cuMemcpyHtoDAsync, ptr, src, size, hstream)
                call(driver.cuStreamSynchronize, hstream)
            return
        buf.view(size)[:] = src
        if stream is None:
            call(driver.cuMemcpyHtoD, ptr, buf.address, size)
        else:
            hstream = self._stream(stream)
            call(driver.cuMemcpyHtoDAsync, ptr, buf.address, size, hstream)
            state.stager.mark_pending(buf, hstream)

    def memcpy_dtoh(self, src: int, size: int, stream: object | None) -> bytes | memoryview:
        state = self._state()
        if size == 0:
            return b""
        ptr = driver.CUdeviceptr(src)
        if size <= _SMALL_DTOH:  # cheaper than a staging buffer: the reply copies it anyway
            small = bytearray(size)
            self._dtoh(small, ptr, size, stream)
            return memoryview(small)
        buf = state.stager.acquire(size) if state.stager.fits(size) else None
        if buf is None:
            out = bytearray(size)
            self._dtoh(out, ptr, size, stream)
            return memoryview(out)
        self._dtoh(buf.address, ptr, size, stream)
        # The reply is written from the pinned buffer; it is not reused while the view lives.
        return state.stager.lend(buf, size)

    def _dtoh(self, host: Any, ptr: Any, size: int, stream: object | None) -> None:
        if stream is None:
            call(driver.cuMemcpyDtoH, host, ptr, size)
        else:
            hstream = self._stream(stream)
            call(driver.cuMemcpyDtoHAsync, host, ptr, size, hstream)
            call(driver.cuStreamSynchronize, hstream)

    def register_host(self, view: memoryview) -> object | None:
        """cuMemHostRegister (portable) of `view` with the current device's context."""
        self._state()
        return self._host.register(view, self._dev)

    def unregister_host(self, token: object) -> None:
        self._host.unregister(token)

    def memcpy_htod_registered(
        self, dst: int, token: object, offset: int, data: memoryview, stream: object | None
    ) -> None:
        """Straight from the registered bytes (no staging), finished before returning."""
        self._state()
        size = data.nbytes
        name = "cuMemcpyHtoD" if stream is None else "cuMemcpyHtoDAsync"
        src = self._host.address(name, token, offset, size)
        ptr = driver.CUdeviceptr(dst)
        if stream is None:  # from page-locked memory: synchronous with the host
            call(driver.cuMemcpyHtoD, ptr, src, size)
        else:
            hstream = self._stream(stream)
            call(driver.cuMemcpyHtoDAsync, ptr, src, size, hstream)
            call(driver.cuStreamSynchronize, hstream)

    def memcpy_dtoh_registered(
        self, src: int, token: object, offset: int, out: memoryview, stream: object | None
    ) -> None:
        """Straight into the registered bytes (no staging), finished before returning."""
        self._state()
        size = out.nbytes
        name = "cuMemcpyDtoH" if stream is None else "cuMemcpyDtoHAsync"
        host = self._host.address(name, token, offset, size)
        self._dtoh(host, driver.CUdeviceptr(src), size, stream)

    def memcpy_dtod(self, dst: int, src: int, size: int, stream: object | None) -> None:
        self._state()
        d, s = driver.CUdeviceptr(dst), driver.CUdeviceptr(src)
        if stream is None:
            call(driver.cuMemcpyDtoD, d, s, size)
        else:
            call(driver.cuMemcpyDtoDAsync, d, s, size, self._stream(stream))

    def memset(self, dst: int, value: int, width: int, count: int, stream: object | None) -> None:
        name = _MEMSET_CALLS.get(width)
        if name is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuMemset: element width {width} is not 1, 2 or 4"
            )
        self._state()
        ptr = driver.CUdeviceptr(dst)
        value &= (1 << (8 * width)) - 1
        if stream is None:
            call(getattr(driver, name), ptr, value, count)
        else:
            call(getattr(driver, name + "Async"), ptr, value, count, self._stream(stream))

    def mem_get_info(self) -> tuple[int, int]:
        self._state()
        free, total = call(driver.cuMemGetInfo)
        return int(free), int(total)

    # -- modules, libraries, functions ----------------------------------------------------
    def module_load(self, image: bytes, jit_options: dict[int, int]) -> object:
        state = self._state()
        options = JitOptions.from_wire(jit_options, "cuModuleLoadDataEx")
        module = self._load(driver.cuModuleLoadDataEx, _nul_terminated(image), options)
        state.modules[_handle_key(module)] = module
        return module

    def _load(self, fn: Callable[..., Any], image: bytes, options: JitOptions) -> Any:
        keys, values = options.with_error_log()

        def attempt(k: list[Any], v: list[Any]) -> Any:
            if fn is driver.cuModuleLoadDataEx:
                return fn(image, len(k), k, v)
            return fn(image, k, v, len(k), [], [], 0)

        try:
            result = attempt(keys, values)
        except TypeError:  # a cuda-python that will not take a bytearray log buffer
            options.error_log = None
            result = attempt(options.keys, options.values)
        err = result[0]
        if err != CUDA_SUCCESS:
            code = int(err)
            log = options.error_log_text()
            raise CudaError(
                code, f"{fn.__name__}: {error_text(code)}" + (f"\n{log}" if log else "")
            )
        return result[1]

    def module_unload(self, module: object) -> None:
        self._state()
        self.forget_repeated_batches()
        call(driver.cuModuleUnload, module)
        self._owner("modules", module).pop(_handle_key(module), None)
        self._forget_parameter_buffers()

    def module_get_function(self, module: object, name: str) -> object:
        self._state()
        return call(driver.cuModuleGetFunction, module, name.encode(), what=repr(name))

    def module_get_global(self, module: object, name: str) -> GlobalInfo:
        self._state()
        address, size = call(driver.cuModuleGetGlobal, module, name.encode(), what=repr(name))
        return GlobalInfo(int(address), int(size))

    def library_load(self, image: bytes, jit_options: dict[int, int]) -> object:
        self._state()
        options = JitOptions.from_wire(jit_options, "cuLibraryLoadData")
        library = self._load(driver.cuLibraryLoadData, _nul_terminated(image), options)
        self._libraries[_handle_key(library)] = library
        return library

    def library_unload(self, library: object) -> None:
        self._state()
        self.forget_repeated_batches()
        call(driver.cuLibraryUnload, library)
        self._libraries.pop(_handle_key(library), None)
        self._forget_parameter_buffers()

    def library_get_kernel(self, library: object, name: str) -> object:
        self._state()
        return call(driver.cuLibraryGetKernel, library, name.encode(), what=repr(name))

    def kernel_get_function(self, kernel: object) -> object:
        self._state()  # the function is the kernel's in the current context
        return call(driver.cuKernelGetFunction, kernel)

    def func_get_attribute(self, attrib: int, func: object) -> int:
        self._state()
        attr = enum_value(driver.CUfunction_attribute, attrib, "cuFuncGetAttribute")
        return int(call(driver.cuFuncGetAttribute, attr, func))

    def func_set_attribute(self, func: object, attrib: int, value: int) -> None:
        self._state()
        self.forget_repeated_batches()
        attr = enum_value(driver.CUfunction_attribute, attrib, "cuFuncSetAttribute")
        call(driver.cuFuncSetAttribute, func, attr, value)

    def func_set_cache_config(self, func: object, config: int) -> None:
        self._state()
        self.forget_repeated_batches()
        cfg = enum_value(driver.CUfunc_cache, config, "cuFuncSetCacheConfig")
        call(driver.cuFuncSetCacheConfig, func, cfg)

    def func_param_info(self, func: object) -> Sequence[ParamInfo]:
        self._state()
        return self._layouts.get(func)

    def launch(
        self,
        func: object,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: object | None,
        params: memoryview,
        cooperative: bool = False,
    ) -> None:
        if not cooperative:
            self.launcher()(func, *grid, *block, shared_mem, stream, params)
            return
        self._state()
        address = self._layouts.buffer(func).fill(params)
        hstream = self._stream(stream)
        call(driver.cuLaunchCooperativeKernel, func, *grid, *block, shared_mem, hstream, address)

    def fast_launcher(self, keep: object = None) -> FastLauncher | None:
        """The C loop (`fast_launch`), the context current, its tables kept under `keep`
        (`FastLauncher.keep_for`; a module or library unloaded empties them: the parameter
        buffers they point into are freed); None where it cannot be built or
        CRICKET_FAST_LAUNCH=0."""
        if not self.__dict__.get("_fast_tried"):
            self._fast_tried = True
            self._fast: FastLauncher | None = None
            made = fast_launch.load()
            if made is not None:
                ffi, lib = made
                self._fast = FastLauncher(
                    ffi, lib, fast_launch.driver_launch(ffi), error_text,
                    function=self._fast_function, stream=self._fast_stream,
                )  # fmt: skip
        fast = self._fast
        if fast is not None:
            self._state()
            fast.keep_for(keep)
        return fast

    def _batch_replays(self) -> BatchReplays | None:
        """The graphs of this session's repeated launch batches (`launch_replay`), or None
        where the C loop cannot be built, CRICKET_FAST_LAUNCH=0 or CRICKET_LAUNCH_REPLAY=0."""
        if "_replays" not in self.__dict__:
            self._replays: BatchReplays | None = None
            made = fast_launch.load() if launch_replay.enabled() else None
            if made is not None:
                ffi, lib = made
                try:
                    self._replays = BatchReplays(ffi, lib, launch_replay.driver_table(ffi))
                except (AttributeError, OSError) as exc:  # a driver without the functions
                    log.info("launch replay off: %s", exc)
        return self._replays

    def replay_batch(self, body: memoryview) -> bool:
        replays = self._batch_replays()
        if replays is None:
            return False
        self._state()
        return replays.launch(body)

    def batch_made(self, body: memoryview, fast: FastLauncher) -> None:
        replays = self._batch_replays()
        if replays is not None:
            replays.made(body, fast)

    def _forget_parameter_buffers(self) -> None:
        """Free the functions' parameter buffers, and empty the C loop's tables that point
        into them."""
        self._layouts.clear()
        fast = self.__dict__.get("_fast")
        if fast is not None:
            fast.reset()

    def forget_repeated_batches(self) -> None:
        replays = self.__dict__.get("_replays")
        if replays is not None:
            replays.clear()

    def stream_attributes_set(self, stream: object | None) -> None:
        """A stream's attributes were set: its batches are made launch by launch from now on
        (a graph's kernel node does not take its stream's attributes)."""
        replays = self._batch_replays()
        if replays is not None:
            replays.stream_attributes_set(int(self._stream(stream)))

    def fast_graph_launcher(self) -> FastGraphLauncher | None:
        """The C loop for graph launch batches (`fast_graph_launch`), its tables empty, the
        context current; None where it cannot be built or CRICKET_FAST_LAUNCH=0."""
        if not self.__dict__.get("_fast_graph_tried"):
            self._fast_graph_tried = True
            self._fast_graph: FastGraphLauncher | None = None
            made = fast_launch.load()
            if made is not None:
                ffi, lib = made
                self._fast_graph = FastGraphLauncher(
                    ffi, lib, driver_table(ffi), error_text,
                    state=self._fast_exec_state, stream=self._fast_stream,
                )  # fmt: skip
        fast = self._fast_graph
        if fast is not None:
            self._state()
            fast.reset()
        return fast

    def _fast_function(self, func: object) -> tuple[int, int, int, int]:
        """(CUfunction, kernelParams, parameter memory, its size) of `func` for the C loop."""
        buffer = self._layouts.buffer(func)
        return int(func), buffer.address, buffer.data_address, buffer.size  # type: ignore[call-overload]

    def _fast_stream(self, stream: object | None) -> int:
        """The CUstream of `stream` for the C loop."""
        return int(self._stream(stream))

    def launcher(self) -> Launcher:
        """`launch` with the context made current once and each function's parameter buffer
        looked up once, for a launch batch (see BackendSession.launcher)."""
        self._state()
        buffer_of = self._layouts.buffer
        stream_of = self._stream
        buffers: dict[int, ParamBuffer] = {}  # id(func): the functions outlive the batch

        def launch_one(
            func: object,
            gx: int,
            gy: int,
            gz: int,
            bx: int,
            by: int,
            bz: int,
            shared_mem: int,
            stream: object | None,
            params: memoryview,
        ) -> None:
            buffer = buffers.get(id(func))
            if buffer is None:
                buffer = buffers[id(func)] = buffer_of(func)
            address = buffer.fill(params)
            hstream = stream_of(stream)
            err = _launch_kernel(func, gx, gy, gz, bx, by, bz, shared_mem, hstream, address, 0)[0]
            if err != CUDA_SUCCESS:
                code = int(err)
                raise CudaError(code, f"cuLaunchKernel: {error_text(code)}")

        return launch_one

    # -- streams and events ---------------------------------------------------------------
    def _stream(self, stream: object | None) -> Any:
        if stream is None:
            return _LEGACY
        if isinstance(stream, str) and stream == PER_THREAD_STREAM:
            return _PER_THREAD
        return stream

    def stream_create(self, flags: int, priority: int) -> object:
        state = self._state()
        stream = call(driver.cuStreamCreateWithPriority, flags, priority)
        state.streams[_handle_key(stream)] = stream
        return stream

    def stream_destroy(self, stream: object) -> None:
        self._state()
        replays = self.__dict__.get("_replays")
        if replays is not None:
            replays.stream_destroyed(int(self._stream(stream)))
        call(driver.cuStreamDestroy, stream)
        self._owner("streams", stream).pop(_handle_key(stream), None)

    def stream_synchronize(self, stream: object | None) -> None:
        self._state()
        call(driver.cuStreamSynchronize, self._stream(stream))

    def stream_query(self, stream: object | None) -> bool:
        self._state()
        return _done(driver.cuStreamQuery(self._stream(stream)), "cuStreamQuery")

    def stream_wait_event(self, stream: object | None, event: object, flags: int) -> None:
        self._state()
        call(driver.cuStreamWaitEvent, self._stream(stream), event, flags)

    def event_create(self, flags: int) -> object:
        state = self._state()
        event = call(driver.cuEventCreate, flags)
        state.events[_handle_key(event)] = event
        return event

    def event_destroy(self, event: object) -> None:
        self._state()
        call(driver.cuEventDestroy, event)
        self._owner("events", event).pop(_handle_key(event), None)

    def event_record(self, event: object, stream: object | None) -> None:
        self._state()
        call(driver.cuEventRecord, event, self._stream(stream))

    def event_synchronize(self, event: object) -> None:
        self._state()
        call(driver.cuEventSynchronize, event)

    def event_query(self, event: object) -> bool:
        self._state()
        return _done(driver.cuEventQuery(event), "cuEventQuery")

    def event_elapsed_time(self, start: object, end: object) -> float:
        self._state()
        return float(call(driver.cuEventElapsedTime, start, end))

    # -- occupancy ------------------------------------------------------------------------
    def occupancy_max_active_blocks(
        self, func: object, block_size: int, dynamic_smem: int, flags: int
    ) -> int:
        self._state()
        return int(
            call(
                driver.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
                func,
                block_size,
                dynamic_smem,
                flags,
            )
        )

    def occupancy_max_potential_block_size(
        self, func: object, dynamic_smem: int, block_size_limit: int, flags: int
    ) -> tuple[int, int]:
        self._state()
        if flags:
            result = call(
                driver.cuOccupancyMaxPotentialBlockSizeWithFlags,
                func,
                None,
                dynamic_smem,
                block_size_limit,
                flags,
            )
        else:
            result = call(
                driver.cuOccupancyMaxPotentialBlockSize,
                func,
                None,
                dynamic_smem,
                block_size_limit,
            )
        min_grid, block = result
        return int(min_grid), int(block)

    # -- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        """Unregister host memory, unload libraries, then destroy each context with its
        streams, events, modules and staging buffers. Raises the first failure after trying
        everything."""
        if self._closed:
            return
        self.forget_repeated_batches()  # before the contexts go
        errors: list[CudaError] = self._host.release_all()
        errors += self.release_arrays()
        errors += self.release_mipmaps()  # after the texture objects on them
        errors += self.release_green_ctxs()
        errors += self.close_graphs()
        for library in self._libraries.values():
            try:
                call(driver.cuLibraryUnload, library)
            except CudaError as exc:
                errors.append(exc)
        self._libraries.clear()
        for state in self._devices.values():
            errors += state.close()
        self._devices.clear()
        self._layouts.clear()
        self._closed = True
        if errors:
            raise errors[0]


def _done(result: tuple[Any, ...], call_name: str) -> bool:
    err = result[0]
    if err == CUDA_SUCCESS:
        return True
    if err == CUDA_ERROR_NOT_READY:
        return False
    code = int(err)
    raise CudaError(code, f"{call_name}: {error_text(code)}")


def _nul_terminated(image: bytes) -> bytes:
    """Images are cubin, fatbin or PTX; PTX text must end with a NUL for the driver."""
    head = bytes(image[:4])
    if head in (_ELF_MAGIC, _FATBIN_MAGIC) or image[-1:] == b"\0":
        return bytes(image)
    return bytes(image) + b"\0"
