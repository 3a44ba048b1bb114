"""The `sim` backend (D7): a software CUDA device for machines without a GPU.

Device memory is host RAM at GPU-like addresses (`devmem`), streams and events keep CUDA's
ordering (`streams`), modules are read from real cubins, fatbins and PTX (`cubin`), and
kernels run from host implementations registered by name (`kernels`). What it cannot do
answers CUDA_ERROR_NOT_SUPPORTED naming the call.

Address space: client allocations come from `address_space()` (the session layer builds its
`AddressArena` over it); module globals come from a separate range of the backend's own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cricket_server import stream_mem_ops as smo
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_READY,
    PER_THREAD_STREAM,
    Backend,
    BackendSession,
    ChunkBacking,
    CudaError,
    GlobalInfo,
    ParamInfo,
)
from cricket_server.backends.sim import device as dv
from cricket_server.backends.sim import texture_kernels  # noqa: F401  (registers its kernels)
from cricket_server.backends.sim.arrays import SimArrays
from cricket_server.backends.sim.cubin import KernelInfo, ModuleImage, parse_image
from cricket_server.backends.sim.dev_resources import SimDevResources
from cricket_server.backends.sim.device_facts import SimDeviceFacts, SimSessionFacts
from cricket_server.backends.sim.devmem import GRANULARITY, KernelMemory, SimChunkBacking, SimMemory
from cricket_server.backends.sim.graph_mem_ops import SimGraphMemOps
from cricket_server.backends.sim.graphs import ReplayGraphs
from cricket_server.backends.sim.kernels import (
    CUDA_ERROR_LAUNCH_TIMEOUT,
    WAIT_LIMIT_S,
    Launch,
    host_kernel_and_args,
)
from cricket_server.backends.sim.launch_ex import SimLaunchVariants
from cricket_server.backends.sim.link import SimLinker
from cricket_server.backends.sim.mipmaps import SimMipmaps
from cricket_server.backends.sim.sm_groups import SimSmGroups
from cricket_server.backends.sim.streams import (
    CU_EVENT_DISABLE_TIMING,
    CU_EVENT_INTERPROCESS,
    CU_STREAM_NON_BLOCKING,
    Context,
    SimEvent,
    SimStream,
)
from cricket_server.backends.sim.vmm import SimVmm
from cricket_server.memory import AddressArena, DeviceHeap

CLIENT_VA_BASE = 0x600000000000  # the cuda backend's default reservation base
CLIENT_VA_SIZE = 0xF000000000  # 960 GiB for client allocations
MODULE_VA_BASE = CLIENT_VA_BASE + CLIENT_VA_SIZE
MODULE_VA_SIZE = 0x1000000000  # 64 GiB for module globals
DRIVER_VERSION = 13000
RUNTIME_VERSION = 13000
CUDA_ERROR_UNSUPPORTED_LIMIT = 215
CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720
STREAM_PRIORITY_RANGE = (0, -5)  # (least, greatest)

# CUlimit -> default; the first seven can be set
_LIMIT_DEFAULTS = {
    0: 1024,
    1: 1 << 20,
    2: 8 << 20,
    3: 2,
    4: 2048,
    5: 64,
    6: 0,
    7: 0,
    8: 0,
    9: 0,
    10: 0,
}
_SETTABLE_LIMITS = range(7)
# As the driver answers on an H200 (sm_90): the device runtime's sync depth is no limit there.
_UNSUPPORTED_LIMITS = frozenset({3})
_MAX_L2_FETCH_GRANULARITY = 128  # bytes

# CUfunction_attribute numbers
FA_MAX_THREADS_PER_BLOCK = 0
FA_SHARED_SIZE_BYTES = 1
FA_CONST_SIZE_BYTES = 2
FA_LOCAL_SIZE_BYTES = 3
FA_NUM_REGS = 4
FA_PTX_VERSION = 5
FA_BINARY_VERSION = 6
FA_CACHE_MODE_CA = 7
FA_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
FA_PREFERRED_SHARED_MEMORY_CARVEOUT = 9
_SETTABLE_FUNC_ATTRS = range(8, 16)
_LAST_FUNC_ATTR = 17


class SimBackend(SimDeviceFacts, Backend):
    name = "sim"

    def __init__(self, device_count: int = 1, total_mem: int = dv.DEFAULT_TOTAL_MEM) -> None:
        self.devices = [dv.SimDevice(i, total_mem) for i in range(device_count)]
        self.module_arena = AddressArena(MODULE_VA_BASE, MODULE_VA_SIZE, GRANULARITY)

    # -- what the session layer needs for its AddressArena ----------------------------------
    def address_space(self) -> tuple[int, int, int]:
        """(base, size, granularity) for client allocations: `AddressArena(*address_space())`."""
        return CLIENT_VA_BASE, CLIENT_VA_SIZE, GRANULARITY

    def granularity(self, dev: int) -> int:
        self.device(dev)
        return GRANULARITY

    def device(self, dev: int) -> dv.SimDevice:
        if not 0 <= dev < len(self.devices):
            raise CudaError(
                CUDA_ERROR_INVALID_DEVICE,
                f"sim: no device {dev} (there are {len(self.devices)})",
            )
        return self.devices[dev]

    # -- Backend ----------------------------------------------------------------------------
    def driver_version(self) -> int:
        return DRIVER_VERSION

    def runtime_version(self) -> int:
        return RUNTIME_VERSION

    def device_count(self) -> int:
        return len(self.devices)

    def device_name(self, dev: int) -> str:
        return self.device(dev).name

    def device_attribute(self, attrib: int, dev: int) -> int:
        return self.device(dev).attribute(attrib)

    def device_total_mem(self, dev: int) -> int:
        return self.device(dev).total_mem

    def device_uuid(self, dev: int) -> bytes:
        return self.device(dev).uuid

    def device_pci_bus_id(self, dev: int) -> str:
        return self.device(dev).pci_bus_id

    def open_session(self) -> SimSession:
        return SimSession(self)

    def can_access_peer(self, dev: int, peer: int) -> bool:
        """Every sim device reaches every other (one host memory)."""
        self.device(dev)
        self.device(peer)
        return dev != peer

    def p2p_attribute(self, attrib: int, src: int, dst: int) -> int:
        """Performance rank 0; access, native atomics and array access supported."""
        self.device(src)
        self.device(dst)
        if not 1 <= attrib <= 5:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuDeviceGetP2PAttribute: unknown attribute {attrib}"
            )
        return {1: 0, 2: 1, 3: 1, 4: 1, 5: 0}[attrib]


# -- session objects ------------------------------------------------------------------------
@dataclass(eq=False)
class SimModule:
    image: ModuleImage
    dev: int
    globals: dict[str, int]  # name -> address
    functions: dict[str, SimFunction] = field(default_factory=dict)
    loaded: bool = True


def _global(mod: SimModule, name: str, call: str, what: str) -> GlobalInfo:
    """Address and size of global `name` of a module (or a library's, `what`)."""
    if name not in mod.globals:
        have = ", ".join(sorted(mod.globals)) or "none"
        raise CudaError(
            CUDA_ERROR_NOT_FOUND, f"{call}: no global {name!r} in the {what} (globals: {have})"
        )
    return GlobalInfo(mod.globals[name], mod.image.globals[name].size)


@dataclass(eq=False)
class SimFunction:
    module: SimModule
    info: KernelInfo
    attrs: dict[int, int] = field(default_factory=dict)
    cache_config: int = 0


@dataclass(eq=False)
class SimLibrary:
    module: SimModule


@dataclass(eq=False)
class SimKernel:
    function: SimFunction


@dataclass(eq=False)
class _DeviceState:
    context: Context
    legacy: SimStream
    limits: dict[int, int]
    per_thread: SimStream | None = None
    module_heap: DeviceHeap | None = None


class SimSession(
    SimArrays, SimMipmaps, SimDevResources, SimSmGroups, SimLaunchVariants, SimGraphMemOps,
    ReplayGraphs, SimVmm, SimLinker, SimSessionFacts, BackendSession,
):  # fmt: skip
    """The device work of one client on the sim backend."""

    def __init__(self, backend: SimBackend) -> None:
        self.backend = backend
        self.memory = SimMemory()
        self._dev = 0
        self._states: dict[int, _DeviceState] = {}
        self._backings: dict[int, SimChunkBacking] = {}
        self._modules: list[SimModule] = []
        self._streams: set[SimStream] = set()
        self._closed = False

    # -- helpers -------------------------------------------------------------------------------
    def _state(self, dev: int | None = None) -> _DeviceState:
        dev = self._dev if dev is None else dev
        state = self._states.get(dev)
        if state is None:
            self.backend.device(dev)
            context = Context(f"{id(self):x}-dev{dev}")
            legacy = SimStream(context, 0, 0, legacy=True)
            state = self._states[dev] = _DeviceState(context, legacy, dict(_LIMIT_DEFAULTS))
        return state

    def _stream(self, stream: object | None, call: str) -> SimStream:
        if stream is None:
            return self._state().legacy
        if stream == PER_THREAD_STREAM:
            state = self._state()
            if state.per_thread is None:
                state.per_thread = SimStream(state.context, 0, 0)
            return state.per_thread
        if isinstance(stream, SimStream) and stream in self._streams:
            return stream
        raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {stream!r} is not a live stream")

    def _function(self, func: object, call: str) -> SimFunction:
        if isinstance(func, SimFunction) and func.module.loaded:
            return func
        raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {func!r} is not a loaded function")

    def _event(self, event: object, call: str) -> SimEvent:
        if isinstance(event, SimEvent):
            return event
        raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {event!r} is not an event")

    def _drain(self) -> None:
        """Wait for all queued work of every device, errors or not."""
        for state in self._states.values():
            for stream in state.context.live():
                stream.wait()

    # -- devices and contexts -----------------------------------------------------------------
    def set_device(self, dev: int) -> None:
        self._state(dev)
        self._dev = dev

    def synchronize(self) -> None:
        state = self._state()
        for stream in state.context.live():
            stream.wait()
        state.context.check()

    def get_limit(self, limit: int) -> int:
        self._check_limit("cuCtxGetLimit", limit)
        return self._state().limits[limit]

    def set_limit(self, limit: int, value: int) -> None:
        call = "cuCtxSetLimit"
        self._check_limit(call, limit)
        if limit not in _SETTABLE_LIMITS:
            raise CudaError(CUDA_ERROR_UNSUPPORTED_LIMIT, f"{call}: limit {limit} cannot be set")
        if value < 0:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: value {value} < 0")
        most = self._limit_bound(limit)
        if most is not None and value > most:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: limit {limit} is at most {most}, not {value}"
            )
        self._state().limits[limit] = value

    @staticmethod
    def _check_limit(call: str, limit: int) -> None:
        if limit not in _LIMIT_DEFAULTS:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: unknown limit {limit}")
        if limit in _UNSUPPORTED_LIMITS:
            raise CudaError(
                CUDA_ERROR_UNSUPPORTED_LIMIT, f"{call}: limit {limit} is not supported on sm_90"
            )

    def _limit_bound(self, limit: int) -> int | None:
        """The largest value a limit takes: a stack for every thread the device can hold must
        fit its memory; the L2 fetch granularity is at most 128 bytes; the persisting L2 cache
        at most the device's MAX_PERSISTING_L2_CACHE_SIZE."""
        if limit == 0:
            return self.backend.device(self._dev).total_mem // (dv.SM_COUNT * dv.MAX_THREADS_PER_SM)
        if limit == 5:
            return _MAX_L2_FETCH_GRANULARITY
        if limit == 6:
            return dv.MAX_PERSISTING_L2
        return None

    def stream_priority_range(self) -> tuple[int, int]:
        return STREAM_PRIORITY_RANGE

    # -- memory -------------------------------------------------------------------------------
    def _sim_device(self, dev: int) -> dv.SimDevice:
        return self.backend.device(dev)

    def _client_range(self) -> tuple[int, int]:
        base, size, _gran = self.backend.address_space()
        return base, size

    def chunk_backing(self, dev: int) -> ChunkBacking:
        backing = self._backings.get(dev)
        if backing is None:
            backing = SimChunkBacking(self.memory, self.backend.device(dev), self._drain)
            self._backings[dev] = backing
        return backing

    def memcpy_htod(self, dst: int, data: memoryview, stream: object | None) -> None:
        call = "cuMemcpyHtoD"
        target = self._stream(stream, call)
        target.context.check()
        size = memoryview(data).nbytes
        self.memory.check(dst, size, f"{call}: destination")
        if stream is None:  # straight from the caller's bytes: done before returning
            target.run(lambda: self.memory.write(dst, data, what=call))
            target.context.check()
        else:  # async copies outlive the caller's buffer
            payload = bytes(data)
            target.submit(lambda: self.memory.write(dst, payload, what=call))

    def memcpy_dtoh(self, src: int, size: int, stream: object | None) -> bytes | memoryview:
        call = "cuMemcpyDtoH"
        target = self._stream(stream, call)
        target.context.check()
        self.memory.check(src, size, f"{call}: source")
        out: list[np.ndarray] = []
        target.run(lambda: out.append(self.memory.span(src, size, what=call)))
        target.context.check()
        # A view of device memory, no copy: the reply is sent before this connection's next
        # call runs, and the view keeps the memory alive even if another thread frees it.
        return out[0].data.toreadonly() if size else b""

    def memcpy_dtod(self, dst: int, src: int, size: int, stream: object | None) -> None:
        call = "cuMemcpyDtoD"
        target = self._stream(stream, call)
        target.context.check()
        self.memory.check(src, size, f"{call}: source")
        self.memory.check(dst, size, f"{call}: destination")
        if size:
            target.submit(
                lambda: self.memory.write(dst, self.memory.read(src, size, what=call), what=call)
            )

    def memset(self, dst: int, value: int, width: int, count: int, stream: object | None) -> None:
        call = f"cuMemsetD{8 * width}"
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}.get(width)
        if dtype is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuMemset: element width {width} is not 1, 2 or 4"
            )
        if dst % width:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {dst:#x} is not {width}-byte aligned"
            )
        target = self._stream(stream, call)
        target.context.check()
        self.memory.check(dst, width * count, call)
        element = dtype(value & ((1 << (8 * width)) - 1))

        def fill() -> None:
            view = self.memory.span(dst, width * count, what=call)
            if view.flags.writeable:
                view.view(dtype)[:] = element
            else:
                self.memory.write(dst, np.full(count, element, dtype=dtype), what=call)

        if count:
            target.submit(fill)

    def stream_mem_ops(self, stream: object | None, ops: Sequence[Any]) -> None:
        """In stream order: a write stores its value, a wait polls its address until the
        condition holds (giving up as a spinning kernel does), barriers and flushes have
        nothing to order (one coherent memory)."""
        call = "cuStreamBatchMemOp"
        target = self._stream(stream, call)
        target.context.check()
        for m in ops:
            size = smo.value_size(m.op)
            if size:
                self.memory.check(m.address, size, call)
        cancelled = target.context.cancelled

        def run() -> None:
            for m in ops:
                size = smo.value_size(m.op)
                dtype = np.uint32 if size == 4 else np.uint64
                if m.op in (smo.WRITE_32, smo.WRITE_64):
                    self.memory.write(m.address, np.array([m.value], dtype=dtype), what=call)
                elif m.op in (smo.WAIT_32, smo.WAIT_64):
                    deadline = time.monotonic() + WAIT_LIMIT_S
                    while not smo.wait_satisfied(
                        m.flags, size, int(np.frombuffer(self.memory.read(m.address, size, what=call), dtype)[0]), m.value
                    ):
                        if cancelled.wait(0.0005):
                            return
                        if time.monotonic() > deadline:
                            raise CudaError(
                                CUDA_ERROR_LAUNCH_TIMEOUT,
                                f"{call}: the value at {m.address:#x} did not meet the wait in {WAIT_LIMIT_S:.0f} s",
                            )

        if ops:
            target.submit(run)

    def mem_get_info(self) -> tuple[int, int]:
        device = self.backend.device(self._dev)
        return device.free_mem(), device.total_mem

    # -- modules, libraries, functions ------------------------------------------------------
    def module_load(self, image: bytes, jit_options: dict[int, int]) -> object:
        parsed = parse_image(image, dv.ARCH)
        state = self._state()
        if state.module_heap is None:
            state.module_heap = DeviceHeap(self.backend.module_arena, self.chunk_backing(self._dev))
        heap = state.module_heap
        addresses: dict[str, int] = {}
        try:
            for var in parsed.globals.values():
                addr = heap.alloc(max(var.size, 1))
                addresses[var.name] = addr
                if var.size:
                    self.memory.write(addr, var.init)
        except BaseException:
            for addr in addresses.values():
                heap.free(addr)
            raise
        module = SimModule(parsed, self._dev, addresses)
        for name, info in parsed.kernels.items():
            module.functions[name] = SimFunction(module, info)
        self._modules.append(module)
        return module

    def _module(self, module: object, call: str) -> SimModule:
        if isinstance(module, SimModule) and module.loaded:
            return module
        raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {module!r} is not a loaded module")

    def module_unload(self, module: object) -> None:
        mod = self._module(module, "cuModuleUnload")
        heap = self._state(mod.dev).module_heap
        mod.loaded = False
        self._modules.remove(mod)
        if heap is not None:
            for addr in mod.globals.values():
                heap.free(addr)

    def module_get_function(self, module: object, name: str) -> object:
        mod = self._module(module, "cuModuleGetFunction")
        func = mod.functions.get(name)
        if func is None:
            have = ", ".join(sorted(mod.functions)) or "none"
            raise CudaError(
                CUDA_ERROR_NOT_FOUND,
                f"cuModuleGetFunction: no kernel {name!r} in the module (kernels: {have})",
            )
        return func

    def module_get_global(self, module: object, name: str) -> GlobalInfo:
        return _global(self._module(module, "cuModuleGetGlobal"), name, "cuModuleGetGlobal", "module")

    def library_load(self, image: bytes, jit_options: dict[int, int]) -> object:
        module = self.module_load(image, jit_options)
        assert isinstance(module, SimModule)
        return SimLibrary(module)

    def library_unload(self, library: object) -> None:
        if not isinstance(library, SimLibrary):
            raise CudaError(
                CUDA_ERROR_INVALID_HANDLE, f"cuLibraryUnload: {library!r} is not a library"
            )
        self.module_unload(library.module)

    def library_get_kernel(self, library: object, name: str) -> object:
        if not isinstance(library, SimLibrary):
            raise CudaError(
                CUDA_ERROR_INVALID_HANDLE, f"cuLibraryGetKernel: {library!r} is not a library"
            )
        func = self.module_get_function(library.module, name)
        assert isinstance(func, SimFunction)
        return SimKernel(func)

    def kernel_get_function(self, kernel: object) -> object:
        if not isinstance(kernel, SimKernel):
            raise CudaError(
                CUDA_ERROR_INVALID_HANDLE, f"cuKernelGetFunction: {kernel!r} is not a kernel"
            )
        return self._function(kernel.function, "cuKernelGetFunction")

    def module_function_names(self, module: object) -> list[str]:
        """In the image's order (the order its kernels were parsed)."""
        return list(self._module(module, "cuModuleEnumerateFunctions").functions)

    def library_kernel_names(self, library: object) -> list[str]:
        return list(self._library(library, "cuLibraryEnumerateKernels").module.functions)

    def library_get_global(self, library: object, name: str) -> GlobalInfo:
        mod = self._library(library, "cuLibraryGetGlobal").module
        return _global(mod, name, "cuLibraryGetGlobal", "library")

    def _library(self, library: object, call: str) -> SimLibrary:
        if isinstance(library, SimLibrary) and library.module.loaded:
            return library
        raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: {library!r} is not a loaded library")

    def func_get_attribute(self, attrib: int, func: object) -> int:
        fn = self._function(func, "cuFuncGetAttribute")
        info = fn.info
        if attrib == FA_MAX_THREADS_PER_BLOCK:
            return self._max_threads(info)
        if attrib == FA_SHARED_SIZE_BYTES:
            return info.shared_bytes
        if attrib == FA_CONST_SIZE_BYTES:
            return 0
        if attrib == FA_LOCAL_SIZE_BYTES:
            return info.local_bytes
        if attrib == FA_NUM_REGS:
            return info.num_regs if info.num_regs is not None else dv.ASSUMED_REGS
        if attrib in (FA_PTX_VERSION, FA_BINARY_VERSION):
            return fn.module.image.arch
        if attrib == FA_CACHE_MODE_CA:
            return 0
        if attrib == FA_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            return fn.attrs.get(attrib, dv.SHARED_PER_BLOCK - info.shared_bytes)
        if attrib == FA_PREFERRED_SHARED_MEMORY_CARVEOUT:
            return fn.attrs.get(attrib, -1)
        if 0 <= attrib <= _LAST_FUNC_ATTR:
            return fn.attrs.get(attrib, 0)
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"cuFuncGetAttribute: unknown attribute {attrib}")

    def func_set_attribute(self, func: object, attrib: int, value: int) -> None:
        fn = self._function(func, "cuFuncSetAttribute")
        if attrib not in _SETTABLE_FUNC_ATTRS:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuFuncSetAttribute: attribute {attrib} cannot be set"
            )
        if attrib == FA_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            most = dv.SHARED_PER_BLOCK_OPTIN - fn.info.shared_bytes
            if not 0 <= value <= most:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"cuFuncSetAttribute: dynamic shared memory {value} is above {most} bytes",
                )
        if attrib == FA_PREFERRED_SHARED_MEMORY_CARVEOUT and not -1 <= value <= 100:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuFuncSetAttribute: carveout {value} is not -1..100"
            )
        fn.attrs[attrib] = value

    def func_set_cache_config(self, func: object, config: int) -> None:
        fn = self._function(func, "cuFuncSetCacheConfig")
        if not 0 <= config <= 3:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuFuncSetCacheConfig: config {config} is not 0..3"
            )
        fn.cache_config = config

    def func_param_info(self, func: object) -> Sequence[ParamInfo]:
        return self._function(func, "cuFuncGetParamInfo").info.params

    def _max_threads(self, info: KernelInfo) -> int:
        regs = info.num_regs or dv.ASSUMED_REGS
        by_regs = dv.REGS_PER_SM // (-(-regs * dv.WARP // 256) * 256) * dv.WARP
        return min(dv.MAX_THREADS_PER_BLOCK, info.max_threads or dv.MAX_THREADS_PER_BLOCK, by_regs)

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
        call = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
        fn = self._function(func, call)
        name = fn.info.name
        target = self._stream(stream, call)
        target.context.check()
        self._check_launch(fn, grid, block, shared_mem, call)
        host, args = host_kernel_and_args(name, fn.info.params, bytes(params), call)
        spec = Launch(
            (grid[0], grid[1], grid[2]),
            (block[0], block[1], block[2]),
            shared_mem,
            dict(fn.module.globals),
            target.context.cancelled,
        )
        accessor = KernelMemory(self.memory, name)
        target.submit(lambda: host(spec, args, accessor))

    def _check_launch(
        self,
        fn: SimFunction,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        call: str,
    ) -> None:
        name = fn.info.name
        if len(grid) != 3 or len(block) != 3 or min(*grid, *block) <= 0:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: kernel {name!r}: grid {grid} / block {block} has a zero",
            )
        for dims, most, what in (
            (grid, dv.MAX_GRID_DIM, "grid"),
            (block, dv.MAX_BLOCK_DIM, "block"),
        ):
            if any(d > m for d, m in zip(dims, most, strict=True)):
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE,
                    f"{call}: kernel {name!r}: {what} {dims} exceeds {most}",
                )
        threads = block[0] * block[1] * block[2]
        if threads > self._max_threads(fn.info):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: kernel {name!r}: {threads} threads per block, at most "
                f"{self._max_threads(fn.info)}",
            )
        max_dynamic = self.func_get_attribute(FA_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn)
        if shared_mem < 0 or shared_mem > max_dynamic:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: kernel {name!r}: {shared_mem} bytes of dynamic shared memory, "
                f"at most {max_dynamic}",
            )
        if call == "cuLaunchCooperativeKernel":
            per_sm = dv.max_active_blocks(
                threads, fn.info.num_regs, fn.info.shared_bytes + shared_mem
            )
            blocks = grid[0] * grid[1] * grid[2]
            if blocks > per_sm * dv.SM_COUNT:
                raise CudaError(
                    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                    f"{call}: kernel {name!r}: {blocks} blocks cannot all be resident "
                    f"(at most {per_sm * dv.SM_COUNT})",
                )

    # -- streams and events -----------------------------------------------------------------
    def stream_create(self, flags: int, priority: int) -> object:
        if flags & ~CU_STREAM_NON_BLOCKING:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"cuStreamCreate: unknown flags {flags:#x}")
        least, greatest = STREAM_PRIORITY_RANGE
        priority = min(max(priority, greatest), least)
        stream = SimStream(self._state().context, flags, priority)
        self._streams.add(stream)
        return stream

    def stream_destroy(self, stream: object) -> None:
        target = self._stream(stream, "cuStreamDestroy")
        if stream is None or stream == PER_THREAD_STREAM:
            raise CudaError(
                CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy: a default stream cannot be destroyed"
            )
        self._streams.discard(target)
        target.close()

    def stream_synchronize(self, stream: object | None) -> None:
        target = self._stream(stream, "cuStreamSynchronize")
        target.wait()
        target.context.check()

    def stream_query(self, stream: object | None) -> bool:
        target = self._stream(stream, "cuStreamQuery")
        target.context.check()
        return target.idle()

    def stream_wait_event(self, stream: object | None, event: object, flags: int) -> None:
        target = self._stream(stream, "cuStreamWaitEvent")
        ev = self._event(event, "cuStreamWaitEvent")
        if flags & ~0x1:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuStreamWaitEvent: unknown flags {flags:#x}"
            )
        if ev.record is not None and not ev.record.done.is_set():
            target.submit(lambda: None, [ev.record])

    def event_create(self, flags: int) -> object:
        if flags & ~0x7:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"cuEventCreate: unknown flags {flags:#x}")
        if flags & CU_EVENT_INTERPROCESS and not flags & CU_EVENT_DISABLE_TIMING:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                "cuEventCreate: CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING",
            )
        return SimEvent(flags)

    def event_destroy(self, event: object) -> None:
        self._event(event, "cuEventDestroy")

    def event_record(self, event: object, stream: object | None) -> None:
        ev = self._event(event, "cuEventRecord")
        target = self._stream(stream, "cuEventRecord")
        target.context.check()
        ev.record_on(target)

    def event_synchronize(self, event: object) -> None:
        ev = self._event(event, "cuEventSynchronize")
        ev.wait()
        self._state().context.check()

    def event_query(self, event: object) -> bool:
        ev = self._event(event, "cuEventQuery")
        self._state().context.check()
        return ev.done()

    def event_elapsed_time(self, start: object, end: object) -> float:
        call = "cuEventElapsedTime"
        first, last = self._event(start, call), self._event(end, call)
        for ev, which in ((first, "start"), (last, "end")):
            if not ev.timing:
                raise CudaError(
                    CUDA_ERROR_INVALID_HANDLE,
                    f"{call}: the {which} event was created with CU_EVENT_DISABLE_TIMING",
                )
            if ev.record is None:
                raise CudaError(
                    CUDA_ERROR_INVALID_HANDLE, f"{call}: the {which} event was never recorded"
                )
        for ev, which in ((first, "start"), (last, "end")):
            if not ev.done():
                raise CudaError(
                    CUDA_ERROR_NOT_READY, f"{call}: the {which} event has not completed"
                )
        self._state().context.check()
        if first.time is None or last.time is None:
            raise CudaError(CUDA_ERROR_INVALID_HANDLE, f"{call}: an event record was skipped")
        return (last.time - first.time) * 1000.0

    # -- occupancy ----------------------------------------------------------------------------
    def occupancy_max_active_blocks(
        self, func: object, block_size: int, dynamic_smem: int, flags: int
    ) -> int:
        fn = self._function(func, "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        if block_size > self._max_threads(fn.info):
            return 0
        return dv.max_active_blocks(
            block_size, fn.info.num_regs, fn.info.shared_bytes + dynamic_smem
        )

    def occupancy_max_potential_block_size(
        self, func: object, dynamic_smem: int, block_size_limit: int, flags: int
    ) -> tuple[int, int]:
        fn = self._function(func, "cuOccupancyMaxPotentialBlockSize")
        return dv.max_potential_block_size(
            fn.info.num_regs,
            fn.info.shared_bytes + dynamic_smem,
            block_size_limit,
            self._max_threads(fn.info),
        )

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for state in self._states.values():
            state.context.cancelled.set()
        streams = [s for state in self._states.values() for s in state.context.live()]
        for stream in streams:
            stream.close()
        for stream in streams:
            stream.join()
        self.release_objects()
        for module in list(self._modules):
            module.loaded = False
        self._modules.clear()
        for state in self._states.values():
            if state.module_heap is not None:
                state.module_heap.release_all()
        self.memory.close()
        self._states.clear()
        self._streams.clear()
