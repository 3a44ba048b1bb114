"""The sim backend through its Python API: device, memory, copies, memsets, modules, launches."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from bindings_mirror import same_release

from cricket_server.backends.base import (
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_OUT_OF_MEMORY,
    CudaError,
    ParamInfo,
)
from cricket_server.backends.sim import SimBackend, SimSession
from cricket_server.backends.sim.attributes import ATTRIBUTE_NUMBERS, H200_ATTRIBUTES
from cricket_server.backends.sim.kernels import KernelArgs, Launch, plain_name, sim_kernel
from cricket_server.memory import AddressArena, DeviceHeap

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
ATTR = ATTRIBUTE_NUMBERS


class Rig:
    """A sim session with a heap on device 0 and the test kernels loaded."""

    def __init__(self, backend: SimBackend, image: str = "test_kernels.fatbin") -> None:
        self.backend = backend
        self.arena = AddressArena(*backend.address_space())
        self.session: SimSession = backend.open_session()
        self.session.set_device(0)
        self.heap = DeviceHeap(self.arena, self.session.chunk_backing(0))
        self.module = self.session.module_load((KERNELS / image).read_bytes(), {})

    def alloc(self, size: int) -> int:
        return self.heap.alloc(size)

    def put(self, array: np.ndarray) -> int:
        ptr = self.alloc(array.nbytes)
        self.session.memcpy_htod(ptr, memoryview(array).cast("B"), None)
        return ptr

    def get(self, ptr: int, dtype, count: int, stream: object | None = None) -> np.ndarray:
        data = self.session.memcpy_dtoh(ptr, np.dtype(dtype).itemsize * count, stream)
        return np.frombuffer(bytes(data), dtype=dtype)

    def func(self, name: str) -> object:
        return self.session.module_get_function(self.module, name)

    def launch(self, name: str, grid: int, block: int, fmt: str = "", *args, stream=None) -> None:
        func = self.func(name)
        params = self.pack(func, fmt, *args)
        self.session.launch(func, (grid, 1, 1), (block, 1, 1), 0, stream, memoryview(params))

    def pack(self, func: object, fmt: str, *args) -> bytes:
        layout: list[ParamInfo] = list(self.session.func_param_info(func))
        buf = bytearray(max((p.offset + p.size for p in layout), default=0))
        for p, code, value in zip(layout, fmt, args, strict=True):
            struct.pack_into("<" + code, buf, p.offset, value)
        return bytes(buf)

    def close(self) -> None:
        self.heap.release_all()
        self.session.close()


@pytest.fixture
def backend() -> SimBackend:
    return SimBackend(device_count=2, total_mem=1 << 30)


@pytest.fixture
def rig(backend: SimBackend) -> Iterator[Rig]:
    rig = Rig(backend)
    yield rig
    rig.close()


# -- device ------------------------------------------------------------------------------------
def test_device_properties(backend: SimBackend) -> None:
    assert backend.name == "sim"
    assert backend.device_count() == 2
    assert backend.device_name(0) == "Cricket Sim Device"
    assert backend.device_total_mem(1) == 1 << 30
    assert SimBackend().device_total_mem(0) == 16 << 30
    assert backend.device_attribute(ATTR["COMPUTE_CAPABILITY_MAJOR"], 0) == 9
    assert backend.device_attribute(ATTR["COMPUTE_CAPABILITY_MINOR"], 0) == 0
    assert backend.device_attribute(ATTR["MAX_THREADS_PER_BLOCK"], 0) == 1024
    assert backend.device_attribute(ATTR["WARP_SIZE"], 0) == 32
    assert backend.device_attribute(ATTR["MULTIPROCESSOR_COUNT"], 0) == 132
    assert backend.device_attribute(ATTR["UNIFIED_ADDRESSING"], 0) == 1
    assert len(backend.device_uuid(0)) == 16 and backend.device_uuid(0) != backend.device_uuid(1)
    assert backend.device_pci_bus_id(1) != backend.device_pci_bus_id(0)
    bus = backend.device_attribute(ATTR["PCI_BUS_ID"], 1)
    assert backend.device_pci_bus_id(1) == f"0000:{bus:02X}:00.0"
    assert backend.driver_version() >= 12000 and backend.runtime_version() >= 12000


def test_every_attribute_answers(backend: SimBackend) -> None:
    for number in H200_ATTRIBUTES:
        assert isinstance(backend.device_attribute(number, 0), int)
    for bad in (0, max(H200_ATTRIBUTES) + 1):
        with pytest.raises(CudaError) as err:
            backend.device_attribute(bad, 0)
        assert err.value.code == CUDA_ERROR_INVALID_VALUE


def test_attribute_table_matches_cuda_bindings() -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    for attr in driver.CUdevice_attribute:
        if attr.name == "CU_DEVICE_ATTRIBUTE_MAX":
            continue
        if int(attr) not in H200_ATTRIBUTES and not same_release():
            continue  # added by a newer cuda-bindings than the one the table follows
        assert H200_ATTRIBUTES[int(attr)][0] == attr.name.removeprefix("CU_DEVICE_ATTRIBUTE_")


def test_bad_device(backend: SimBackend) -> None:
    with pytest.raises(CudaError) as err:
        backend.device_name(2)
    assert err.value.code == CUDA_ERROR_INVALID_DEVICE
    session = backend.open_session()
    with pytest.raises(CudaError):
        session.set_device(5)
    session.close()


def test_limits_and_priorities(rig: Rig) -> None:
    s = rig.session
    assert s.get_limit(0) == 1024  # CU_LIMIT_STACK_SIZE
    s.set_limit(2, 64 << 20)  # CU_LIMIT_MALLOC_HEAP_SIZE
    assert s.get_limit(2) == 64 << 20
    s.set_limit(1, 4 << 20)
    assert s.get_limit(1) == 4 << 20
    with pytest.raises(CudaError):
        s.get_limit(99)
    least, greatest = s.stream_priority_range()
    assert least == 0 and greatest < 0


def test_limits_answer_as_the_driver_does_on_an_h200(rig: Rig) -> None:
    """What local cuda-python gave on an H200 (tests/gpu/test_error_parity.py compares)."""
    s = rig.session
    codes = {}
    for name, call in {
        "unknown": lambda: s.set_limit(99, 1),
        "sync depth": lambda: s.get_limit(3),
        "stack 1 TiB": lambda: s.set_limit(0, 1 << 40),
        "L2 fetch 1 TiB": lambda: s.set_limit(5, 1 << 40),
        "persisting L2 1 TiB": lambda: s.set_limit(6, 1 << 40),
    }.items():
        with pytest.raises(CudaError) as err:
            call()
        codes[name] = err.value.code
    assert codes == {
        "unknown": 1,  # CUDA_ERROR_INVALID_VALUE
        "sync depth": 215,  # CUDA_ERROR_UNSUPPORTED_LIMIT
        "stack 1 TiB": 1,
        "L2 fetch 1 TiB": 1,
        "persisting L2 1 TiB": 1,
    }
    s.set_limit(2, 1 << 40)  # the malloc heap takes it (so did the H200)
    assert s.get_limit(2) == 1 << 40


# -- memory ------------------------------------------------------------------------------------
def test_addresses_look_like_a_gpu(rig: Rig) -> None:
    ptr = rig.alloc(1000)
    assert ptr >= 0x600000000000 and ptr % 256 == 0


def test_copies_round_trip(rig: Rig) -> None:
    data = np.arange(1000, dtype=np.int32)
    a = rig.put(data)
    b = rig.alloc(data.nbytes)
    rig.session.memcpy_dtod(b, a, data.nbytes, None)
    assert (rig.get(b, np.int32, 1000) == data).all()
    # a copy into the middle of an allocation
    rig.session.memcpy_htod(b + 40, memoryview(b"\xff" * 8), None)
    out = rig.get(b, np.int32, 1000)
    assert (out[10:12] == -1).all() and out[9] == 9 and out[12] == 12


def test_copies_outside_device_memory_are_invalid_value(rig: Rig) -> None:
    ptr = rig.alloc(256)
    chunk_end = rig.heap.arena.base + rig.heap.mapped()
    for attempt in (
        lambda: rig.session.memcpy_htod(0x1000, memoryview(b"x"), None),
        lambda: rig.session.memcpy_dtoh(chunk_end, 4, None),
        lambda: rig.session.memcpy_dtoh(chunk_end - 2, 4, None),
        lambda: rig.session.memcpy_dtod(ptr, 0xDEAD0000, 16, None),
        lambda: rig.session.memset(0x10, 0, 1, 4, None),
    ):
        with pytest.raises(CudaError) as err:
            attempt()
        assert err.value.code == CUDA_ERROR_INVALID_VALUE


@pytest.mark.parametrize(
    ("width", "value", "dtype"),
    [(1, 0xAB, np.uint8), (2, 0xBEEF, np.uint16), (4, 0xDEADBEEF, np.uint32)],
)
def test_memset_every_width(rig: Rig, width: int, value: int, dtype) -> None:
    ptr = rig.put(np.zeros(64, dtype=np.uint8))
    rig.session.memset(ptr + 8, value, width, 40 // width, None)
    raw = rig.get(ptr, np.uint8, 64)
    assert (raw[:8] == 0).all() and (raw[48:] == 0).all()
    assert (raw[8:48].view(dtype) == value).all()


def test_memset_misaligned_or_bad_width(rig: Rig) -> None:
    ptr = rig.alloc(64)
    with pytest.raises(CudaError) as err:
        rig.session.memset(ptr + 1, 0, 4, 2, None)
    assert err.value.code == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError):
        rig.session.memset(ptr, 0, 8, 2, None)


def test_mem_get_info_and_out_of_memory(rig: Rig) -> None:
    free0, total = rig.session.mem_get_info()
    assert total == 1 << 30
    ptr = rig.alloc(64 << 20)
    free1, _ = rig.session.mem_get_info()
    assert free0 - free1 == 64 << 20
    rig.heap.free(ptr)
    assert rig.session.mem_get_info()[0] == free0
    with pytest.raises(CudaError) as err:
        rig.alloc(2 << 30)
    assert err.value.code == CUDA_ERROR_OUT_OF_MEMORY


def test_sessions_do_not_see_each_other(backend: SimBackend, rig: Rig) -> None:
    ptr = rig.put(np.ones(4, dtype=np.int32))
    other = backend.open_session()
    with pytest.raises(CudaError):
        other.memcpy_dtoh(ptr, 16, None)
    other.close()


# -- modules -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "image", ["test_kernels.sm_90.cubin", "test_kernels.fatbin", "test_kernels.ptx"]
)
def test_module_from_every_image_kind(backend: SimBackend, image: str) -> None:
    rig = Rig(backend, image)
    try:
        a = rig.put(np.arange(10, dtype=np.float32))
        b = rig.put(np.full(10, 2, dtype=np.float32))
        c = rig.alloc(40)
        rig.launch("vector_add", 1, 32, "QQQi", a, b, c, 10)
        assert (rig.get(c, np.float32, 10) == np.arange(10) + 2).all()
        assert rig.session.module_get_global(rig.module, "bias").size == 4
    finally:
        rig.close()


def test_module_lookup_errors(rig: Rig) -> None:
    with pytest.raises(CudaError) as err:
        rig.session.module_get_function(rig.module, "nope")
    assert err.value.code == CUDA_ERROR_NOT_FOUND and "'nope'" in err.value.message
    with pytest.raises(CudaError) as err:
        rig.session.module_get_global(rig.module, "nope")
    assert err.value.code == CUDA_ERROR_NOT_FOUND


def test_module_globals_have_initial_values_and_are_writable(rig: Rig) -> None:
    bias = rig.session.module_get_global(rig.module, "bias")
    counter = rig.session.module_get_global(rig.module, "counter")
    assert rig.get(bias.address, np.int32, 1)[0] == 7
    assert rig.get(counter.address, np.int32, 1)[0] == 0
    rig.session.memcpy_htod(counter.address, memoryview(struct.pack("<i", 5)), None)
    out = rig.alloc(4 * 8)
    rig.launch("read_globals", 1, 8, "Qi", out, 8)
    assert (rig.get(out, np.int32, 8) == 12).all()


def test_unload_makes_functions_invalid(rig: Rig) -> None:
    func = rig.func("empty")
    rig.session.module_unload(rig.module)
    with pytest.raises(CudaError) as err:
        rig.session.launch(func, (1, 1, 1), (1, 1, 1), 0, None, memoryview(b""))
    assert err.value.code == CUDA_ERROR_INVALID_HANDLE


def test_library_api(rig: Rig) -> None:
    s = rig.session
    lib = s.library_load((KERNELS / "test_kernels.sm_90.cubin").read_bytes(), {})
    func = s.kernel_get_function(s.library_get_kernel(lib, "fill_u32"))
    ptr = rig.alloc(16)
    s.launch(func, (1, 1, 1), (4, 1, 1), 0, None, memoryview(rig.pack(func, "QIQ", ptr, 9, 4)))
    assert (rig.get(ptr, np.uint32, 4) == 9).all()
    s.library_unload(lib)


def test_a_zstd_compressed_fatbin_runs(rig: Rig) -> None:
    """CUDA 13 compresses fatbin entries with zstd (nvcc's default, cuBLAS's kernels)."""
    s = rig.session
    module = s.module_load((KERNELS / "test_kernels.compressed.fatbin").read_bytes(), {})
    func = s.module_get_function(module, "fill_u32")
    ptr = rig.alloc(16)
    s.launch(func, (1, 1, 1), (4, 1, 1), 0, None, memoryview(rig.pack(func, "QIQ", ptr, 7, 4)))
    assert (rig.get(ptr, np.uint32, 4) == 7).all()


def test_an_entry_compressed_the_older_way_is_not_supported(rig: Rig) -> None:
    data = bytearray((KERNELS / "test_kernels.compressed.fatbin").read_bytes())
    flags_at = 16 + 40  # the first entry's flags (after the 16-byte fatbin header)
    flags = int.from_bytes(data[flags_at : flags_at + 8], "little")
    data[flags_at : flags_at + 8] = ((flags & ~0x8000) | 0x2000).to_bytes(8, "little")
    with pytest.raises(CudaError) as err:
        rig.session.module_load(bytes(data), {})
    assert err.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert "compressed" in err.value.message


# -- functions ---------------------------------------------------------------------------------
def test_param_info_and_attributes(rig: Rig) -> None:
    s = rig.session
    func = rig.func("saxpy")
    assert list(s.func_param_info(func)) == [
        ParamInfo(0, 4), ParamInfo(8, 8), ParamInfo(16, 8), ParamInfo(24, 4)
    ]  # fmt: skip
    assert s.func_get_attribute(0, func) == 1024  # MAX_THREADS_PER_BLOCK
    assert 0 < s.func_get_attribute(4, func) <= 255  # NUM_REGS from EIATTR_REGCOUNT
    assert s.func_get_attribute(6, func) == 90  # BINARY_VERSION
    assert s.func_get_attribute(8, func) == 48 * 1024  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    s.func_set_attribute(func, 8, 100 * 1024)
    assert s.func_get_attribute(8, func) == 100 * 1024
    with pytest.raises(CudaError):
        s.func_set_attribute(func, 8, 1 << 20)
    with pytest.raises(CudaError):
        s.func_set_attribute(func, 0, 5)
    s.func_set_cache_config(func, 1)
    with pytest.raises(CudaError):
        s.func_get_attribute(99, func)


def test_occupancy(rig: Rig) -> None:
    s = rig.session
    func = rig.func("vector_add")
    assert s.occupancy_max_active_blocks(func, 256, 0, 0) == 8  # 2048 threads per SM
    assert s.occupancy_max_active_blocks(func, 32, 0, 0) == 32  # 32 blocks per SM
    assert s.occupancy_max_active_blocks(func, 2048, 0, 0) == 0
    assert s.occupancy_max_active_blocks(func, 256, 200 * 1024, 0) == 1
    min_grid, block = s.occupancy_max_potential_block_size(func, 0, 0, 0)
    assert block % 32 == 0 and 0 < block <= 1024 and min_grid >= 132
    _, limited = s.occupancy_max_potential_block_size(func, 0, 200, 0)
    assert limited <= 200


# -- launches ----------------------------------------------------------------------------------
def test_empty_kernel(rig: Rig) -> None:
    rig.launch("empty", 1, 1)
    rig.session.synchronize()


def test_vector_add_partial_grid(rig: Rig) -> None:
    n = 1000
    a = rig.put(np.arange(n, dtype=np.float32))
    b = rig.put(np.arange(n, dtype=np.float32) * 2)
    c = rig.put(np.full(n, -1, dtype=np.float32))
    rig.launch("vector_add", 3, 256, "QQQi", a, b, c, n)  # 768 threads cover 768 elements
    out = rig.get(c, np.float32, n)
    assert (out[:768] == np.arange(768) * 3).all()
    assert (out[768:] == -1).all()


def test_vector_add_large(rig: Rig) -> None:
    n = 16 << 20
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    a, b, c = rig.put(x), rig.put(x), rig.alloc(4 * n)
    rig.launch("vector_add", n // 256, 256, "QQQi", a, b, c, n)
    assert np.array_equal(rig.get(c, np.float32, n), x + x)


def test_saxpy(rig: Rig) -> None:
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    px, py = rig.put(x), rig.put(y)
    rig.launch("saxpy", 1, 128, "fQQi", 2.5, px, py, 100)
    assert np.allclose(rig.get(py, np.float32, 100), 2.5 * x + 1)


def test_list_sum_follows_pointers_in_device_memory(rig: Rig) -> None:
    values = [3, -1, 10, 7, 100]
    nodes = [rig.alloc(16) for _ in values]
    for i, (node, value) in enumerate(zip(nodes, values, strict=True)):
        nxt = nodes[i + 1] if i + 1 < len(nodes) else 0
        rig.session.memcpy_htod(node, memoryview(struct.pack("<Qi4x", nxt, value)), None)
    out = rig.alloc(4)
    rig.launch("list_sum", 1, 1, "QQ", nodes[0], out)
    assert rig.get(out, np.int32, 1)[0] == sum(values)


def test_add_to_counter_uses_the_module_global(rig: Rig) -> None:
    rig.launch("add_to_counter", 4, 64, "i", 3)
    rig.launch("add_to_counter", 1, 1, "i", -2)
    counter = rig.session.module_get_global(rig.module, "counter")
    assert rig.get(counter.address, np.int32, 1)[0] == 4 * 64 * 3 - 2


def test_fill_u32(rig: Rig) -> None:
    ptr = rig.put(np.zeros(1000, dtype=np.uint32))
    rig.launch("fill_u32", 2, 32, "QIQ", ptr, 0xCAFEF00D, 999)
    out = rig.get(ptr, np.uint32, 1000)
    assert (out[:999] == 0xCAFEF00D).all() and out[999] == 0


def test_illegal_address_is_sticky(rig: Rig) -> None:
    rig.launch("poke", 1, 1, "Qi", 0x10, 1)  # launches are asynchronous: no error yet
    with pytest.raises(CudaError) as err:
        rig.session.synchronize()
    assert err.value.code == CUDA_ERROR_ILLEGAL_ADDRESS
    assert "poke" in err.value.message
    with pytest.raises(CudaError) as again:
        rig.launch("empty", 1, 1)
    assert again.value.code == CUDA_ERROR_ILLEGAL_ADDRESS


def test_kernel_without_host_implementation(rig: Rig) -> None:
    ptx = b"""
    .version 8.0
    .target sm_90
    .address_size 64
    .visible .entry mystery(.param .u32 mystery_param_0) { ret; }
    """
    module = rig.session.module_load(ptx, {})
    func = rig.session.module_get_function(module, "mystery")
    with pytest.raises(CudaError) as err:
        rig.session.launch(func, (1, 1, 1), (1, 1, 1), 0, None, memoryview(bytes(4)))
    assert err.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert err.value.message == "cuLaunchKernel: sim has no host implementation of kernel 'mystery'"


def test_launch_argument_checks(rig: Rig) -> None:
    func = rig.func("vector_add")
    s = rig.session
    for grid, block, smem, params in (
        ((1, 1, 1), (1, 1, 1), 0, bytes(20)),  # too few parameter bytes
        ((1, 1, 1), (2048, 1, 1), 0, bytes(28)),  # block too large
        ((1, 1, 1), (32, 32, 2), 0, bytes(28)),  # 2048 threads
        ((0, 1, 1), (1, 1, 1), 0, bytes(28)),  # empty grid
        ((1, 1, 1), (1, 1, 1), 1 << 20, bytes(28)),  # shared memory
    ):
        with pytest.raises(CudaError) as err:
            s.launch(func, grid, block, smem, None, memoryview(params))
        assert err.value.code == CUDA_ERROR_INVALID_VALUE
        assert "vector_add" in err.value.message


def test_cooperative_launch_runs_like_a_launch(rig: Rig) -> None:
    func = rig.func("fill_u32")
    ptr = rig.alloc(64)
    rig.session.launch(
        func,
        (2, 1, 1),
        (8, 1, 1),
        0,
        None,
        memoryview(rig.pack(func, "QIQ", ptr, 5, 16)),
        cooperative=True,
    )
    assert (rig.get(ptr, np.uint32, 16) == 5).all()
    with pytest.raises(CudaError) as err:
        rig.session.launch(
            func, (100000, 1, 1), (1024, 1, 1), 0, None, memoryview(bytes(24)), cooperative=True
        )
    assert err.value.code == 720  # CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE


def test_mangled_names_find_plain_implementations() -> None:
    assert plain_name("_Z10vector_addPKfS0_Pfi") == "vector_add"
    assert plain_name("vector_add") == "vector_add"


def test_multiple_devices_have_separate_contexts(backend: SimBackend) -> None:
    session = backend.open_session()
    arena = AddressArena(*backend.address_space())
    heaps = [DeviceHeap(arena, session.chunk_backing(dev)) for dev in (0, 1)]
    try:
        session.set_device(1)
        ptr = heaps[1].alloc(16)
        session.memcpy_htod(ptr, memoryview(b"0123456789abcdef"), None)
        free1, _ = session.mem_get_info()
        session.set_device(0)
        assert session.mem_get_info()[0] > free1  # device 0 has nothing allocated
        assert session.memcpy_dtoh(ptr, 16, None) == b"0123456789abcdef"  # unified addressing
    finally:
        for heap in heaps:
            heap.release_all()
        session.close()


HOST_KERNEL_PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry test_only_scale(.param .u64 p0, .param .f64 p1, .param .u32 p2) { ret; }
.visible .entry test_only_broken() { ret; }
"""


