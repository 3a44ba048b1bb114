"""Flags, attributes and launch variants of a session: context flags and cache configuration,
function cache configuration, occupancy of dynamic shared memory and clusters,
cuLaunchKernelEx, stream priorities, flags and attributes. What is set is kept in the
session's `SettingsTable` (`cricket_server.settings`) so that a checkpoint restores it."""

from __future__ import annotations

from collections.abc import Sequence

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
    LaunchConfig,
)
from cricket_server.resources import HandleKind, StreamRecord
from cricket_server.session_contexts import SessionContexts, check_ctx_flags
from cricket_server.session_modules import SessionModules, _too_few_params
from cricket_server.session_streams import SessionStreams
from cricket_server.settings import (
    CTX_CACHE_CONFIG,
    FUNC_CACHE_CONFIG,
    STREAM_ATTRIBUTE,
    SettingsTable,
)

# CUstreamAttrID values a stream keeps (scalars); the pointer-carrying ones are refused.
SA_ACCESS_POLICY_WINDOW = 1
SA_SYNCHRONIZATION_POLICY = 3
SA_PRIORITY = 8
SA_MEM_SYNC_DOMAIN_MAP = 9
SA_MEM_SYNC_DOMAIN = 10
_STREAM_ATTRIBUTES = {
    SA_SYNCHRONIZATION_POLICY: range(1, 5),  # CUsynchronizationPolicy AUTO..BLOCKING_SYNC
    SA_MEM_SYNC_DOMAIN: range(0, 2),  # CUlaunchMemSyncDomain DEFAULT, REMOTE
}
_STREAM_DEFAULTS = {SA_SYNCHRONIZATION_POLICY: 1, SA_MEM_SYNC_DOMAIN: 0}


def check_cache_config(call: str, config: int) -> int:
    if not 0 <= config <= 3:
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {config} is not a CUfunc_cache (0..3)")
    return config


class SessionFlags(SessionContexts, SessionModules, SessionStreams):
    """cuCtxGet/SetFlags, cuCtxGet/SetCacheConfig, cuLaunchKernelEx, cuOccupancy*, cuStream*."""

    @property
    def settings(self) -> SettingsTable:
        table = self.__dict__.get("_settings")
        if table is None:
            table = self.__dict__["_settings"] = SettingsTable()
        return table

    # -- contexts ---------------------------------------------------------------------------
    def ctx_get_flags(self) -> int:
        return self.current("cuCtxGetFlags").flags

    def ctx_set_flags(self, flags: int) -> None:
        call = "cuCtxSetFlags"
        ctx = self.current(call)
        ctx.flags = check_ctx_flags(call, flags)

    def ctx_get_cache_config(self) -> int:
        ctx = self.current("cuCtxGetCacheConfig")
        return self.settings.get(ctx.handle, CTX_CACHE_CONFIG)

    def ctx_set_cache_config(self, config: int) -> None:
        call = "cuCtxSetCacheConfig"
        ctx = self.current(call)
        self.bsession.ctx_set_cache_config(check_cache_config(call, config))
        self.settings.set(ctx.handle, CTX_CACHE_CONFIG, config)

    # -- functions --------------------------------------------------------------------------
    def func_set_cache_config(self, handle: int, config: int) -> None:
        super().func_set_cache_config(handle, config)
        fn = self.function("cuFuncSetCacheConfig", handle)
        self.settings.set(fn.handle, FUNC_CACHE_CONFIG, config)

    def occupancy_available_dynamic_smem(self, handle: int, blocks: int, block_size: int) -> int:
        call = "cuOccupancyAvailableDynamicSMemPerBlock"
        self.current(call)
        fn = self.function(call, handle)
        return self.bsession.occupancy_available_dynamic_smem(fn.obj, blocks, block_size)

    def occupancy_max_active_clusters(self, handle: int, config: LaunchConfig) -> int:
        call = "cuOccupancyMaxActiveClusters"
        self.current(call)
        fn = self.function(call, handle)
        return self.bsession.occupancy_max_active_clusters(fn.obj, config)

    def occupancy_max_potential_cluster_size(self, handle: int, config: LaunchConfig) -> int:
        call = "cuOccupancyMaxPotentialClusterSize"
        self.current(call)
        fn = self.function(call, handle)
        return self.bsession.occupancy_max_potential_cluster_size(fn.obj, config)

    def launch_ex(
        self, handle: int, config: LaunchConfig, stream: int, params: memoryview
    ) -> None:
        call = "cuLaunchKernelEx"
        self.current(call)
        fn_obj, need, name = self._launch_target(call, handle)
        if len(params) < need:
            raise _too_few_params(call, handle, need, len(params), name)
        self.bsession.launch_ex(fn_obj, config, self._stream(call, stream), params)

    # -- streams ----------------------------------------------------------------------------
    def _stream_record(self, call: str, handle: int) -> StreamRecord | None:
        """The record of a created stream; None for the default streams (0 and 2)."""
        self.current(call)
        self._stream(call, handle)
        if handle in (0, 2):
            return None
        return self.handles.get(call, HandleKind.STREAM, handle, StreamRecord)

    def stream_get_priority(self, handle: int) -> int:
        record = self._stream_record("cuStreamGetPriority", handle)
        if record is None:
            return 0
        least, greatest = self.bsession.stream_priority_range()
        return min(max(record.priority, greatest), least)

    def stream_get_flags(self, handle: int) -> int:
        record = self._stream_record("cuStreamGetFlags", handle)
        return 0 if record is None else record.flags

    def stream_get_attribute(self, handle: int, attr: int) -> int:
        call = "cuStreamGetAttribute"
        record = self._stream_record(call, handle)
        if attr == SA_PRIORITY:
            return self.stream_get_priority(handle)
        self._check_stream_attribute(call, attr)
        default = _STREAM_DEFAULTS[attr]
        return default if record is None else self.settings.get(record.handle, STREAM_ATTRIBUTE + attr, default)

    def stream_set_attribute(self, handle: int, attr: int, value: int) -> None:
        call = "cuStreamSetAttribute"
        record = self._stream_record(call, handle)
        if attr == SA_PRIORITY:
            if record is None:
                raise CudaError(
                    CUDA_ERROR_INVALID_VALUE, f"{call}: a default stream's priority is fixed"
                )
            self.bsession.stream_set_attribute(record.obj, attr, value)
            record.priority = value
            return
        self._check_stream_attribute(call, attr)
        if value not in _STREAM_ATTRIBUTES[attr]:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {value} is not a value of attribute {attr}"
            )
        self.bsession.stream_set_attribute(self._stream(call, handle), attr, value)
        if record is not None:
            self.settings.set(record.handle, STREAM_ATTRIBUTE + attr, value)

    @staticmethod
    def _check_stream_attribute(call: str, attr: int) -> None:
        if attr in (SA_ACCESS_POLICY_WINDOW, SA_MEM_SYNC_DOMAIN_MAP):
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED,
                f"{call}: stream attribute {attr} (access policy window, memory sync domain "
                "map) is not supported remotely",
            )
        if attr not in _STREAM_ATTRIBUTES:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: {attr} is not a stream attribute")


def launch_config(
    grid: Sequence[int], block: Sequence[int], shared_mem: int, attrs: Sequence[object]
) -> LaunchConfig:
    """A LaunchConfig from wire values; `attrs` are launch_attribute structs (id, x, y, z)."""
    return LaunchConfig(
        (grid[0], grid[1], grid[2]),
        (block[0], block[1], block[2]),
        shared_mem,
        tuple((a.id, a.x, a.y, a.z) for a in attrs),  # type: ignore[attr-defined]
    )
