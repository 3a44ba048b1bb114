"""Host implementations of kernels, keyed by kernel name: how the sim "runs" device code.

Register one with the decorator; the name is the kernel's symbol, mangled or plain (a
mangled `_Z10vector_addPKfS0_Pfi` also finds an implementation registered as `vector_add`):

    @sim_kernel("vector_add")
    def vector_add(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
        a, b, c, n = args.ptr(0), args.ptr(1), args.ptr(2), args.i32(3)
        m = max(0, min(n, launch.threads))
        mem.array(c, "f4", m)[:] = mem.array(a, "f4", m) + mem.array(b, "f4", m)

`launch` holds grid, block, shared memory, the module's globals (name -> address) and a
`cancelled` event; `args` reads parameter i as bytes or a typed scalar per the kernel's
parameter layout; `mem` gives numpy views of device memory and raises
CUDA_ERROR_ILLEGAL_ADDRESS outside of it. Implementations must do what the CUDA kernel does
for every launch configuration (vectorized with numpy where they can). Below: the kernels of
tests/kernels/test_kernels.cu.
"""

from __future__ import annotations

import re
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
    ParamInfo,
)
from cricket_server.backends.sim.devmem import KernelMemory

CUDA_ERROR_LAUNCH_TIMEOUT = 702
WAIT_LIMIT_S = 300.0  # a spinning kernel gives up after this long (a GPU watchdog would)


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int = 0
    globals: Mapping[str, int] = field(default_factory=dict)
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def threads(self) -> int:
        """Threads in x of the whole grid: gridDim.x * blockDim.x."""
        return self.grid[0] * self.block[0]

    @property
    def total_threads(self) -> int:
        return self.blocks * self.threads_per_block


class KernelArgs:
    """The parameters of one launch, cut from the packed buffer per the parameter layout."""

    def __init__(self, raw: list[bytes]) -> None:
        self.raw = raw

    def __len__(self) -> int:
        return len(self.raw)

    def _unpack(self, i: int, fmt: str):
        data = self.raw[i]
        size = struct.calcsize(fmt)
        if len(data) < size:
            raise CudaError(
                1, f"sim kernel: parameter {i} has {len(data)} bytes, read as {size}"
            )  # CUDA_ERROR_INVALID_VALUE
        return struct.unpack_from(fmt, data)[0]

    def i32(self, i: int) -> int:
        return self._unpack(i, "<i")

    def u32(self, i: int) -> int:
        return self._unpack(i, "<I")

    def i64(self, i: int) -> int:
        return self._unpack(i, "<q")

    def u64(self, i: int) -> int:
        return self._unpack(i, "<Q")

    ptr = u64

    def f32(self, i: int) -> float:
        return self._unpack(i, "<f")

    def f64(self, i: int) -> float:
        return self._unpack(i, "<d")


HostKernel = Callable[[Launch, KernelArgs, KernelMemory], None]
_REGISTRY: dict[str, HostKernel] = {}


def sim_kernel(*names: str) -> Callable[[HostKernel], HostKernel]:
    """Register the decorated function as the host implementation of kernels `names`."""

    def register(fn: HostKernel) -> HostKernel:
        for name in names or (fn.__name__,):
            _REGISTRY[name] = fn
        return fn

    return register


def plain_name(symbol: str) -> str:
    """`_Z10vector_addPKfS0_Pfi` -> `vector_add` (Itanium mangling of a free function)."""
    match = re.match(r"_Z(?:L)?(\d+)", symbol)
    if not match:
        return symbol
    start = match.end()
    return symbol[start : start + int(match.group(1))]


def find_kernel(symbol: str) -> HostKernel | None:
    return _REGISTRY.get(symbol) or _REGISTRY.get(plain_name(symbol))


def host_kernel_and_args(name: str, params: Sequence[ParamInfo], raw: bytes, call: str) -> tuple[HostKernel, KernelArgs]:
    """The host implementation of kernel `name` and its arguments split from the packed
    `raw` bytes by the parameter layout; NOT_SUPPORTED for an unknown kernel, INVALID_VALUE
    for too few bytes."""
    host = find_kernel(name)
    if host is None:
        raise CudaError(CUDA_ERROR_NOT_SUPPORTED, f"{call}: sim has no host implementation of kernel {name!r}")
    need = max((p.offset + p.size for p in params), default=0)
    if len(raw) < need:
        raise CudaError(
            CUDA_ERROR_INVALID_VALUE,
            f"{call}: kernel {name!r} takes {need} bytes of parameters ({len(params)} parameters), "
            f"got {len(raw)}",
        )
    return host, KernelArgs([raw[p.offset : p.offset + p.size] for p in params])


def registered() -> list[str]:
    return sorted(_REGISTRY)


