"""Device facts, execution affinity, array planes and library modules on the cuda backend:
the driver's answers.

Some of these calls are newer than some drivers and cuda-python releases (the atomic
capabilities came with CUDA 13.0, the NVLink fabric queries later): `newer(name, call)` gives
the binding, or CUDA_ERROR_NOT_SUPPORTED naming the call when the server's cuda-python or
driver lacks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import CUDA_ERROR_NOT_SUPPORTED, CudaError
from ._driver import call, driver, enum_value

__all__ = ["CudaDeviceFacts", "CudaSessionFacts", "newer"]


def newer(name: str, call_name: str) -> Any:
    """The cuda-python function `name`, calling it turning a driver without it into
    CUDA_ERROR_NOT_SUPPORTED naming `call_name`."""
    fn = getattr(driver, name, None)
    if fn is None:
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED,
            f"{call_name}: the server's cuda-python has no {name} (a newer cuda-bindings has it)",
        )

    def run(*args: Any) -> Any:
        try:
            return fn(*args)
        except RuntimeError as e:  # the driver lacks it: FunctionNotFoundError, or before it
            if type(e).__name__ != "FunctionNotFoundError" and "not found" not in str(e):
                raise  # (cuda-bindings 12) RuntimeError('Function "cuX" not found')
            raise CudaError(
                CUDA_ERROR_NOT_SUPPORTED, f"{call_name}: the server's driver has no {name}"
            ) from None

    run.__name__ = name
    return run


def _operations(operations: Sequence[int], call_name: str) -> list[Any]:
    kind = getattr(driver, "CUatomicOperation", None)
    if kind is None:
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED, f"{call_name}: the server's cuda-python has no CUatomicOperation"
        )
    return [enum_value(kind, op, call_name) for op in operations]


class CudaDeviceFacts:
    """The device-fact methods of `CudaBackend`."""

    def device_handle(self, dev: int) -> Any:  # CudaBackend's
        raise NotImplementedError

    def device_luid(self, dev: int) -> tuple[bytes, int]:
        fn = newer("cuDeviceGetLuid", "cuDeviceGetLuid")
        luid, mask = call(fn, self.device_handle(dev))
        return bytes(luid)[:8].ljust(8, b"\0"), int(mask)

    def p2p_atomic_capabilities(self, operations: Sequence[int], src: int, dst: int) -> list[int]:
        name = "cuDeviceGetP2PAtomicCapabilities"
        fn = newer(name, name)
        ops = _operations(operations, name)
        caps = call(fn, ops, len(ops), self.device_handle(src), self.device_handle(dst))
        return [int(c) for c in caps]

    def exec_affinity_support(self, typename: int, dev: int) -> int:
        name = "cuDeviceGetExecAffinitySupport"
        kind = enum_value(driver.CUexecAffinityType, typename, name)
        return int(call(newer(name, name), kind, self.device_handle(dev)))

    def fabric_cluster_uuid(self, dev: int) -> bytes:
        name = "cuDeviceGetFabricClusterUuid"
        return bytes(call(newer(name, name), self.device_handle(dev)).bytes)

    def clique_count(self, dev: int) -> int:
        name = "cuDeviceGetCliqueCount"
        return int(call(newer(name, name), self.device_handle(dev)))

    def clique_info(self, count: int, dev: int) -> list[tuple[int, int]]:
        name = "cuDeviceGetCliqueInfo"
        infos, got = call(newer(name, name), count, self.device_handle(dev))
        return [(int(i.type), int(i.id)) for i in list(infos)[: int(got)]]


class CudaSessionFacts:
    """The execution-affinity, array-plane and library-module methods of `CudaSession`."""

    def _state(self, dev: int | None = None) -> Any:  # CudaSession's
        raise NotImplementedError

    def ctx_exec_affinity(self, typename: int) -> int:
        name = "cuCtxGetExecAffinity"
        self._state()
        kind = enum_value(driver.CUexecAffinityType, typename, name)
        param = call(newer(name, name), kind)
        return int(param.param.smCount.val)

    def array_get_plane(self, array: object, plane: int) -> object:
        self._state()
        call(driver.cuArrayGetPlane, array, plane)
        # Arrays of multi-planar formats are refused when made, so the driver answered
        # CUDA_ERROR_INVALID_VALUE above; a plane would need a handle of its own.
        raise CudaError(
            CUDA_ERROR_NOT_SUPPORTED, "cuArrayGetPlane: planes of multi-planar arrays are not remoted"
        )

    def library_get_module(self, library: object) -> object:
        self._state()  # the module of the device's context of the session
        return call(driver.cuLibraryGetModule, library)

    def library_get_unified_function(self, library: object, symbol: str) -> int:
        self._state()
        fn = driver.cuLibraryGetUnifiedFunction
        return int(call(fn, library, symbol.encode(), what=repr(symbol)))
