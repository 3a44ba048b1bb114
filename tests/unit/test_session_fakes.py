"""A small in-memory backend for the session-layer tests (no GPU, no sim backend needed).

Device memory is a dict of bytearrays, one per mapped chunk (and one per module global); the
fake records every call it gets so tests can check what reached the backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cricket_server.backends.base import (
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_NOT_FOUND,
    Backend,
    BackendSession,
    CudaError,
    GlobalInfo,
    ParamInfo,
)
from cricket_server.memory import AddressArena
from cricket_server.session import SessionManager

GRANULARITY = 2 << 20
ARENA_BASE = 0x7F0000000000
ARENA_SIZE = 1 << 30
GLOBALS_BASE = 0x10000000  # outside the arena, as a module's globals are on a real device
TOTAL_MEM = 1 << 30


class FakeMemory:
    """Sparse device memory: regions keyed by base address."""

    def __init__(self) -> None:
        self.regions: dict[int, bytearray] = {}

    def add(self, base: int, size: int) -> None:
        self.regions[base] = bytearray(size)

    def remove(self, base: int) -> None:
        del self.regions[base]

    def view(self, addr: int, size: int) -> memoryview:
        for base, data in self.regions.items():
            if base <= addr and addr + size <= base + len(data):
                return memoryview(data)[addr - base : addr - base + size]
        raise CudaError(CUDA_ERROR_ILLEGAL_ADDRESS, f"fake: [{addr:#x}, +{size}) is not mapped")


class FakeBacking:
    granularity = GRANULARITY

    def __init__(self, memory: FakeMemory, dev: int) -> None:
        self.memory = memory
        self.dev = dev
        self.mapped: dict[int, int] = {}

    def map_chunk(self, addr: int, size: int) -> object:
        self.memory.add(addr, size)
        self.mapped[addr] = size
        return ("chunk", addr)

    def unmap_chunk(self, addr: int, size: int, token: object) -> None:
        assert token == ("chunk", addr)
        self.memory.remove(addr)
        del self.mapped[addr]


@dataclass
class FakeFunction:
    name: str
    params: tuple[ParamInfo, ...]


@dataclass
class FakeModule:
    functions: dict[str, tuple[ParamInfo, ...]]
    globals: dict[str, GlobalInfo] = field(default_factory=dict)


# Every module the fake "loads" has these kernels and one 64-byte global.
KERNELS = {
    "add": (ParamInfo(0, 8), ParamInfo(8, 8), ParamInfo(16, 4)),  # (ptr, ptr, int): 20 bytes
    "noargs": (),
}


class FakeSession(BackendSession):
    def __init__(self, backend: FakeBackend) -> None:
        self.backend = backend
        self.memory = FakeMemory()
        self.backings: dict[int, FakeBacking] = {}
        self.calls: list[tuple[str, object]] = []
        self.devices: list[int] = []
        self.closed = 0
        self.live: set[int] = set()  # ids of live streams, events, modules
        self.launches: list[tuple[FakeFunction, bytes]] = []
        self.fail_next: Exception | None = None
        self._next_global = GLOBALS_BASE

    def _note(self, name: str, arg: object = None) -> None:
        self.calls.append((name, arg))
        if self.fail_next is not None:
            exc, self.fail_next = self.fail_next, None
            raise exc

    def _make(self, obj: object) -> object:
        self.live.add(id(obj))
        return obj

    def _drop(self, obj: object) -> None:
        self.live.remove(id(obj))

    def set_device(self, dev: int) -> None:
        self.devices.append(dev)

    def synchronize(self) -> None:
        self._note("synchronize")

    def get_limit(self, limit: int) -> int:
        return 1024 + limit

    def set_limit(self, limit: int, value: int) -> None:
        self._note("set_limit", (limit, value))

    def stream_priority_range(self) -> tuple[int, int]:
        return (0, -5)

    def chunk_backing(self, dev: int) -> FakeBacking:
        return self.backings.setdefault(dev, FakeBacking(self.memory, dev))

    def memcpy_htod(self, dst: int, data: memoryview, stream: object | None) -> None:
        self._note("memcpy_htod", stream)
        self.memory.view(dst, len(data))[:] = data

    def memcpy_dtoh(self, src: int, size: int, stream: object | None) -> bytes:
        self._note("memcpy_dtoh", stream)
        return bytes(self.memory.view(src, size))

    def memcpy_dtod(self, dst: int, src: int, size: int, stream: object | None) -> None:
        self.memory.view(dst, size)[:] = bytes(self.memory.view(src, size))

    def memset(self, dst: int, value: int, width: int, count: int, stream: object | None) -> None:
        self.memory.view(dst, width * count)[:] = value.to_bytes(width, "little") * count

    def mem_get_info(self) -> tuple[int, int]:
        used = sum(b.mapped.get(a, 0) for b in self.backings.values() for a in b.mapped)
        return TOTAL_MEM - used, TOTAL_MEM

    def module_load(self, image: bytes, jit_options: dict[int, int]) -> object:
        self._note("module_load", image)
        if not image.startswith(b"MOD"):
            raise CudaError(200, "cuModuleLoadData: fake: not a module image")
        return self._make(FakeModule(dict(KERNELS)))

    def module_unload(self, module: object) -> None:
        self._drop(module)

    def module_get_function(self, module: object, name: str) -> object:
        assert isinstance(module, FakeModule)
        if name not in module.functions:
            raise CudaError(CUDA_ERROR_NOT_FOUND, f"cuModuleGetFunction: no kernel {name!r}")
        return FakeFunction(name, module.functions[name])

    def module_get_global(self, module: object, name: str) -> GlobalInfo:
        assert isinstance(module, FakeModule)
        if name not in module.globals:
            module.globals[name] = GlobalInfo(self._next_global, 64)
            self.memory.add(self._next_global, 64)
            self._next_global += 0x1000
        return module.globals[name]

    def library_load(self, image: bytes, jit_options: dict[int, int]) -> object:
        return self._make(FakeModule(dict(KERNELS)))

    def library_unload(self, library: object) -> None:
        self._drop(library)

    def library_get_kernel(self, library: object, name: str) -> object:
        return self.module_get_function(library, name)

    def kernel_get_function(self, kernel: object) -> object:
        return kernel

    def func_get_attribute(self, attrib: int, func: object) -> int:
        return 100 + attrib

    def func_set_attribute(self, func: object, attrib: int, value: int) -> None:
        self._note("func_set_attribute", (attrib, value))

    def func_set_cache_config(self, func: object, config: int) -> None:
        self._note("func_set_cache_config", config)

    def func_param_info(self, func: object) -> Sequence[ParamInfo]:
        assert isinstance(func, FakeFunction)
        self._note("func_param_info", func.name)
        return func.params

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
        assert isinstance(func, FakeFunction)
        self._note("launch", stream)
        self.launches.append((func, bytes(params)))

    def stream_create(self, flags: int, priority: int) -> object:
        return self._make(["stream", flags, priority])

    def stream_destroy(self, stream: object) -> None:
        self._drop(stream)

    def stream_synchronize(self, stream: object | None) -> None:
        self._note("stream_synchronize", stream)

    def stream_query(self, stream: object | None) -> bool:
        return True

    def stream_wait_event(self, stream: object | None, event: object, flags: int) -> None:
        self._note("stream_wait_event", (stream, event))

    def event_create(self, flags: int) -> object:
        return self._make(["event", flags])

    def event_destroy(self, event: object) -> None:
        self._drop(event)

    def event_record(self, event: object, stream: object | None) -> None:
        self._note("event_record", stream)

    def event_synchronize(self, event: object) -> None:
        pass

    def event_query(self, event: object) -> bool:
        return False

    def event_elapsed_time(self, start: object, end: object) -> float:
        return 1.5

    def occupancy_max_active_blocks(
        self, func: object, block_size: int, dynamic_smem: int, flags: int
    ) -> int:
        return 2048 // block_size

    def occupancy_max_potential_block_size(
        self, func: object, dynamic_smem: int, block_size_limit: int, flags: int
    ) -> tuple[int, int]:
        return (132, 1024)

    def close(self) -> None:
        self.closed += 1


class FakeBackend(Backend):
    name = "fake"

    def __init__(self, devices: int = 2) -> None:
        self.devices = devices
        self.sessions: list[FakeSession] = []

    def driver_version(self) -> int:
        return 13000

    def runtime_version(self) -> int:
        return 13000

    def device_count(self) -> int:
        return self.devices

    def device_name(self, dev: int) -> str:
        return f"Fake GPU {dev}"

    def device_attribute(self, attrib: int, dev: int) -> int:
        return attrib * 10 + dev

    def device_total_mem(self, dev: int) -> int:
        return TOTAL_MEM

    def device_uuid(self, dev: int) -> bytes:
        return bytes([dev]) * 16

    def device_pci_bus_id(self, dev: int) -> str:
        return f"0000:{dev:02x}:00.0"

    def address_space(self) -> tuple[int, int, int]:
        return ARENA_BASE, ARENA_SIZE, GRANULARITY

    def open_session(self) -> FakeSession:
        session = FakeSession(self)
        self.sessions.append(session)
        return session


def make_manager(devices: int = 2) -> tuple[SessionManager, FakeBackend]:
    backend = FakeBackend(devices)
    arena = AddressArena(ARENA_BASE, ARENA_SIZE, GRANULARITY)
    return SessionManager(backend, arena), backend
