"""Device facts, execution affinity and library modules on the sim backend.

Sim devices are peers of one another over one host memory (`SimBackend.p2p_attribute` says
native atomics are supported): over such a link every CUatomicOperation is native, as 32
and 64-bit scalars, signed and unsigned for the integer operations, reductions too. A
context may use all of its device's SMs (MULTIPROCESSOR_COUNT). A library has one module
for every context (`SimLibrary.module`). LUIDs, NVLink fabric facts and unified functions:
the base defaults (CUDA's answers on Linux without a fabric, and for a library without
unified functions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cricket_server.backends.atomics import ATOMIC_OPERATIONS, check_operations
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)

if TYPE_CHECKING:
    from cricket_server.backends.sim import device as dv

__all__ = ["ATOMIC_OPERATIONS", "SimDeviceFacts", "SimSessionFacts", "sim_p2p_capabilities"]

_FLOAT_OPERATIONS = range(10, 13)
SIGNED, UNSIGNED, REDUCTION, SCALAR_32, SCALAR_64 = 1, 2, 4, 8, 16
ATTR_SM_COUNT = 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
EXEC_AFFINITY_SM_COUNT = 0



def sim_p2p_capabilities(operations: Sequence[int]) -> list[int]:
    """The capability bits of each operation over a sim peer link."""
    sizes = SCALAR_32 | SCALAR_64 | REDUCTION
    return [sizes if op in _FLOAT_OPERATIONS else sizes | SIGNED | UNSIGNED for op in operations]


class SimDeviceFacts:
    """The device-fact methods of `SimBackend`."""

    def device(self, dev: int) -> dv.SimDevice:  # SimBackend's
        raise NotImplementedError

    def p2p_atomic_capabilities(self, operations: Sequence[int], src: int, dst: int) -> list[int]:
        call = "cuDeviceGetP2PAtomicCapabilities"
        self.device(src)
        self.device(dst)
        if src == dst:
            raise CudaError(
                CUDA_ERROR_INVALID_DEVICE, f"{call}: device {src} is not a peer of itself"
            )
        check_operations(call, operations)
        return sim_p2p_capabilities(operations)


class SimSessionFacts:
    """The execution-affinity and library-module methods of `SimSession`."""

    _dev: int

    def _sm_count(self) -> int:
        return int(self.backend.device_attribute(ATTR_SM_COUNT, self._dev))  # type: ignore[attr-defined]

    def ctx_exec_affinity(self, typename: int) -> int:
        if typename != EXEC_AFFINITY_SM_COUNT:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"cuCtxGetExecAffinity: unknown CUexecAffinityType {typename}",
            )
        return self._sm_count()

    def library_get_module(self, library: object) -> object:
        return self._library(library, "cuLibraryGetModule").module  # type: ignore[attr-defined]
