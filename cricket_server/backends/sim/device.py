"""The sim device: an H200-like sm_90 device whose memory lives in host RAM."""

from __future__ import annotations

import threading
import uuid

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    CudaError,
)
from cricket_server.backends.sim.attributes import ATTRIBUTE_NUMBERS, H200_ATTRIBUTES

DEVICE_NAME = "Cricket Sim Device"
DEFAULT_TOTAL_MEM = 16 << 30
ARCH = 90

_A = ATTRIBUTE_NUMBERS
SM_COUNT = H200_ATTRIBUTES[_A["MULTIPROCESSOR_COUNT"]][1]
MAX_THREADS_PER_BLOCK = H200_ATTRIBUTES[_A["MAX_THREADS_PER_BLOCK"]][1]
MAX_THREADS_PER_SM = H200_ATTRIBUTES[_A["MAX_THREADS_PER_MULTIPROCESSOR"]][1]
MAX_BLOCKS_PER_SM = H200_ATTRIBUTES[_A["MAX_BLOCKS_PER_MULTIPROCESSOR"]][1]
REGS_PER_SM = H200_ATTRIBUTES[_A["MAX_REGISTERS_PER_MULTIPROCESSOR"]][1]
SHARED_PER_SM = H200_ATTRIBUTES[_A["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"]][1]
SHARED_PER_BLOCK = H200_ATTRIBUTES[_A["MAX_SHARED_MEMORY_PER_BLOCK"]][1]
SHARED_PER_BLOCK_OPTIN = H200_ATTRIBUTES[_A["MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"]][1]
RESERVED_SHARED_PER_BLOCK = H200_ATTRIBUTES[_A["RESERVED_SHARED_MEMORY_PER_BLOCK"]][1]
MAX_BLOCK_DIM = tuple(H200_ATTRIBUTES[_A[f"MAX_BLOCK_DIM_{d}"]][1] for d in "XYZ")
MAX_PERSISTING_L2 = H200_ATTRIBUTES[_A["MAX_PERSISTING_L2_CACHE_SIZE"]][1]
MAX_GRID_DIM = tuple(H200_ATTRIBUTES[_A[f"MAX_GRID_DIM_{d}"]][1] for d in "XYZ")
WARP = 32
ASSUMED_REGS = 32  # per thread, when the image does not say


class SimDevice:
    """One sim device: properties and the memory budget all sessions share."""

    def __init__(self, ordinal: int, total_mem: int = DEFAULT_TOTAL_MEM) -> None:
        self.ordinal = ordinal
        self.name = DEVICE_NAME
        self.total_mem = total_mem
        self.uuid = uuid.uuid5(uuid.NAMESPACE_URL, f"cricket-sim-device/{ordinal}").bytes
        self.pci_bus = 0x18 + ordinal
        self._used = 0
        self._lock = threading.Lock()

    @property
    def pci_bus_id(self) -> str:
        return f"0000:{self.pci_bus:02X}:00.0"

    def attribute(self, attrib: int) -> int:
        entry = H200_ATTRIBUTES.get(int(attrib))
        if entry is None:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"cuDeviceGetAttribute: unknown attribute {attrib}"
            )
        name, value = entry
        if name == "PCI_BUS_ID":
            return self.pci_bus
        if name == "MULTI_GPU_BOARD_GROUP_ID":
            return self.ordinal
        return value

    # -- memory budget ------------------------------------------------------------------------
    def charge(self, size: int) -> None:
        with self._lock:
            if self._used + size > self.total_mem:
                raise CudaError(
                    CUDA_ERROR_OUT_OF_MEMORY,
                    f"sim device {self.ordinal}: {size} more bytes would exceed its "
                    f"{self.total_mem} bytes ({self._used} in use)",
                )
            self._used += size

    def refund(self, size: int) -> None:
        with self._lock:
            self._used -= size

    def free_mem(self) -> int:
        with self._lock:
            return self.total_mem - self._used


def max_active_blocks(block_size: int, regs: int | None, shared_per_block: int) -> int:
    """Blocks of `block_size` threads resident on one SM (threads, blocks, registers, smem)."""
    if block_size <= 0 or block_size > MAX_THREADS_PER_BLOCK:
        return 0
    warps = -(-block_size // WARP)
    regs_per_warp = -(-(regs or ASSUMED_REGS) * WARP // 256) * 256
    limits = [
        MAX_THREADS_PER_SM // (warps * WARP),
        MAX_BLOCKS_PER_SM,
        REGS_PER_SM // (regs_per_warp * warps),
    ]
    if shared_per_block > SHARED_PER_BLOCK_OPTIN:
        return 0
    limits.append(SHARED_PER_SM // (shared_per_block + RESERVED_SHARED_PER_BLOCK))
    return max(0, min(limits))


def max_potential_block_size(
    regs: int | None, shared_per_block: int, block_size_limit: int, kernel_limit: int
) -> tuple[int, int]:
    """(min_grid_size, block_size) maximizing resident threads, as the CUDA occupancy API."""
    limit = min(kernel_limit, MAX_THREADS_PER_BLOCK)
    if block_size_limit > 0:
        limit = min(limit, block_size_limit)
    best = (0, 0)  # (resident threads, block size)
    for size in range(WARP * (limit // WARP) or limit, 0, -WARP):
        threads = max_active_blocks(size, regs, shared_per_block) * size
        if threads > best[0]:
            best = (threads, size)
    if best[1] == 0:
        return 0, 0
    return max_active_blocks(best[1], regs, shared_per_block) * SM_COUNT, best[1]
