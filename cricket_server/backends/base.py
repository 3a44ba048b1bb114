"""The interface every backend implements, and the error type backends raise.

A backend executes CUDA work for the server. It knows nothing of RPC, sessions, handle IDs or
ownership: the session layer (`cricket_server.session`) checks that a client may touch a
pointer or handle before it calls the backend, and translates handle IDs into the backend's
own objects (the `object`s below are opaque to everyone but the backend that made them).

Failures are raised as `CudaError(code, message)`, `code` being the CUresult value local CUDA
would give for the same mistake; the session layer turns that into the reply's CUresult.
Anything a backend cannot do raises `CudaError(CUDA_ERROR_NOT_SUPPORTED, "<call>: ...")`.

Streams: `None` means the legacy default stream; `PER_THREAD_STREAM` the per-thread default
stream (the session has one thread, so both order the same way on the server).

Memory (D4): client allocations come from `DeviceHeap`s (see `cricket_server.memory`) that
sub-allocate chunks mapped at addresses the server chooses; a backend supplies the chunk
backing (`ChunkBacking`): VMM (cuMemCreate/cuMemMap) on `cuda`, host RAM on `sim`.
"""

from __future__ import annotations

import abc
import enum
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cricket_server.graphs import ExecNode

    from .dev_resources import DevResource
    from .mipmaps import SparseProps

from .arrays import ArrayDesc, Copy3D, ResourceDesc, TextureDesc, ViewDesc

PER_THREAD_STREAM = "per-thread"

# CUresult values the server itself needs (the full enum lives in the generated protocol).
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_INVALID_SOURCE = 300
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_NOT_PERMITTED = 800
CUDA_ERROR_NOT_SUPPORTED = 801
CUDA_ERROR_UNKNOWN = 999


# CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, and the CUarray_format values
# cuDeviceGetTexture1DLinearMaxWidth takes (the integer, half and float ones)
MAXIMUM_TEXTURE1D_LINEAR_WIDTH = 69
TEXTURE_FORMATS = frozenset({0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x10, 0x20})


class CudaError(Exception):
    """A CUDA failure: `code` is the CUresult value, `message` names the call and the cause."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (CUresult {code})")
        self.code = int(code)
        self.message = message


def not_supported(call: str, why: str = "not supported by this backend") -> CudaError:
    return CudaError(CUDA_ERROR_NOT_SUPPORTED, f"{call}: {why}")


class ChunkBacking(Protocol):
    """Maps and unmaps physical memory under server-chosen device virtual addresses."""

    granularity: int  # chunk sizes and addresses are multiples of this (2 MiB on an H200)

    def map_chunk(self, addr: int, size: int) -> object:
        """Back [addr, addr+size) with memory; return a token for `unmap_chunk`.

        Raises CudaError(CUDA_ERROR_OUT_OF_MEMORY) when memory is short, and
        CudaError(CUDA_ERROR_INVALID_VALUE) when that address cannot be had."""

    def unmap_chunk(self, addr: int, size: int, token: object) -> None: ...


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter: byte offset and size in the packed argument buffer."""

    offset: int
    size: int


@dataclass(frozen=True)
class GlobalInfo:
    address: int
    size: int