@sim_kernel("test_only_scale")
def _scale(launch: Launch, args: KernelArgs, mem) -> None:
    n = args.u32(2)
    data = mem.array(args.ptr(0), np.float64, n)
    data *= args.f64(1)


@sim_kernel("test_only_broken")
def _broken(launch: Launch, args: KernelArgs, mem) -> None:
    raise ZeroDivisionError("host kernel bug")


def test_registered_host_kernel_gets_its_parameters(rig: Rig) -> None:
    module = rig.session.module_load(HOST_KERNEL_PTX, {})
    func = rig.session.module_get_function(module, "test_only_scale")
    ptr = rig.put(np.arange(5, dtype=np.float64))
    params = rig.pack(func, "QdI", ptr, 1.5, 5)
    rig.session.launch(func, (1, 1, 1), (5, 1, 1), 0, None, memoryview(params))
    assert list(rig.get(ptr, np.float64, 5)) == [0, 1.5, 3, 4.5, 6]


def test_failing_host_kernel_is_a_sticky_launch_failure(rig: Rig) -> None:
    module = rig.session.module_load(HOST_KERNEL_PTX, {})
    func = rig.session.module_get_function(module, "test_only_broken")
    rig.session.launch(func, (1, 1, 1), (1, 1, 1), 0, None, memoryview(b""))
    with pytest.raises(CudaError) as err:
        rig.session.synchronize()
    assert err.value.code == 719  # CUDA_ERROR_LAUNCH_FAILED
    assert "ZeroDivisionError" in err.value.message
