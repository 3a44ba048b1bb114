"""Device facts and small queries of a session (procedures 900-911): LUIDs, atomic
capabilities, execution affinity, NVLink fabric facts, green-context ids, array planes and
the one settable pointer attribute.

Device facts are the backend's (the driver's on `cuda`), but what a remote client cannot use
reads as unsupported, as `cricket_server.remote_attributes` does for device attributes:
atomics between the device and the client's host (no memory of that host is reachable from
the GPU) have no capabilities, and contexts limited to some SMs (cuCtxCreate's
execAffinityParams, refused on the client) are not supported. CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
is kept by the session per allocation (by its buffer id, so a new allocation at the same
address starts unset); the client copies synchronously into memory that has it set.
"""

from __future__ import annotations

from collections.abc import Sequence

from cricket_server.backends.atomics import ATOMIC_OPERATIONS, check_operations
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)
from cricket_server.resources import HandleKind
from cricket_server.session_arrays import SessionArrays
from cricket_server.session_core import NO_CONTEXT
from cricket_server.session_dev_resources import GreenCtxRecord, SessionDevResources
from cricket_server.session_memcalls import SessionMemoryCalls
from cricket_server.session_memory import PA_SYNC_MEMOPS
from cricket_server.session_modules import SessionModules
from rpc_spec.handles import COUNTER_MASK

__all__ = ["ATOMIC_OPERATIONS", "SessionDeviceFacts"]

EXEC_AFFINITY_SM_COUNT = 0  # CU_EXEC_AFFINITY_TYPE_SM_COUNT
MAX_CLIQUES = 64  # entries one reply carries (cricket.x MAX_ATTRS)



class SessionDeviceFacts(SessionMemoryCalls, SessionModules, SessionDevResources, SessionArrays):
    """cuDeviceGetLuid, cuDevice(Host|P2P)AtomicCapabilities, cuDeviceGetExecAffinitySupport,
    cuCtxGetExecAffinity, cuDeviceGetFabricClusterUuid, cuDeviceGetClique*, cuGreenCtxGetId,
    cuArrayGetPlane, cuPointerSetAttribute."""

    # -- device facts -----------------------------------------------------------------------
    def device_luid(self, dev: int) -> tuple[bytes, int]:
        return self.backend.device_luid(self.device("cuDeviceGetLuid", dev))

    def host_atomic_capabilities(self, operations: Sequence[int], dev: int) -> list[int]:
        """No capabilities: the client's host memory is out of the GPU's reach."""
        call = "cuDeviceGetHostAtomicCapabilities"
        self.device(call, dev)
        check_operations(call, operations)
        return [0] * len(operations)

    def p2p_atomic_capabilities(self, operations: Sequence[int], src: int, dst: int) -> list[int]:
        call = "cuDeviceGetP2PAtomicCapabilities"
        self.device(call, src)
        self.device(call, dst)
        check_operations(call, operations)
        return self.backend.p2p_atomic_capabilities(list(operations), src, dst)

    def exec_affinity_support(self, typename: int, dev: int) -> int:
        """0 whatever the device supports: a context limited to some SMs cannot be made
        remotely (the backend still checks the type and the device)."""
        self.backend.exec_affinity_support(typename, self.device("cuDeviceGetExecAffinitySupport", dev))
        return 0

    def ctx_exec_affinity(self, typename: int) -> int:
        call = "cuCtxGetExecAffinity"
        ctx = self.current(call)
        if typename != EXEC_AFFINITY_SM_COUNT:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: unknown CUexecAffinityType {typename}")
        with self._on_device(ctx.dev):
            return self.bsession.ctx_exec_affinity(typename)

    def fabric_cluster_uuid(self, dev: int) -> bytes:
        return self.backend.fabric_cluster_uuid(self.device("cuDeviceGetFabricClusterUuid", dev))

    def clique_count(self, dev: int) -> int:
        return self.backend.clique_count(self.device("cuDeviceGetCliqueCount", dev))

    def clique_info(self, count: int, dev: int) -> list[tuple[int, int]]:
        dev = self.device("cuDeviceGetCliqueInfo", dev)
        count = min(count, MAX_CLIQUES)
        return self.backend.clique_info(count, dev)[:count]

    # -- green contexts ---------------------------------------------------------------------
    def green_ctx_get_id(self, handle: int) -> int:
        """The green context's handle counter (never reused in a server process, and a
        restore keeps handles); 0: the current context's green context."""
        call = "cuGreenCtxGetId"
        if handle == NO_CONTEXT:
            ctx = self.current(call)
            green = self._green_of(ctx.handle)
            if green is None:
                raise CudaError(
                    CUDA_ERROR_INVALID_CONTEXT,
                    f"{call}: no green context given and the current context {ctx.handle:#x} "
                    "is not a green context's",
                )
        else:
            self.require_init(call)
            green = self.handles.get(call, HandleKind.GREEN_CTX, handle, GreenCtxRecord)
        return green.handle & COUNTER_MASK

    # -- array planes -----------------------------------------------------------------------
    def array_get_plane(self, handle: int, plane: int) -> int:
        call = "cuArrayGetPlane"
        self.require_init(call)
        record = self.array(call, handle)
        try:
            with self._on_device(self._ctx(call, record.ctx).dev):
                self.bsession.array_get_plane(record.obj, plane)
        except CudaError as e:
            if e.code == CUDA_ERROR_INVALID_VALUE:
                raise CudaError(
                    e.code,
                    f"{call}: array {handle:#x} (CUarray_format {record.desc.format}) has no "
                    f"multi-planar format, so no plane {plane}",
                ) from None
            raise
        raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: array {handle:#x} has no planes")

    # -- pointer attributes -----------------------------------------------------------------
    def _sync_memops(self) -> set[tuple[int, int]]:
        """(base, buffer id) of each owned range with SYNC_MEMOPS set."""
        marked: set[tuple[int, int]] | None = getattr(self, "_sync_memops_set", None)
        if marked is None:
            marked = set()
            self._sync_memops_set = marked
        return marked

    def pointer_set_attribute(self, attribute: int, ptr: int, value: int) -> None:
        call = "cuPointerSetAttribute"
        self.current(call)
        if attribute != PA_SYNC_MEMOPS:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: CUpointer_attribute {attribute} cannot be set (only "
                "CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can)",
            )
        found = self.memory.find(ptr)
        if found is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {ptr:#x} is not inside any allocation of this session"
            )
        key = (found.base, found.buffer_id)
        if value:
            with self._on_device(found.dev):  # pending copies are done when it returns
                self.bsession.synchronize()
            self._sync_memops().add(key)
        else:
            self._sync_memops().discard(key)

    def pointer_attributes(self, attributes: Sequence[int], ptr: int) -> list[tuple[int, int, int]]:
        answers = super().pointer_attributes(attributes, ptr)
        if PA_SYNC_MEMOPS not in attributes or not self._sync_memops():
            return answers
        found = self.memory.find(ptr)
        if found is None or (found.base, found.buffer_id) not in self._sync_memops():
            return answers
        return [(a, e, 1 if a == PA_SYNC_MEMOPS and not e else v) for a, e, v in answers]