@dataclass(frozen=True)
class LaunchConfig:
    """What cuLaunchKernelEx and cuOccupancyMaxActiveClusters take of a CUlaunchConfig:
    grid, block, dynamic shared memory and the launch attributes as (id, x, y, z)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    attrs: tuple[tuple[int, int, int, int], ...] = ()


Launcher = Callable[[object, int, int, int, int, int, int, int, object, memoryview], None]
"""BackendSession.launcher()'s result: (func, grid x/y/z, block x/y/z, shared memory bytes,
stream, packed parameters)."""


class BackendSession(abc.ABC):
    """The device work of one client session. One server thread calls it at a time."""

    # -- devices and contexts -------------------------------------------------------------
    @abc.abstractmethod
    def set_device(self, dev: int) -> None:
        """Make `dev` the device the following calls work on (the session's current context)."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """cuCtxSynchronize on the current device."""

    @abc.abstractmethod
    def get_limit(self, limit: int) -> int: ...

    @abc.abstractmethod
    def set_limit(self, limit: int, value: int) -> None: ...

    @abc.abstractmethod
    def stream_priority_range(self) -> tuple[int, int]:
        """(least, greatest) as cuCtxGetStreamPriorityRange."""

    # -- memory ---------------------------------------------------------------------------
    @abc.abstractmethod
    def chunk_backing(self, dev: int) -> ChunkBacking:
        """The chunk backing for this session's heap on `dev`."""

    @abc.abstractmethod
    def memcpy_htod(self, dst: int, data: memoryview, stream: object | None) -> None: ...

    @abc.abstractmethod
    def memcpy_dtoh(self, src: int, size: int, stream: object | None) -> bytes | memoryview:
        """Copy out; for an async stream the copy is ordered but the bytes are returned now,
        after the stream has reached it (the server synchronizes that stream)."""

    @abc.abstractmethod
    def memcpy_dtod(self, dst: int, src: int, size: int, stream: object | None) -> None: ...

    @abc.abstractmethod
    def memset(self, dst: int, value: int, width: int, count: int, stream: object | None) -> None:
        """cuMemsetD8/D16/D32(Async): `count` elements of `width` bytes (1, 2 or 4)."""

    @abc.abstractmethod
    def mem_get_info(self) -> tuple[int, int]:
        """(free, total) bytes on the current device."""

    # -- registered host memory (optional) ------------------------------------------------
    # A client's shared segment stays mapped for the life of its connection: a backend may
    # page-lock it once and then copy between it and the device directly, without staging.
    def register_host(self, view: memoryview) -> object | None:
        """Page-lock `view` (writable host memory, mapped until `unregister_host`) for the
        `*_registered` copies; returns a token, or None when this backend cannot (the caller
        then copies with memcpy_htod/memcpy_dtoh). May raise CudaError (e.g. not permitted):
        the caller falls back the same way."""
        return None

    def unregister_host(self, token: object) -> None:  # noqa: B027 - optional hook
        """Undo `register_host`; a token already released is ignored. A backend that registers
        also releases every registration in `close`, before its contexts go."""

    def memcpy_htod_registered(
        self, dst: int, token: object, offset: int, data: memoryview, stream: object | None
    ) -> None:
        """Copy `data`, bytes [offset, offset + len(data)) of the memory registered as `token`,
        to `dst`. When it returns `data` is not needed any more and the caller may overwrite
        it: a copy on a stream has finished, or works from bytes of its own."""
        self.memcpy_htod(dst, data, stream)  # which never reads `data` after returning

    def memcpy_dtoh_registered(
        self, src: int, token: object, offset: int, out: memoryview, stream: object | None
    ) -> None:
        """Copy len(out) bytes from `src` into `out`, bytes [offset, offset + len(out)) of the
        memory registered as `token`; they are there when it returns (a copy on a stream
        waits for that stream to reach it)."""
        out[:] = self.memcpy_dtoh(src, len(out), stream)

    # -- virtual memory management (cuMemCreate/Map/SetAccess; optional) ------------------
    # The session layer checks sizes, offsets and ownership and takes every address from the
    # server's arena (D4); a backend only creates, maps and releases.
    # -- the linker (cuLink*) ---------------------------------------------------------------
    def link(self, inputs: list[tuple[int, str, bytes]], jit_options: dict[int, int]) -> tuple[bytes, str]:
        """cuLinkCreate/AddData/Complete/Destroy in the current context: `inputs` as
        (CUjitInputType, name, bytes), in order; (the linked cubin, the info log). The base
        links nothing: NOT_SUPPORTED."""
        raise not_supported("cuLinkComplete", "this backend has no linker")

    def vmm_create(self, dev: int, size: int) -> object:
        """cuMemCreate: `size` bytes (a multiple of the granularity) of pinned memory on
        `dev`; a token for the other vmm_ methods. The base has none: NOT_SUPPORTED."""
        raise not_supported("cuMemCreate")

    def vmm_release(self, phys: object) -> None:
        """cuMemRelease; memory still mapped lives on until its last unmap."""
        raise not_supported("cuMemRelease")

    def vmm_map(self, addr: int, size: int, offset: int, phys: object) -> None:
        """cuMemMap: bytes [offset, offset + size) of `phys` at `addr` (inside the arena)."""
        raise not_supported("cuMemMap")

    def vmm_unmap(self, addr: int, size: int) -> None:
        """cuMemUnmap of one whole mapping made by `vmm_map`."""
        raise not_supported("cuMemUnmap")

    def vmm_set_access(self, addr: int, size: int, dev: int, flags: int) -> None:
        """cuMemSetAccess of [addr, addr + size) for device `dev` (CUmemAccess_flags)."""
        raise not_supported("cuMemSetAccess")

    # -- modules, libraries, functions ----------------------------------------------------
    @abc.abstractmethod
    def module_load(self, image: bytes, jit_options: dict[int, int]) -> object:
        """cuModuleLoadData(Ex) / cuModuleLoadFatBinary: cubin, fatbin or PTX (NUL-terminated)."""

    @abc.abstractmethod
    def module_unload(self, module: object) -> None: ...

    @abc.abstractmethod
    def module_get_function(self, module: object, name: str) -> object: ...

    @abc.abstractmethod
    def module_get_global(self, module: object, name: str) -> GlobalInfo: ...

    @abc.abstractmethod
    def library_load(self, image: bytes, jit_options: dict[int, int]) -> object: ...

    @abc.abstractmethod
    def library_unload(self, library: object) -> None: ...

    @abc.abstractmethod
    def library_get_kernel(self, library: object, name: str) -> object: ...

    @abc.abstractmethod
    def kernel_get_function(self, kernel: object) -> object: ...

    @abc.abstractmethod
    def func_get_attribute(self, attrib: int, func: object) -> int: ...

    @abc.abstractmethod
    def func_set_attribute(self, func: object, attrib: int, value: int) -> None: ...

    @abc.abstractmethod
    def func_set_cache_config(self, func: object, config: int) -> None: ...

    @abc.abstractmethod
    def func_param_info(self, func: object) -> Sequence[ParamInfo]:
        """Every parameter's (offset, size), in order (cuFuncGetParamInfo / EIATTR_KPARAM_INFO)."""

    @abc.abstractmethod
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
        """Launch with the packed argument buffer (D5): parameter i is
        params[info[i].offset : info[i].offset + info[i].size]."""

    def fast_launcher(self, keep: object = None) -> Any:
        """A C loop that makes a launch batch's launches from its record (the cuda backend's
        `fast_launch.FastLauncher`, the context current), or None: launches go one by one
        through `launcher`. Its tables stay as the last batch left them when `keep` is not
        None and equals the last call's (the caller's word that every handle in them still
        names the same object), else they are emptied."""
        return None

    def fast_graph_launcher(self) -> Any:
        """A C loop that makes a graph launch batch's launches from its record (the cuda
        backend's `fast_graph_launch.FastGraphLauncher`, tables empty, the context current),
        or None: launches go one by one through `graph_launch`."""
        return None

    def replay_batch(self, body: memoryview) -> bool:
        """Make a launch batch (its record `body`) as a repeat of an earlier one (the cuda
        backend's graphs of repeated batches, `launch_replay`): True when made, False when
        its launches must be made as usual."""
        return False

    def batch_made(self, body: memoryview, fast: Any) -> None:  # noqa: B027 - optional hook
        """A launch batch was just made by `fast` (`fast_launcher`), every launch accepted."""

    def forget_repeated_batches(self) -> None:  # noqa: B027 - optional hook
        """Drop what `replay_batch` keeps, before a function, module or stream it may name
        changes or goes."""

    def launcher(self) -> Launcher:
        """A function launching one kernel as `launch` does (not cooperative), for a run of
        launches made under one hold of the session's lock with nothing else in between
        (a launch batch): backends may do their per-call preparation once."""

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
            self.launch(func, (gx, gy, gz), (bx, by, bz), shared_mem, stream, params)

        return launch_one

    # -- streams and events ---------------------------------------------------------------
    @abc.abstractmethod
    def stream_create(self, flags: int, priority: int) -> object: ...

    @abc.abstractmethod
    def stream_destroy(self, stream: object) -> None: ...

    @abc.abstractmethod
    def stream_synchronize(self, stream: object | None) -> None: ...

    @abc.abstractmethod
    def stream_query(self, stream: object | None) -> bool:
        """True when all work is done (CUDA_SUCCESS), False for CUDA_ERROR_NOT_READY."""

    @abc.abstractmethod
    def stream_wait_event(self, stream: object | None, event: object, flags: int) -> None: ...

    @abc.abstractmethod
    def event_create(self, flags: int) -> object: ...

    @abc.abstractmethod
    def event_destroy(self, event: object) -> None: ...

    @abc.abstractmethod
    def event_record(self, event: object, stream: object | None) -> None: ...

    @abc.abstractmethod
    def event_synchronize(self, event: object) -> None: ...

    @abc.abstractmethod
    def event_query(self, event: object) -> bool: ...

    @abc.abstractmethod
    def event_elapsed_time(self, start: object, end: object) -> float:
        """Milliseconds, as cuEventElapsedTime."""

    # -- CUDA graphs (optional) -----------------------------------------------------------
    def graph_instantiate(self, nodes: Sequence[ExecNode]) -> object:
        """An exec of `nodes` (topologically ordered, child graphs flattened; see
        `cricket_server.graphs.ExecNode`)."""
        raise not_supported("cuGraphInstantiate")

    def graph_launch(
        self, exec_: object, stream: object | None, host_in: Sequence[memoryview]
    ) -> list[bytes | memoryview]:
        """Launch on `stream`; `host_in[i]` is the bytes of the i-th host-to-device host side.
        Returns the bytes of each device-to-host host side, in order, after the launch is
        done (without such sides it returns [] at once, the launch queued)."""
        raise not_supported("cuGraphLaunch")

    def graph_exec_set_node(self, exec_: object, node: ExecNode) -> None:
        """Give the exec's node `node.key` the parameters of `node` (same type)."""
        raise not_supported("cuGraphExecKernelNodeSetParams")

    def graph_exec_set_enabled(self, exec_: object, key: object, enabled: bool) -> None:
        """Turn the exec's node `key` (a kernel, memset or device memcpy node) off or on."""
        raise not_supported("cuGraphNodeSetEnabled")

    def graph_debug_dot(self, nodes: Sequence[ExecNode], flags: int) -> str:
        """A DOT description of a graph of `nodes` (as for graph_instantiate)."""
        raise not_supported("cuGraphDebugDotPrint")

    def graph_upload(self, exec_: object, stream: object | None) -> None:
        """Make the exec ready to launch, in `stream`'s order (cuGraphUpload)."""
        raise not_supported("cuGraphUpload")

    def kernel_node_attribute(
        self, node: ExecNode, attr_id: int, call: str
    ) -> tuple[int, int, int]:
        """The (x, y, z) of launch attribute `attr_id` of kernel node `node` (an exec node
        whose `attrs` are those set), as a graph's node answers; refuses, naming `call`, an
        attribute or value the device takes for no kernel node."""
        raise not_supported("cuGraphKernelNodeGetAttribute")

    def graph_exec_destroy(self, exec_: object) -> None:  # noqa: B027 - optional hook
        """Free an exec (nothing to free by default)."""

    # -- occupancy ------------------------------------------------------------------------
    @abc.abstractmethod
    def occupancy_max_active_blocks(
        self, func: object, block_size: int, dynamic_smem: int, flags: int
    ) -> int: ...

    @abc.abstractmethod
    def occupancy_max_potential_block_size(
        self, func: object, dynamic_smem: int, block_size_limit: int, flags: int
    ) -> tuple[int, int]:
        """(min_grid_size, block_size) as cuOccupancyMaxPotentialBlockSize with no callback."""

    # -- arrays, textures, surfaces (optional) --------------------------------------------
    def array_create(self, desc: ArrayDesc) -> object:
        """cuArray3DCreate on the current device; the desc was checked by the session."""
        raise not_supported("cuArray3DCreate")

    def array_destroy(self, array: object) -> None:
        raise not_supported("cuArrayDestroy")

    def memcpy_3d(self, copy: Copy3D, stream: object | None) -> bytes | None:
        """cuMemcpy3D(Async): places and extent checked by the session. A host source is
        `copy.src.host`; a host destination's bytes are returned packed (row after row, slice
        after slice), once the stream reached the copy. Other copies return None."""
        raise not_supported("cuMemcpy3D")

    def tex_object_create(
        self, res: ResourceDesc, tex: TextureDesc, view: ViewDesc | None, want: int = 0
    ) -> int:
        """cuTexObjectCreate: the object's value, as kernels take it. `want` (restore): the
        value it had; a backend that cannot choose values ignores it (the caller compares)."""
        raise not_supported("cuTexObjectCreate")

    def tex_object_destroy(self, value: int) -> None:
        raise not_supported("cuTexObjectDestroy")

    def surf_object_create(self, res: ResourceDesc, want: int = 0) -> int:
        """cuSurfObjectCreate; `want` as in tex_object_create."""
        raise not_supported("cuSurfObjectCreate")

    def surf_object_destroy(self, value: int) -> None:
        raise not_supported("cuSurfObjectDestroy")

    # -- mipmapped and sparse arrays (optional) -------------------------------------------
    def mipmap_create(self, desc: ArrayDesc, levels: int) -> tuple[object, list[object]]:
        """cuMipmappedArrayCreate on the current device: (the mipmapped array, its levels as
        array objects memcpy_3d takes; they go with it). Desc and levels checked."""
        raise not_supported("cuMipmappedArrayCreate")

    def mipmap_destroy(self, mipmap: object) -> None:
        raise not_supported("cuMipmappedArrayDestroy")

    def sparse_properties(self, obj: object, mipmap: bool) -> SparseProps:
        """cuArrayGetSparseProperties (`mipmap` False) / cuMipmappedArrayGetSparseProperties."""
        raise not_supported("cuArrayGetSparseProperties")

    def memory_requirements(self, obj: object, mipmap: bool, dev: int) -> tuple[int, int]:
        """(size, alignment): cuArrayGetMemoryRequirements / cuMipmappedArrayGetMemoryRequirements."""
        raise not_supported("cuArrayGetMemoryRequirements")

    # -- device resources and green contexts (optional) -----------------------------------
    def dev_resource(self, dev: int) -> DevResource:
        """cuDeviceGetDevResource(dev, CU_DEV_RESOURCE_TYPE_SM)."""
        raise not_supported("cuDeviceGetDevResource")

    def sm_split(
        self, res: DevResource, wanted: int, flags: int, min_count: int
    ) -> tuple[list[DevResource], int, DevResource]:
        """cuDevSmResourceSplitByCount: (groups, count, remainder); `wanted` 0 counts only
        (no groups made)."""
        raise not_supported("cuDevSmResourceSplitByCount")

    def green_ctx_create(self, resources: list[DevResource], dev: int, flags: int) -> object:
        """cuDevResourceGenerateDesc + cuGreenCtxCreate on device `dev`."""
        raise not_supported("cuGreenCtxCreate")

    def green_ctx_destroy(self, green: object) -> None:
        raise not_supported("cuGreenCtxDestroy")

    def green_ctx_resource(self, green: object) -> DevResource:
        """cuGreenCtxGetDevResource(green, CU_DEV_RESOURCE_TYPE_SM)."""
        raise not_supported("cuGreenCtxGetDevResource")
    # -- flags, attributes, launch variants (optional) --------------------------------------
    def ctx_set_cache_config(self, config: int) -> None:  # noqa: B027 - optional hook
        """cuCtxSetCacheConfig on the current device (CUfunc_cache 0..3, checked by the
        session). Default: a preference only, nothing to do (the session keeps the value)."""

    def occupancy_available_dynamic_smem(self, func: object, blocks: int, block_size: int) -> int:
        """cuOccupancyAvailableDynamicSMemPerBlock. Default: CUDA_ERROR_NOT_SUPPORTED (a
        backend without an occupancy model)."""
        raise not_supported("cuOccupancyAvailableDynamicSMemPerBlock")

    def occupancy_max_active_clusters(
        self, func: object, config: LaunchConfig
    ) -> int:
        """cuOccupancyMaxActiveClusters. Default: CUDA_ERROR_NOT_SUPPORTED (a backend without
        thread block clusters)."""
        raise not_supported("cuOccupancyMaxActiveClusters")

    def occupancy_max_potential_cluster_size(self, func: object, config: LaunchConfig) -> int:
        """cuOccupancyMaxPotentialClusterSize. Default: CUDA_ERROR_NOT_SUPPORTED (a backend
        without thread block clusters)."""
        raise not_supported("cuOccupancyMaxPotentialClusterSize")

    def launch_ex(
        self, func: object, config: LaunchConfig, stream: object | None, params: memoryview
    ) -> None:
        """cuLaunchKernelEx with `config.attrs` (id, x, y, z). Default: CUDA_ERROR_NOT_SUPPORTED
        (a backend that launches only plainly)."""
        raise not_supported("cuLaunchKernelEx")

    def stream_set_attribute(  # noqa: B027 - optional hook
        self, stream: object | None, attr: int, value: int
    ) -> None:
        """cuStreamSetAttribute of a scalar CUstreamAttrID (checked by the session, which keeps
        the value). Default: a hint only, nothing to do."""

    # -- several devices (optional) ---------------------------------------------------------
    def enable_peer_access(self, peer_dev: int) -> None:  # noqa: B027 - optional hook
        """cuCtxEnablePeerAccess from the current device to `peer_dev` (the session checked
        both devices and the state). Default: nothing to do (one address space)."""

    def disable_peer_access(self, peer_dev: int) -> None:  # noqa: B027 - optional hook
        """cuCtxDisablePeerAccess from the current device to `peer_dev`. Default: nothing."""

    def memcpy_peer(
        self, dst: int, dst_dev: int, src: int, src_dev: int, size: int, stream: object | None
    ) -> None:
        """cuMemcpyPeer(Async) between allocations of two devices. Default: a device-to-device
        copy (one address space, as on sim)."""
        self.memcpy_dtod(dst, src, size, stream)

    # -- small queries (procedures 720-779) -------------------------------------------------
    def module_function_names(self, module: object) -> list[str]:
        """cuModuleEnumerateFunctions: the names of a module's functions, in the driver's
        order."""
        raise not_supported("cuModuleEnumerateFunctions")

    def library_kernel_names(self, library: object) -> list[str]:
        """cuLibraryEnumerateKernels: the names of a library's kernels, in the driver's order."""
        raise not_supported("cuLibraryEnumerateKernels")

    def library_get_global(self, library: object, name: str) -> GlobalInfo:
        """cuLibraryGetGlobal in the current context."""
        raise not_supported("cuLibraryGetGlobal")

    def func_is_loaded(self, func: object) -> int:
        """cuFuncIsLoaded (CUfunctionLoadingState). Default: loaded (a backend that loads
        modules eagerly)."""
        return 1

    def func_load(self, func: object) -> None:  # noqa: B027 - optional hook
        """cuFuncLoad. Default: nothing (functions are loaded with their module)."""

    def module_loading_mode(self) -> int:
        """cuModuleGetLoadingMode (CUmoduleLoadingMode). Default: as the driver since CUDA
        12.2, lazy (2) unless the server runs with CUDA_MODULE_LOADING=EAGER (1)."""
        return 1 if os.environ.get("CUDA_MODULE_LOADING", "").upper() == "EAGER" else 2

    def ctx_record_event(self, event: object) -> None:
        """cuCtxRecordEvent in the current device's context: the event completes after all
        work sent to it so far. Default: wait for that work, then record on the legacy
        stream."""
        self.synchronize()
        self.event_record(event, None)

    def ctx_wait_event(self, event: object) -> None:
        """cuCtxWaitEvent: later work of the current device's context waits for the event.
        Default: wait for the event here, so that everything sent after it follows."""
        self.event_synchronize(event)

    def profiler_start(self) -> None:
        """cuProfilerStart in the current context. Default: nothing to record, as a driver
        without a profiler attached."""
        return None

    def profiler_stop(self) -> None:
        """cuProfilerStop in the current context. Default: as profiler_start."""
        return None

    def ctx_reset_persisting_l2_cache(self) -> None:
        """cuCtxResetPersistingL2Cache. Default: no L2 line persists on this device, so there
        is nothing to reset."""
        return None

    def ctx_get_shared_mem_config(self) -> int:
        """cuCtxGetSharedMemConfig (CUsharedconfig). Default: 4-byte banks (1), the fixed
        bank size of every device without configurable banks (all since Maxwell)."""
        return 1

    def ctx_set_shared_mem_config(self, config: int) -> None:
        """cuCtxSetSharedMemConfig. Default: a known CUsharedconfig (0-2) is taken and has no
        effect, as on devices without configurable banks."""
        check_shared_config("cuCtxSetSharedMemConfig", config)

    def func_set_shared_mem_config(self, func: object, config: int) -> None:
        """cuFuncSetSharedMemConfig. Default: as ctx_set_shared_mem_config."""
        check_shared_config("cuFuncSetSharedMemConfig", config)

    def stream_mem_ops(self, stream: object | None, ops: Sequence[Any]) -> None:
        """cuStreamBatchMemOp: checked `cricket_server.stream_mem_ops.StreamMemOp`s, in
        order on `stream`."""
        raise not_supported("cuStreamBatchMemOp")

    def tensor_map_encode(self, request: Any) -> bytes:
        """cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col of a checked
        `cricket_server.tensor_maps.TensorMapRequest`: the 128-byte CUtensorMap. Default:
        CUDA_ERROR_NOT_SUPPORTED (a backend without the GPU's tensor memory accelerator has no
        encoding a map could follow)."""
        raise not_supported(request.call, "tensor maps are encoded by a Hopper GPU's driver")

    def tensor_map_replace_address(self, tensor_map: bytes, address: int) -> bytes:
        """cuTensorMapReplaceAddress: the map with its global address replaced. Default:
        CUDA_ERROR_NOT_SUPPORTED, as tensor_map_encode."""
        raise not_supported(
            "cuTensorMapReplaceAddress", "tensor maps are encoded by a Hopper GPU's driver"
        )

    def tensor_map_encode_wide(self, request: Any) -> bytes:
        """cuTensorMapEncodeIm2colWide of a checked TensorMapRequest (kind IM2COL_WIDE, its
        `mode` a CUtensorMapIm2ColWideMode). Default: CUDA_ERROR_NOT_SUPPORTED, as
        tensor_map_encode."""
        raise not_supported(request.call, "tensor maps are encoded by a Hopper GPU's driver")

    def tensor_map_set_alloc_class(self, tensor_map: bytes, alloc_class: int) -> tuple[bytes, int]:
        """cuTensorMapSetAllocationClass: (the map, the class in effect). Default:
        CUDA_ERROR_NOT_SUPPORTED, as tensor_map_encode."""
        raise not_supported(
            "cuTensorMapSetAllocationClass", "tensor maps are encoded by a Hopper GPU's driver"
        )

    def sm_split_groups(
        self, res: Any, params: list[Any], flags: int
    ) -> tuple[list[Any], Any, list[Any]]:
        """cuDevSmResourceSplit of the DevResource `res` into one group per
        `cricket_server.backends.sm_groups.SmGroupParams`: (the groups' DevResources, the
        remainder's (type 0 when no SM is left), the parameters with discovered SM counts).
        Default: CUDA_ERROR_NOT_SUPPORTED."""
        raise not_supported("cuDevSmResourceSplit")

    def ctx_api_version(self) -> int:
        """cuCtxGetApiVersion of the current device's context. Default: 3020, what CUDA
        answers for every context made by the current API."""
        return 3020

    # -- device facts, array planes, library modules (procedures 900-939) ------------------
    def ctx_exec_affinity(self, typename: int) -> int:
        """cuCtxGetExecAffinity of the current context: the SMs it may use
        (CU_EXEC_AFFINITY_TYPE_SM_COUNT). Default: CUDA_ERROR_NOT_SUPPORTED."""
        raise not_supported("cuCtxGetExecAffinity", "this backend does not model SM affinity")

    def array_get_plane(self, array: object, plane: int) -> object:
        """cuArrayGetPlane. Default: CUDA_ERROR_INVALID_VALUE, CUDA's answer for an array
        without a multi-planar format (arrays of such formats are refused when made)."""
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"cuArrayGetPlane: the array has no multi-planar format, so no plane {plane}",
        )

    def library_get_module(self, library: object) -> object:
        """cuLibraryGetModule: the library's module in the current context, as a module
        object `module_get_function`/`module_get_global` take. Default: NOT_SUPPORTED."""
        raise not_supported("cuLibraryGetModule", "this backend has no library modules")

    def library_get_unified_function(self, library: object, symbol: str) -> int:
        """cuLibraryGetUnifiedFunction: the address of a unified function of the library.
        Default: CUDA_ERROR_INVALID_VALUE, the driver's answer (H200, driver 580) for a symbol
        that is no unified function, a kernel's name included."""
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"cuLibraryGetUnifiedFunction: no unified function {symbol!r} in the library",
        )

    # -- lifetime -------------------------------------------------------------------------
    @abc.abstractmethod
    def close(self) -> None:
        """Free everything this session made (modules, streams, events); heaps are freed by
        the session layer through `ChunkBacking.unmap_chunk` before this is called."""