# -- the test kernels (tests/kernels/test_kernels.cu) ------------------------------------------
def _first_n(launch: Launch, n: int) -> int:
    """How many of i < n the grid covers with i = blockIdx.x * blockDim.x + threadIdx.x."""
    return max(0, min(n, launch.threads))


@sim_kernel("empty")
def empty(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    pass


@sim_kernel("vector_add", "VecAdd_kernel")  # VecAdd_kernel: NVIDIA's vectorAddMMAP sample
def vector_add(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    n = _first_n(launch, args.i32(3))
    if n:
        a, b = mem.array(args.ptr(0), np.float32, n), mem.array(args.ptr(1), np.float32, n)
        np.add(a, b, out=mem.array(args.ptr(2), np.float32, n))


@sim_kernel("saxpy")
def saxpy(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    n = _first_n(launch, args.i32(3))
    if n:
        a = np.float32(args.f32(0))
        x, y = mem.array(args.ptr(1), np.float32, n), mem.array(args.ptr(2), np.float32, n)
        y[:] = a * x + y


@sim_kernel("list_sum")
def list_sum(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    node, total, steps = args.ptr(0), 0, 0
    while node:
        if launch.cancelled.is_set():
            return
        next_ptr, value = struct.unpack("<Qi", mem.read(node, 12))
        total = (total + value + 2**31) % 2**32 - 2**31  # int arithmetic wraps
        node = next_ptr
        steps += 1
        if steps % 65536 == 0 and launch.cancelled.is_set():
            return
    mem.store(args.ptr(1), np.int32, total)


@sim_kernel("add_to_counter")
def add_to_counter(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    counter = launch.globals["counter"]
    old = int(mem.load(counter, np.int32))
    total = old + args.i32(0) * launch.total_threads
    mem.store(counter, np.int32, (total + 2**31) % 2**32 - 2**31)


@sim_kernel("read_globals")
def read_globals(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    n = _first_n(launch, args.i32(1))
    if n:
        value = int(mem.load(launch.globals["counter"], np.int32)) + int(
            mem.load(launch.globals["bias"], np.int32)
        )
        mem.array(args.ptr(0), np.int32, n)[:] = np.int32((value + 2**31) % 2**32 - 2**31)


@sim_kernel("fill_u32")
def fill_u32(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    n = args.u64(2) if launch.threads else 0
    if n:
        mem.array(args.ptr(0), np.uint32, n)[:] = np.uint32(args.u32(1))


@sim_kernel("poke")
def poke(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    mem.store(args.ptr(0), np.int32, args.i32(1))


@sim_kernel("wait_flag")
def wait_flag(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    flag, done = args.ptr(0), args.ptr(1)
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not mem.load(flag, np.int32):
        if launch.cancelled.wait(0.0005):
            return
        if time.monotonic() > deadline:
            raise CudaError(
                CUDA_ERROR_LAUNCH_TIMEOUT,
                f"kernel 'wait_flag': flag at {flag:#x} still 0 after {WAIT_LIMIT_S:.0f} s",
            )
    mem.store(done, np.int32, 1)


# -- the kernels of examples/cuda_python (NVIDIA's cuda-python samples) -----------------------
_SIM_CLOCK = [0]  # a clock64() that only moves forward
_SIM_CLOCK_LOCK = threading.Lock()


def _clock64(ticks: int) -> int:
    """The sim's clock64(): `ticks` later than the last reading, never lower than real time."""
    with _SIM_CLOCK_LOCK:
        _SIM_CLOCK[0] = max(_SIM_CLOCK[0] + ticks, time.monotonic_ns())
        return _SIM_CLOCK[0]


@sim_kernel("timedReduction")
def timed_reduction(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    """Each block: its start clock, the minimum of input[0 : 2 * blockDim.x], its end clock."""
    blocks, threads = launch.grid[0], launch.block[0]
    timer = mem.array(args.ptr(2), np.int64, 2 * blocks)
    timer[:blocks] = [_clock64(1) for _ in range(blocks)]
    smallest = np.float32(mem.array(args.ptr(0), np.float32, 2 * threads).min())
    mem.array(args.ptr(1), np.float32, blocks)[:] = smallest
    timer[blocks:] = [_clock64(2 * threads) for _ in range(blocks)]


@sim_kernel("init_array")
def init_array(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    """g_data[idx] += *factor, num_iterations times, for every thread's idx."""
    n = launch.threads
    if n:
        factor = int(mem.load(args.ptr(1), np.int32))
        data = mem.array(args.ptr(0), np.int32, n)
        data += np.int32(factor * max(0, args.i32(2)))


@sim_kernel("vectorAddGPU")
def vector_add_gpu(launch: Launch, args: KernelArgs, mem: KernelMemory) -> None:
    vector_add(launch, args, mem)