class Backend(abc.ABC):
    """One per server process."""

    name: str

    @abc.abstractmethod
    def driver_version(self) -> int: ...

    @abc.abstractmethod
    def runtime_version(self) -> int:
        """The CUDA version the backend was built for (e.g. 13000)."""

    @abc.abstractmethod
    def device_count(self) -> int: ...

    @abc.abstractmethod
    def device_name(self, dev: int) -> str: ...

    @abc.abstractmethod
    def device_attribute(self, attrib: int, dev: int) -> int:
        """Any CUdevice_attribute value; CUDA_ERROR_INVALID_VALUE for an unknown one."""

    @abc.abstractmethod
    def device_total_mem(self, dev: int) -> int: ...

    @abc.abstractmethod
    def device_uuid(self, dev: int) -> bytes:
        """16 bytes."""

    @abc.abstractmethod
    def device_pci_bus_id(self, dev: int) -> str: ...

    @abc.abstractmethod
    def open_session(self) -> BackendSession: ...

    @abc.abstractmethod
    def address_space(self) -> tuple[int, int, int]:
        """(base, size, granularity) of the device VA range client allocations come from."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release process-wide resources (address reservations)."""

    # -- several devices (optional) ---------------------------------------------------------
    def can_access_peer(self, dev: int, peer: int) -> bool:
        """cuDeviceCanAccessPeer of two distinct devices. Default: False (no peer access)."""
        return False

    def p2p_attribute(self, attrib: int, src: int, dst: int) -> int:
        """cuDeviceGetP2PAttribute of two distinct devices. Default: 0 for the known
        CUdevice_P2PAttribute values (1..5), CUDA_ERROR_INVALID_VALUE for others."""
        if not 1 <= attrib <= 5:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuDeviceGetP2PAttribute: unknown attribute {attrib}"
            )
        return 0


    def texture_1d_linear_max_width(self, fmt: int, channels: int, dev: int) -> int:
        """cuDeviceGetTexture1DLinearMaxWidth: elements of a 1D linear texture of `channels`
        channels of CUarray_format `fmt`. Default: the device's
        MAXIMUM_TEXTURE1D_LINEAR_WIDTH attribute for a known format and 1, 2 or 4 channels."""
        call = "cuDeviceGetTexture1DLinearMaxWidth"
        if fmt not in TEXTURE_FORMATS:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: unknown CUarray_format {fmt}")
        if channels not in (1, 2, 4):
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: numChannels must be 1, 2 or 4, got {channels}"
            )
        return self.device_attribute(MAXIMUM_TEXTURE1D_LINEAR_WIDTH, dev)

    # -- device facts (procedures 900-907; optional) ------------------------------------------
    def device_luid(self, dev: int) -> tuple[bytes, int]:
        """cuDeviceGetLuid: (8-byte LUID, device node mask). Default: CUDA_ERROR_NOT_SUPPORTED,
        CUDA's answer outside Windows (LUIDs belong to WDDM)."""
        raise not_supported("cuDeviceGetLuid", "LUIDs exist for WDDM devices on Windows only")

    def p2p_atomic_capabilities(self, operations: Sequence[int], src: int, dst: int) -> list[int]:
        """cuDeviceGetP2PAtomicCapabilities: CUatomicOperationCapability bits of each
        CUatomicOperation over the link from `src` to `dst`. Default: NOT_SUPPORTED."""
        raise not_supported("cuDeviceGetP2PAtomicCapabilities", "this backend has no peer links")

    def exec_affinity_support(self, typename: int, dev: int) -> int:
        """cuDeviceGetExecAffinitySupport: 1 when the device supports contexts limited by
        CUexecAffinityType `typename`. Default: 0 for the known type (SM count)."""
        if typename != 0:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuDeviceGetExecAffinitySupport: unknown CUexecAffinityType {typename}",
            )
        return 0

    def fabric_cluster_uuid(self, dev: int) -> bytes:
        """cuDeviceGetFabricClusterUuid: 16 bytes. Default: NOT_SUPPORTED (no NVLink fabric)."""
        raise not_supported("cuDeviceGetFabricClusterUuid", "the device is on no NVLink fabric")

    def clique_count(self, dev: int) -> int:
        """cuDeviceGetCliqueCount. Default: NOT_SUPPORTED (no NVLink fabric)."""
        raise not_supported("cuDeviceGetCliqueCount", "the device is on no NVLink fabric")

    def clique_info(self, count: int, dev: int) -> list[tuple[int, int]]:
        """cuDeviceGetCliqueInfo: at most `count` (CUcliqueType, id) pairs. Default:
        NOT_SUPPORTED (no NVLink fabric)."""
        raise not_supported("cuDeviceGetCliqueInfo", "the device is on no NVLink fabric")

class MemoryKind(enum.IntEnum):
    DEVICE = 2  # CU_MEMORYTYPE_DEVICE


def check_shared_config(call: str, config: int) -> None:
    """A CUsharedconfig value (0 default, 1 four-byte, 2 eight-byte banks), else
    CUDA_ERROR_INVALID_VALUE naming the call."""
    if not 0 <= config <= 2:
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {config} is not a CUsharedconfig (0..2)")
